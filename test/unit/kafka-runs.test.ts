// Record runs (src/sources/kafka/records.ts decodeRun, batch.ts, fetch.ts): a fetched record set as
// columns instead of a message object a record. Everything must read as the record-by-record path
// reads it: the records (made from the run), kafkajs's Batch over them, and the pool batches cut from
// them (copies of their own, each stretch of values one copy).
import t from 'tap';
import { createRequire } from 'node:module';
import type { KafkaMessage } from 'kafkajs';
import { messageCount } from '../../src/core/batch.js';
import { FastBatch } from '../../src/sources/kafka/batch.js';
import { cutFetch, MAX_RUN_GAP } from '../../src/sources/kafka/fetch.js';
import { FastRecord } from '../../src/sources/kafka/fast-record.js';
import { decodeMessages, decodeRun } from '../../src/sources/kafka/records.js';
import { runOf, runsFor, useRuns, type RecordRun } from '../../src/sources/kafka/runs.js';
import { framePoolCounts, sharedFrame } from '../../src/kafka/frame-pool.js';
import { batchView } from '../fixtures/batch-view.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const { Types } = require(`${KJS}message/compression/index.js`) as { Types: { GZIP: number } };
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };
type B = Record<string, unknown> & Record<'isEmpty' | 'isEmptyIncludingFiltered' | 'isEmptyDueToFiltering' | 'isEmptyControlRecord' | 'isEmptyDueToLogCompactedMessages' | 'firstOffset' | 'lastOffset' | 'offsetLag' | 'offsetLagLow', () => unknown>;
type BatchClass = new (topic: string, fetched: string, p: object) => B;
const Batch = require('kafkajs/src/consumer/batch.js') as BatchClass;
const Fast = FastBatch as unknown as BatchClass;

interface Rec {
  offsetDelta: number;
  timestampDelta?: number;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, string>;
}

async function batchOf(first: number, recs: Rec[], o: { compression?: number; firstTimestamp?: number; logAppend?: boolean } = {}): Promise<Buffer> {
  const ts = o.firstTimestamp ?? 1_700_000_000_000;
  const b = (await RecordBatch({ firstOffset: Long.fromValue(first), firstTimestamp: ts, maxTimestamp: ts + 99, lastOffsetDelta: recs.at(-1)?.offsetDelta ?? 0, compression: o.compression ?? 0, records: recs.map((r) => Record(r)) })).buffer;
  if (o.logAppend === true) b.writeInt16BE(b.readInt16BE(21) | 0x08, 21);
  return b;
}

/** A record set's bytes (what decodeRun reads) and the fetch field (int32 size first) decodeMessages reads. */
function sets(batches: Buffer[], shared = false): { body: Buffer; field: Buffer } {
  const joined = Buffer.concat([Buffer.alloc(4), ...batches]);
  joined.writeInt32BE(joined.length - 4, 0);
  const field = shared ? Buffer.from(new SharedArrayBuffer(joined.length)) : Buffer.alloc(joined.length);
  joined.copy(field);
  return { body: field.subarray(4), field };
}

const recs = (n: number, from = 0, valueBytes = 0): Rec[] =>
  Array.from({ length: n }, (_, i) => ({
    offsetDelta: i,
    timestampDelta: (i * 37) % 1000,
    key: i % 3 === 0 ? null : Buffer.from(`k${i + from}`),
    value: i % 7 === 6 ? null : Buffer.from(`{"v":${i + from}}`.padEnd(valueBytes, ' ')),
  }));

const FIELDS = ['magicByte', 'attributes', 'timestamp', 'offset', 'key', 'value', 'headers', 'isControlRecord', 'batchContext'] as const;
const plain = (ms: readonly unknown[]) =>
  (ms as Array<Record<string, unknown>>).map((m) => {
    const out: Record<string, unknown> = {};
    for (const f of FIELDS) out[f] = m[f];
    return { ...out, key: m.key === null ? null : (m.key as Buffer).toString('hex'), value: m.value === null ? null : (m.value as Buffer).toString('hex') };
  });

t.test('a run\'s records read as the record-by-record decoder\'s, field for field', async (t) => {
  const cases: Array<[string, Buffer[]]> = [
    ['three batches, keys and tombstones', [await batchOf(0, recs(50)), await batchOf(50, recs(30, 50)), await batchOf(2 ** 50, recs(10), { firstTimestamp: 5 })]],
    ['LOG_APPEND_TIME', [await batchOf(7, recs(4), { logAppend: true })]],
    ['negative, large and multi-byte timestamp deltas; empty keys and values', [await batchOf(123, [-1, 0, 127, 128, 2 ** 20, 2 ** 40, -(2 ** 33)].map((d, i) => ({ offsetDelta: i * 1000, timestampDelta: d, key: Buffer.alloc(0), value: Buffer.alloc(0) })))]],
  ];
  for (const [name, batches] of cases) {
    const { body, field } = sets(batches);
    const run = decodeRun(body);
    if (run === null) throw new Error(`${name}: no run`);
    const ref = await decodeMessages(new Decoder(field) as never);
    t.ok(ref.every((m) => m instanceof FastRecord), `${name}: the reference is the fast decoder's`);
    t.equal(run.count, ref.length, `${name}: every record`);
    t.same(plain(run.materialize()), plain(ref), name);
    t.same(Array.from({ length: run.count }, (_, i) => run.timestampMs(i)), ref.map((m) => Number(m.timestamp)), `${name}: timestampMs`);
    t.equal(runOf(run.messages), run, 'its messages name it');
    t.equal(run.messages.length, run.count);
    t.equal(Object.keys(run.messages).length, Math.min(2, run.count), 'only the first and last messages are objects');
  }
});

t.test('no run where a record or batch is not a plain one: the set is read record by record', async (t) => {
  const plainBatch = await batchOf(0, recs(5));
  const attributes = Buffer.from(plainBatch);
  attributes[61 + 1] = 4; // the first record's attributes byte: after the batch header (61 bytes) and its length varint (1)
  const cases: Array<[string, Buffer[]]> = [
    ['a gzip batch after a plain one', [plainBatch, await batchOf(5, recs(5), { compression: Types.GZIP })]],
    ['a record with headers', [await batchOf(0, [{ offsetDelta: 0, key: null, value: Buffer.from('a'), headers: { h: 'x' } }])]],
    ['record attributes other than 0', [attributes]],
  ];
  for (const [name, batches] of cases) t.equal(decodeRun(sets(batches).body), null, name);
  // A batch cut short at the end of the set (a fetch's maxBytes) is left out, as by kafkajs.
  const whole = Buffer.concat([plainBatch, await batchOf(5, recs(5))]);
  const run = decodeRun(whole.subarray(0, whole.length - 10));
  t.equal(run?.count, 5, 'the whole first batch, none of the cut one');
});

const offsetsOf = (ms: unknown) => (ms as Array<{ offset: string } | undefined>).filter((m) => m !== undefined).map((m) => m.offset);
function read(b: B) {
  const ms = b.messages as unknown[];
  return {
    methods: [b.isEmpty(), b.isEmptyIncludingFiltered(), b.isEmptyDueToFiltering(), b.isEmptyControlRecord(), b.isEmptyDueToLogCompactedMessages(), b.firstOffset(), b.lastOffset(), b.offsetLag(), b.offsetLagLow()],
    length: ms.length,
    ends: ms.length === 0 ? [] : [(ms[0] as { offset: string }).offset, (ms[ms.length - 1] as { offset: string }).offset],
    fields: [b.fetchedOffset, b.topic, b.partition, b.highWatermark],
    isBatch: b instanceof Batch,
  };
}

t.test('a batch of a run reads as kafkajs\'s Batch over the same records, for the topics of useRuns only', async (t) => {
  const { body } = sets([await batchOf(100, recs(20)), await batchOf(120, recs(5))]);
  const run = decodeRun(body)!;
  const all = run.materialize();
  const release = useRuns(['runs']);
  t.teardown(release);
  t.ok(runsFor('runs'));
  for (const fetched of ['90', '100', '107', '124', '125', '500']) {
    const b = new Fast('runs', fetched, { partition: 3, highWatermark: '130', abortedTransactions: [], messages: run.messages });
    t.same(read(b), read(new Batch('runs', fetched, { partition: 3, highWatermark: '130', abortedTransactions: [], messages: all })), `fetched offset ${fetched}`);
    t.equal(b.run, run, 'the batch carries the run');
    t.equal(b.runFrom, Math.max(0, Math.min(25, Number(fetched) - 100)), 'from the first record at or after the fetched offset');
  }
  // Another topic, and aborted transactions to filter: every record as an object, as before runs.
  for (const [topic, aborted] of [['other', []], ['runs', [{ producerId: '7', firstOffset: '3' }]]] as const) {
    const b = new Fast(topic, '100', { partition: 0, highWatermark: '130', abortedTransactions: aborted, messages: run.messages });
    t.equal(b.run, undefined, `${topic}, ${aborted.length} aborted: no run`);
    t.same(offsetsOf(b.messages), Array.from({ length: 25 }, (_, i) => String(100 + i)), 'every record, iterable');
    t.ok((b.messages as unknown[]).every((m) => m instanceof FastRecord));
  }
  release();
  release();
  t.notOk(runsFor('runs'), 'released once, however often called');
});

const view = batchView;

/** The Batch of `run` from `fetched` on (runs on), and the same records as FastRecords (the reference). */
function both(run: RecordRun, fetched: number): { runBatch: { messages: KafkaMessage[]; lastOffset(): string; run?: RecordRun; runFrom?: number }; ref: { messages: KafkaMessage[]; lastOffset(): string } } {
  const release = useRuns(['cut']);
  const b = new Fast('cut', String(fetched), { partition: 0, highWatermark: '100000', abortedTransactions: [], messages: run.messages });
  release();
  const ms = run.materialize().filter((m) => Number(m.offset) >= fetched) as unknown as KafkaMessage[];
  return { runBatch: b as never, ref: { messages: ms, lastOffset: () => ms.at(-1)!.offset } };
}

t.test('pool batches cut from a run equal those cut from its records, in shared memory of their own', async (t) => {
  // Values of 300 bytes with gaps (framing, keys) between them; a 2 KiB key makes one gap over MAX_RUN_GAP.
  const rs = recs(40, 0, 300);
  rs[20]!.key = Buffer.alloc(MAX_RUN_GAP * 4, 75);
  const batches = [await batchOf(1000, rs.slice(0, 25)), await batchOf(1025, rs.slice(25).map((r, i) => ({ ...r, offsetDelta: i + 3 })))];
  const opts = [
    { batchSize: 7, batchMaxBytes: 1 << 20 },
    { batchSize: 100, batchMaxBytes: 2000 },
    { batchSize: 100, batchMaxBytes: 1 << 20, maxMessageBytes: 100 },
    { batchSize: 1000, batchMaxBytes: 1 << 20 },
  ];
  for (const shared of [false, true]) {
    const { body } = sets(batches, shared);
    const run = decodeRun(body)!;
    for (const from of [1000, 1003, 1030]) {
      for (const o of opts) {
        const { runBatch, ref } = both(run, from);
        t.equal(runBatch.run, run);
        const out = cutFetch(1, runBatch, o);
        const name = `${shared ? 'shared' : 'own'} set, from ${from}, ${JSON.stringify(o)}`;
        t.same(view(out), view(cutFetch(1, ref, o)), name);
        for (const b of out) {
          t.ok(b.data.buffer instanceof SharedArrayBuffer && b.data.buffer !== body.buffer && b.data.byteOffset === 0, `${name}: a copy of its own in shared memory, not a view of the response`);
          t.ok(b.ends !== undefined && b.offsets[messageCount(b)] === b.ends[messageCount(b) - 1], `${name}: ends, the last at the end of the batch`);
        }
      }
    }
  }
});

t.test('a copied batch copies each stretch of values with gaps under MAX_RUN_GAP in one piece', async (t) => {
  const rs = recs(10, 0, 50);
  rs[5]!.key = Buffer.alloc(MAX_RUN_GAP + 1, 75);
  const { body } = sets([await batchOf(0, rs)]);
  const { runBatch } = both(decodeRun(body)!, 0);
  const [b] = cutFetch(0, runBatch, { batchSize: 100, batchMaxBytes: 1 << 20 });
  const gaps = Array.from({ length: 9 }, (_, i) => b!.offsets[i + 1]! - b!.ends![i]!);
  t.equal(gaps[4], 0, 'the record after the long key starts a copy of its own: nothing between');
  t.ok(gaps.filter((_, i) => i !== 4).every((g) => g > 0 && g <= MAX_RUN_GAP), 'the rest keep their framing between them');
});

t.test('a run in a response of the frame pool is cut into views of it, which hold it until the last is released', async (t) => {
  // Null values and keys (recs), one value over maxMessageBytes, two record batches.
  const rs = recs(40, 0, 300);
  rs[10]!.value = Buffer.alloc(500, 77);
  const batches = [await batchOf(1000, rs.slice(0, 25)), await batchOf(1025, rs.slice(25).map((r, i) => ({ ...r, offsetDelta: i + 3 })))];
  const { body: plain } = sets(batches);
  const o = { batchSize: 7, batchMaxBytes: 1 << 20, maxMessageBytes: 400 };
  const want = view(cutFetch(1, both(decodeRun(plain)!, 1003).ref, o));
  // The same record set in a response read into the pool, after the response's other fields.
  const frame = sharedFrame(plain.length + 100);
  plain.copy(frame, 100);
  const run = decodeRun(frame.subarray(100, 100 + plain.length))!;
  t.ok(run.hold !== null, 'the run holds the response');
  const out = cutFetch(1, both(run, 1003).runBatch, o);
  const alike = (bs: ReturnType<typeof view>) => bs.map(({ shared: _, ...v }) => v);
  t.same(alike(view(out)), alike(want), 'the same messages, positions, keys, bounds and cuts as copies of the records');
  t.ok(want.length > 3 && out.every((b) => b.data.buffer === frame.buffer && b.release !== undefined), 'every batch a view of the response, with a release');
  t.equal(run.hold, null, 'cut: the run let go of the response');
  const returned = framePoolCounts.returned;
  for (const b of out.slice(0, -1)) {
    b.release!();
    b.release!();
  }
  t.equal(framePoolCounts.returned, returned, 'held while one batch is out (a second release of a batch does not count)');
  out.at(-1)!.release!();
  t.equal(framePoolCounts.returned, returned + 1, 'given back with the last');
  const reused = framePoolCounts.reused;
  const next = sharedFrame(plain.length + 50);
  t.equal(next.buffer, frame.buffer, 'the next response of about that size is read into it');
  t.equal(framePoolCounts.reused, reused + 1);
});

t.test('a response a run holds is not handed out again before the run is cut', async (t) => {
  const { body: plain } = sets([await batchOf(0, recs(10, 0, 100))]);
  const frame = sharedFrame(plain.length);
  plain.copy(frame);
  const run = decodeRun(frame)!;
  // Another run of the same response (a second partition's), cut and its batches released first.
  const other = decodeRun(frame)!;
  for (const b of cutFetch(0, both(other, 0).runBatch, { batchSize: 100, batchMaxBytes: 1 << 20 })) b.release!();
  t.not(sharedFrame(plain.length).buffer, frame.buffer, 'still held by the uncut run: a fresh buffer');
  const [b] = cutFetch(0, both(run, 0).runBatch, { batchSize: 100, batchMaxBytes: 1 << 20 });
  t.equal(b!.data.buffer, frame.buffer);
  t.same(batchView([b!])[0]!.values, batchView(cutFetch(0, both(decodeRun(plain)!, 0).ref, { batchSize: 100, batchMaxBytes: 1 << 20 }))[0]!.values, 'its bytes intact');
  b!.release!();
  t.equal(sharedFrame(plain.length).buffer, frame.buffer, 'given back once the last run was cut and its batch released');
});
