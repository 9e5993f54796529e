// A kafkajs fetch cut into pool batches, from plain message objects (the Batch fields it reads).
import t from 'tap';
import type { KafkaMessage } from 'kafkajs';
import { messageBytes, messageCount } from '../../src/core/batch.js';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE } from '../../src/kafka/codecs.js';
import { cutFetch } from '../../src/sources/kafka/fetch.js';

function msg(offset: number, value: Buffer | null, extra: Partial<KafkaMessage> & { attributes?: number } = {}): KafkaMessage {
  return { offset: String(offset), key: Buffer.from(`k${offset}`), value, timestamp: String(1000 + offset), attributes: 0, headers: {}, ...extra } as KafkaMessage;
}

const fetched = (msgs: KafkaMessage[], last = Number(msgs.at(-1)!.offset)) => ({ messages: msgs, lastOffset: () => String(last) });

t.test('cuts at batchSize; positions, keys, timestamps and the position after each batch travel with it', async (t) => {
  const msgs = [10, 11, 12, 14, 15].map((o) => msg(o, Buffer.from(`v${o}`)));
  const out = cutFetch(3, fetched(msgs, 16), { batchSize: 2, batchMaxBytes: 1 << 20 });
  t.same(out.map((b) => b.positions), [['10', '11'], ['12', '14'], ['15']]);
  t.same(out.map((b) => [b.startPosition, b.endPosition]), [[10, 12], [12, 15], [15, 17]], 'a gap (13) is covered; the last ends after lastOffset');
  t.same(out.map((b) => b.partition), [3, 3, 3]);
  t.same(out[1]!.keys?.map(String), ['k12', 'k14']);
  t.same([out[1]!.firstTimestampMs, out[1]!.lastTimestampMs], [1012, 1014]);
  t.same(out.flatMap((b) => Array.from({ length: messageCount(b) }, (_, i) => messageBytes(b, i).toString())), msgs.map((m) => m.value!.toString()));
});

t.test('cuts at batchMaxBytes too', async (t) => {
  const msgs = [0, 1, 2, 3].map((o) => msg(o, Buffer.alloc(300, 65)));
  const out = cutFetch(0, fetched(msgs), { batchSize: 100, batchMaxBytes: 600 });
  t.same(out.map((b) => b.positions?.length), [2, 2]);
});

t.test('long values are cut to maxMessageBytes + 1 and marked; tombstones become empty; refused stand-ins carry their reason', async (t) => {
  const msgs = [
    msg(0, Buffer.alloc(50, 66)),
    msg(1, null),
    msg(2, Buffer.alloc(0), { attributes: REFUSED_RECORD_ATTRIBUTE, headers: { [REFUSED_HEADER]: Buffer.from('zstd frame over 1 MiB') } }),
    msg(3, Buffer.from('ok')),
  ];
  const [b] = cutFetch(0, fetched(msgs), { batchSize: 100, batchMaxBytes: 1 << 20, maxMessageBytes: 10 });
  t.equal(messageBytes(b!, 0).length, 11, 'enough to reject it as too_large');
  t.same(b!.oversized?.get(0), { bytes: 50 });
  t.equal(messageBytes(b!, 1).length, 0, 'a tombstone is an empty message (dead-lettered, not dropped)');
  t.same(b!.oversized?.get(2), { bytes: -1, detail: 'zstd frame over 1 MiB' });
  t.equal(messageBytes(b!, 3).toString(), 'ok');
  t.notOk(b!.oversized?.has(3));
  t.same(cutFetch(0, { messages: [], lastOffset: () => '0' }, { batchSize: 1, batchMaxBytes: 1 }), []);
});
