// Our produce request (src/kafka/produce-request.ts) without a broker: a request laid out ahead
// (layoutRequest) is encoded where its records were written, and its bytes are those of the copying
// encoder; kafkajs's record-batch decoder reads every partition back; an encoding again (kafkajs
// retrying) leaves the first request's bytes as they were; buffers go back to their pool once.
import { createRequire } from 'node:module';
import t from 'tap';
import { createRequest, layoutRequest, producePaths, produceRequestV3, releasePrepared, type PreparedBatch } from '../../src/kafka/produce-request.js';
import { rangeRecordBytes, RecordBatchWriter } from '../../src/kafka/record-batch.js';
import { Rng } from '../fixtures/gen.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const decodeBatch = require(`${KJS}recordBatch/v0/decoder.js`) as (d: unknown) => Promise<{ records: Array<{ key: Buffer | null; value: Buffer | null; offset: string }>; producerId: string; firstSequence: number; inTransaction: boolean }>;

const NOW = 1_700_000_000_000;

interface Rec {
  readonly partition: number;
  readonly key: Buffer;
  readonly value: Buffer;
}

/** Records over a few partitions, keys and values of every size class (empty, short, long, non-ASCII). */
function records(seed: number, n: number): Rec[] {
  const rng = new Rng(seed);
  const parts = [0, 2, 5];
  return Array.from({ length: n }, (_, i) => ({
    partition: parts[rng.int(0, parts.length - 1)]!,
    key: Buffer.from(`["k",${i},"${'é'.repeat(rng.int(0, 3))}${'x'.repeat(rng.int(0, 300))}"]`),
    value: Buffer.from(i % 17 === 0 ? '' : `{"v":${i},"s":"${'y'.repeat(rng.int(0, 3000))}"}`),
  }));
}

/** The records as one laid-out request (the Kafka sink's path), partitions ascending. */
function laidOut(recs: readonly Rec[]): PreparedBatch[] {
  const parts = [...new Set(recs.map((r) => r.partition))].sort((a, b) => a - b);
  const bytes = parts.map(() => 0);
  const counts = parts.map(() => 0);
  for (const r of recs) {
    const j = parts.indexOf(r.partition);
    bytes[j]! += rangeRecordBytes(r.key.length, r.value.length, counts[j]!++);
  }
  const batches = layoutRequest(parts, bytes);
  for (const r of recs) batches[parts.indexOf(r.partition)]!.writer.appendRange(r.key, 0, r.key.length, r.value, 0, r.value.length);
  return batches;
}

function args(batches: readonly PreparedBatch[], transactionalId: string | null) {
  return {
    acks: -1,
    timeout: 30_000,
    transactionalId,
    producerId: 4711,
    producerEpoch: 3,
    compression: 0,
    topicData: [{ topic: 'stats-out', partitions: batches.map((b, j) => ({ partition: b.partition, firstSequence: 10 * j, messages: b })) }],
  };
}

/** The request body parsed: its fields, and each partition's batch as kafkajs decodes it. */
async function parse(body: Buffer) {
  let o = 0;
  const str = (): string | null => {
    const n = body.readInt16BE(o);
    o += 2;
    if (n < 0) return null;
    o += n;
    return body.toString('utf8', o - n, o);
  };
  const tid = str();
  const acks = body.readInt16BE(o);
  const timeout = body.readInt32BE(o + 2);
  o += 6;
  const topics = body.readInt32BE(o);
  o += 4;
  const topic = str();
  const n = body.readInt32BE(o);
  o += 4;
  const partitions = [];
  for (let j = 0; j < n; j++) {
    const partition = body.readInt32BE(o);
    const size = body.readInt32BE(o + 4);
    o += 8;
    const d = await decodeBatch(new Decoder(body.subarray(o, o + size)));
    o += size;
    partitions.push({ partition, producerId: d.producerId, firstSequence: d.firstSequence, inTransaction: d.inTransaction, records: d.records.map((r) => [r.key?.toString() ?? null, r.value?.toString() ?? null, r.offset]) });
  }
  return { tid, acks, timeout, topics, topic, partitions, rest: body.length - o };
}

function expected(recs: readonly Rec[]) {
  const parts = [...new Set(recs.map((r) => r.partition))].sort((a, b) => a - b);
  return parts.map((p, j) => ({
    partition: p,
    producerId: '4711',
    firstSequence: 10 * j,
    inTransaction: true,
    records: recs.filter((r) => r.partition === p).map((r, i) => [r.key.toString(), r.value.toString(), String(i)]),
  }));
}

t.test('a laid-out request is encoded in place: the copying encoder\'s bytes, every partition read back by kafkajs', async (t) => {
  const real = Date.now;
  Date.now = () => NOW;
  t.teardown(() => void (Date.now = real));
  const recs = records(1, 300);
  const before = producePaths.inPlace;
  const inPlace = await produceRequestV3(args(laidOut(recs), 'group.in.0')).encode();
  t.equal(producePaths.inPlace - before, 3, 'three partitions sealed where they lie');
  // The same records, laid out as before, but the layout marked as encoded once: the copy path.
  const copied = laidOut(recs);
  copied[0]!.layout!.encoded = true;
  const copy = await produceRequestV3(args(copied, 'group.in.0')).encode();
  t.equal(producePaths.inPlace - before, 3, 'the second request was copied');
  t.ok(inPlace.buffer.equals(copy.buffer), 'byte for byte the copying encoder\'s request');
  const got = await parse(inPlace.buffer);
  t.same(got, { tid: 'group.in.0', acks: -1, timeout: 30_000, topics: 1, topic: 'stats-out', partitions: expected(recs), rest: 0 });
  // Framed in the headroom before the body: no copy of the request for its frame either.
  const framed = await createRequest({ correlationId: 99, clientId: 'streamstats', request: { apiKey: 0, apiVersion: 3, encode: async () => inPlace } });
  t.equal(framed.buffer.buffer, inPlace.buffer.buffer, 'the frame is written into the same memory');
  t.equal(framed.buffer.readInt32BE(0), framed.buffer.length - 4);
  t.same([framed.buffer.readInt16BE(4), framed.buffer.readInt16BE(6), framed.buffer.readInt32BE(8), framed.buffer.toString('utf8', 14, 14 + framed.buffer.readInt16BE(12))], [0, 3, 99, 'streamstats']);
  t.ok(framed.buffer.subarray(14 + 11).equals(copy.buffer), 'the body follows the frame');
  const plain = await parse((await produceRequestV3(args(laidOut(recs), null)).encode()).buffer);
  t.same([plain.tid, plain.partitions.map((p) => p.inTransaction)], [null, [false, false, false]], 'without a transactional id');
});

t.test('encoding again (kafkajs retrying) copies the batches out and leaves the first request\'s bytes alone', async (t) => {
  const real = Date.now;
  Date.now = () => NOW;
  t.teardown(() => void (Date.now = real));
  const recs = records(2, 120);
  const batches = laidOut(recs);
  const request = produceRequestV3(args(batches, 'group.in.1'));
  const first = await request.encode();
  const snapshot = Buffer.from(first.buffer);
  Date.now = () => NOW + 5;
  const again = await request.encode();
  t.ok(first.buffer.equals(snapshot), 'the first request\'s memory is unchanged');
  t.not(again.buffer.buffer, first.buffer.buffer, 'the retry is a request buffer of its own');
  t.same((await parse(again.buffer)).partitions, expected(recs), 'and carries the same records');
  t.ok(batches.every((b) => !b.writer.isAt(b.layout!.buf, b.entry + 8)), 'every batch moved out of the layout');
  releasePrepared(batches);
  t.equal(batches[0]!.layout!.released, true);
  t.equal(batches[0]!.request, null);
});

t.test('a writer whose region is short moves to a buffer of its own, and its request is copied', async (t) => {
  const real = Date.now;
  Date.now = () => NOW;
  t.teardown(() => void (Date.now = real));
  const recs = records(3, 40).map((r) => ({ ...r, partition: 1 }));
  const batches = layoutRequest([1], [10]);
  for (const r of recs) batches[0]!.writer.appendRange(r.key, 0, r.key.length, r.value, 0, r.value.length);
  t.notOk(batches[0]!.writer.isAt(batches[0]!.layout!.buf, batches[0]!.entry + 8));
  const before = producePaths.inPlace;
  const body = await produceRequestV3(args(batches, 'tx')).encode();
  t.equal(producePaths.inPlace, before, 'not in place');
  t.same((await parse(body.buffer)).partitions, expected(recs));
});

t.test('rangeRecordBytes is what appendRange writes, at every offset delta and size', async (t) => {
  const rng = new Rng(4);
  const w = new RecordBatchWriter(0);
  let want = 61;
  let bad = 0;
  for (let i = 0; i < 3000; i++) {
    const kn = rng.int(0, 9) === 0 ? 0 : rng.int(0, 20_000);
    const vn = rng.int(0, 9) === 0 ? 0 : rng.int(0, 70_000);
    const k = Buffer.alloc(kn, 0x6b);
    const v = Buffer.alloc(vn, 0x76);
    w.appendRange(k, 0, kn, v, 0, vn);
    want += rangeRecordBytes(kn, vn, i);
    if (w.size !== want) bad++;
  }
  t.equal(bad, 0);
});
