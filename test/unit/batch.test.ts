// BatchBuilder writes messages in parts into shared memory; the generator source uses it to write each
// point without building its string. The bytes must be exactly what the strings would have been.
import t from 'tap';
import { BatchBuilder } from '../../src/core/batch.js';
import { GeneratorSource, generatePoints } from '../../src/sources/generator.js';

t.test('appendUint writes integers as JSON does; anything else falls back to String()', async (t) => {
  const xs = [0, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 1_581_424_933_080, 99_999_999, 100_000_000, 300_000_007, Number.MAX_SAFE_INTEGER, 1.5, -1, 1e21];
  const b = new BatchBuilder(8);
  for (const x of xs) {
    b.appendUint(x);
    b.end();
  }
  const { data, offsets } = b.take();
  t.ok(data.buffer instanceof SharedArrayBuffer, 'the batch is shared memory, handed over without a copy');
  t.same(xs.map((_, i) => data.toString('utf8', offsets[i], offsets[i + 1])), xs.map(String));
});

t.test('append in parts, push and pushString make the same messages', async (t) => {
  const b = new BatchBuilder(4);
  b.append(Buffer.from('{"a":'));
  b.appendUint(12);
  b.append(Buffer.from('xx}yy'), 2, 3);
  b.end();
  b.pushString('{"é":1}');
  b.push(Buffer.from('[1,2,3]'), 1, 6);
  const { data, offsets } = b.take();
  t.same([0, 1, 2].map((i) => data.toString('utf8', offsets[i], offsets[i + 1])), ['{"a":12}', '{"é":1}', '1,2,3']);
  t.equal(b.count, 0, 'take() starts a new batch');
});

t.test('the generator source writes exactly the bytes of generatePoints, batch by batch', async (t) => {
  const cfg = { count: 20_000, metrics: 700, hosts: 3, intervalMs: 10_000, startMs: 1_581_424_933_000, seed: 3, rate: 0 };
  const want = [...generatePoints(cfg)].map((p) => p.json);
  const got: string[] = [];
  for await (const batch of new GeneratorSource(cfg, 1500, 1 << 20).batches()) {
    for (let i = 0; i + 1 < batch.offsets.length; i++) got.push(batch.data.toString('utf8', batch.offsets[i], batch.offsets[i + 1]));
  }
  t.equal(got.length, want.length);
  t.ok(got.every((g, i) => g === want[i]), 'every message equal');
});

t.test('long parts (copied natively) and Latin-1 strings, across growth of the buffer', async (t) => {
  const b = new BatchBuilder(8);
  const long = Buffer.from(`[${'x'.repeat(300)}]`);
  const want: string[] = [];
  for (let i = 0; i < 50; i++) {
    b.appendLatin1('{"k":"');
    b.append(long, 1, 1 + (i * 7) % 300);
    b.appendLatin1('"}');
    b.end();
    want.push(`{"k":"${'x'.repeat((i * 7) % 300)}"}`);
  }
  const { data, offsets } = b.take();
  t.same(want.map((_, i) => data.toString('latin1', offsets[i], offsets[i + 1])), want);
});
