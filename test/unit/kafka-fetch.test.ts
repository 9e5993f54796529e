// A kafkajs fetch cut into pool batches, from plain message objects (the Batch fields it reads).
import t from 'tap';
import { createRequire } from 'node:module';
import type { KafkaMessage } from 'kafkajs';
import { keyOf, messageBytes, messageCount } from '../../src/core/batch.js';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE } from '../../src/kafka/codecs.js';
import { cutFetch } from '../../src/sources/kafka/fetch.js';
import { FastRecord } from '../../src/sources/kafka/fast-record.js';
import { decodeMessages } from '../../src/sources/kafka/records.js';
import { BufferRecycler } from '../../src/sources/recycle.js';
import type { SourceBatch } from '../../src/sources/types.js';
import { batchView } from '../fixtures/batch-view.js';

function msg(offset: number, value: Buffer | null, extra: Partial<KafkaMessage> & { attributes?: number } = {}): KafkaMessage {
  return { offset: String(offset), key: Buffer.from(`k${offset}`), value, timestamp: String(1000 + offset), attributes: 0, headers: {}, ...extra } as KafkaMessage;
}

const fetched = (msgs: KafkaMessage[], last = Number(msgs.at(-1)!.offset)) => ({ messages: msgs, lastOffset: () => String(last) });

t.test('cuts at batchSize; positions, keys, timestamps and the position after each batch travel with it', async (t) => {
  const msgs = [10, 11, 12, 14, 15].map((o) => msg(o, Buffer.from(`v${o}`)));
  const out = cutFetch(3, fetched(msgs, 16), { batchSize: 2, batchMaxBytes: 1 << 20 });
  t.same(out.map((b) => b.positions), [['10', '11'], ['12', '14'], ['15']]);
  t.same(out.map((b) => [b.startPosition, b.endPosition]), [[10, 12], [12, 15], [15, 17]], 'a gap (13) is covered; the last ends after lastOffset');
  t.same(out.map((b) => b.lane), [3, 3, 3]);
  t.same([0, 1].map((i) => String(keyOf(out[1]!.keys, i))), ['k12', 'k14']);
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

// Records of the fast decoder (src/sources/kafka/records.ts) carry no value view: cutFetch copies their
// values from the fetch's bytes. The same record set cut from them and from kafkajs's own messages.
const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const kafkajsDecode = require(`${KJS}requests/fetch/v4/decodeMessages.js`) as (d: unknown) => Promise<KafkaMessage[]>;
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };

async function recordSet(first: number, values: Array<Buffer | null>): Promise<Buffer> {
  const records = values.map((value, i) => Record({ offsetDelta: i, timestampDelta: i * 7, key: i % 4 === 1 ? null : Buffer.from(`key-${i}`), value }));
  const { buffer } = await RecordBatch({ firstOffset: Long.fromValue(first), firstTimestamp: 1_700_000_000_000, maxTimestamp: 1_700_000_000_000, lastOffsetDelta: values.length - 1, records });
  const head = Buffer.alloc(4);
  head.writeInt32BE(buffer.length);
  return Buffer.concat([head, buffer]);
}

const view = batchView;

t.test('fast-path records cut as kafkajs\'s messages do (values, cuts, oversized, tombstones)', async (t) => {
  const values = [Buffer.from('{"a":1}'), null, Buffer.alloc(0), Buffer.alloc(40, 67), Buffer.from('x'), Buffer.alloc(300, 68), Buffer.from('{"z":2}')];
  const set = await recordSet(500, values);
  const fast = await decodeMessages(new Decoder(set) as never);
  t.ok(fast.every((m) => m instanceof FastRecord), 'the decoder took its fast path');
  const ref = await kafkajsDecode(new Decoder(set));
  for (const o of [{ batchSize: 3, batchMaxBytes: 1 << 20 }, { batchSize: 100, batchMaxBytes: 45, maxMessageBytes: 30 }, { batchSize: 100, batchMaxBytes: 1 << 20 }]) {
    const a = view(cutFetch(2, fetched(fast as unknown as KafkaMessage[], 506), o));
    t.same(a, view(cutFetch(2, fetched(ref, 506), o)), JSON.stringify(o));
    t.ok(a.every((b) => b.shared), 'every batch is in a shared buffer of its own');
  }
});

t.test('an uncompressed record that looks like a refused stand-in is treated as one on either path', async (t) => {
  const set = await recordSet(0, [Buffer.from('ok'), Buffer.alloc(0)]);
  // The second record's attributes byte (unused in v2 records; kafkajs checks no CRC) set to the
  // stand-ins' value: the record set's size (4), the batch header (61), record 0's length varint and body.
  const second = 4 + 61 + 1 + (set[4 + 61]! >> 1);
  set[second + 1] = REFUSED_RECORD_ATTRIBUTE;
  const fast = await decodeMessages(new Decoder(set) as never);
  t.ok(fast[1] instanceof FastRecord);
  t.equal((fast[1] as unknown as { attributes: number }).attributes, REFUSED_RECORD_ATTRIBUTE);
  const ref = await kafkajsDecode(new Decoder(set));
  const o = { batchSize: 10, batchMaxBytes: 1 << 20 };
  const a = cutFetch(0, fetched(fast as unknown as KafkaMessage[], 1), o);
  t.same(view(a), view(cutFetch(0, fetched(ref, 1), o)));
  t.same(a[0]!.oversized?.get(1), { bytes: -1, detail: 'compressed record batch over the decompression bound: refused' });
});

t.test('with a recycler, a batch given back (release) lends its buffer to a later fetch\'s batch', async (t) => {
  const recycler = new BufferRecycler();
  const o = { batchSize: 1000, batchMaxBytes: 1 << 20, recycler };
  const set = await recordSet(0, Array.from({ length: 50 }, (_, i) => Buffer.from(`{"value":${i}}`.padEnd(200, ' '))));
  const first = cutFetch(0, fetched((await decodeMessages(new Decoder(set) as never)) as unknown as KafkaMessage[], 49), o);
  const bytes = first[0]!.data.buffer;
  t.equal(recycler.allocated, 1);
  first[0]!.release!();
  first[0]!.release!();
  t.equal(recycler.free, 1, 'a second release of the same batch does not count');
  const second = cutFetch(0, fetched((await decodeMessages(new Decoder(set) as never)) as unknown as KafkaMessage[], 49), o);
  t.equal(second[0]!.data.buffer, bytes, 'the same shared buffer');
  t.equal(recycler.reused, 1);
  t.same(view(second), view(cutFetch(0, fetched(await kafkajsDecode(new Decoder(set)), 49), { batchSize: 1000, batchMaxBytes: 1 << 20 })), 'and the same batch as one in a fresh buffer');
});
