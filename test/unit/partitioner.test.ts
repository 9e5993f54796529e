import { createRequire } from 'node:module';
import t from 'tap';
import { murmur2, murmur2View, partitionForKey, JavaCompatiblePartitioner } from '../../src/kafka/partitioner.js';
import { Rng } from '../fixtures/gen.js';

// kafkajs's own murmur2 (Java-compatible, but on 64-bit Long emulation) is the reference for random keys.
const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2.js') as (k: Buffer | string) => number;

t.test('murmur2 equals Kafka\'s Utils.murmur2 on the Java client\'s test vectors', async (t) => {
  // From org.apache.kafka.common.utils.UtilsTest#testMurmur2.
  const vectors: Array<[string, number]> = [
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ];
  for (const [s, h] of vectors) t.equal(murmur2(Buffer.from(s)), h, s);
});

t.test('murmur2 and the partition agree with kafkajs on random keys of every length mod 4, bytes >= 0x80 included', async (t) => {
  const rng = new Rng(7);
  let mismatches = 0;
  for (let i = 0; i < 3000; i++) {
    const len = rng.int(0, 300);
    const key = Buffer.alloc(len);
    for (let j = 0; j < len; j++) key[j] = rng.int(0, 255);
    if (murmur2(key) !== kafkajsMurmur2(key)) mismatches++;
    const parts = rng.int(1, 64);
    if (partitionForKey(key, parts) !== (kafkajsMurmur2(key) & 0x7fffffff) % parts) mismatches++;
  }
  t.equal(mismatches, 0);
  t.equal(partitionForKey('aé', 7), partitionForKey(Buffer.from('aé', 'utf8'), 7), 'string keys hash as UTF-8');
});

t.test('murmur2 of a key inside a larger buffer, at every alignment, equals murmur2 of the key alone (views of a pooled buffer included)', async (t) => {
  const rng = new Rng(11);
  const backing = Buffer.alloc(8192);
  for (let j = 0; j < backing.length; j++) backing[j] = rng.int(0, 255);
  // A view that does not start at its ArrayBuffer's start, as Buffer.allocUnsafe's pooled slices.
  const buf = backing.subarray(3, 8000);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let mismatches = 0;
  for (let i = 0; i < 2000; i++) {
    const start = rng.int(0, 7000);
    const end = start + rng.int(0, 500);
    const alone = Buffer.from(buf.subarray(start, end));
    const h = kafkajsMurmur2(alone);
    if (murmur2(buf, start, end) !== h || murmur2View(view, start, end) !== h || murmur2(alone) !== h) mismatches++;
  }
  t.equal(mismatches, 0);
});

t.test('the kafkajs partitioner: explicit partition wins, keys hash over all partitions, no key spreads', async (t) => {
  const part = JavaCompatiblePartitioner();
  const partitionMetadata = [0, 1, 2, 3].map((p) => ({ partitionId: p, leader: p === 2 ? -1 : 0, partitionErrorCode: 0 }));
  const args = (message: { key?: string | null; partition?: number; value: string }) =>
    ({ topic: 'x', partitionMetadata, message }) as unknown as Parameters<ReturnType<typeof JavaCompatiblePartitioner>>[0];
  t.equal(part(args({ partition: 3, key: 'k', value: 'v' })), 3);
  for (const key of ['a', 'series-1', 'x'.repeat(1000)]) t.equal(part(args({ key, value: 'v' })), partitionForKey(key, 4), key);
  const seen = new Set<number>();
  for (let i = 0; i < 8; i++) seen.add(part(args({ key: null, value: 'v' })));
  t.ok(seen.size > 1, 'unkeyed messages are spread');
});
