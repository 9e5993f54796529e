// Issue 14, Kafka -> file, the fetch decoding alone: kafkajs's fetch record-set decoder against the
// Kafka source's (src/sources/kafka/records.ts), each followed by what kafkajs does next with the
// messages (consumer/batch.js: the offset filter), on the same bytes: N seed-000 messages keyed by
// series as streamstats-produce writes them (record batches of 250, uncompressed, no headers) in fetch
// record sets of about 1 MiB (KAFKA_MAX_BYTES_PER_PARTITION). No broker and no other thread, so the
// CPU per message is steady on a shared machine. Alternated rounds, medians.
// Usage: node dist/bench/scenarios/kafka-baseline-decode.js [N=200000] [ROUNDS=7]
import { createRequire } from 'node:module';
import { generatePoints } from '../../src/sources/generator.js';
import { decodeMessages } from '../../src/sources/kafka/records.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
type Decode = (d: unknown) => Promise<Array<{ offset: string }>>;
const original = require(`${KJS}requests/fetch/v4/decodeMessages.js`) as Decode;
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };
const Batch = require('kafkajs/src/consumer/batch.js') as new (topic: string, fetched: string, p: object) => { messages: unknown[] };

const n = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
const SET_BYTES = 1 << 20;

async function build(): Promise<{ sets: Array<{ buf: Buffer; first: string }>; bytes: number }> {
  const sets: Array<{ buf: Buffer; first: string }> = [];
  let batches: Buffer[] = [];
  let size = 0;
  let first = 0;
  let recs: unknown[] = [];
  let ts0 = 0;
  let offset = 0;
  let bytes = 0;
  const flushBatch = async () => {
    if (recs.length === 0) return;
    const b = (await RecordBatch({ firstOffset: Long.fromValue(offset - recs.length), firstTimestamp: ts0, maxTimestamp: ts0, lastOffsetDelta: recs.length - 1, records: recs })).buffer;
    recs = [];
    batches.push(b);
    size += b.length;
    if (size >= SET_BYTES) flushSet();
  };
  const flushSet = () => {
    if (batches.length === 0) return;
    const body = Buffer.concat(batches);
    const head = Buffer.alloc(4);
    head.writeInt32BE(body.length);
    sets.push({ buf: Buffer.concat([head, body]), first: String(first) });
    bytes += body.length;
    batches = [];
    size = 0;
    first = offset;
  };
  for (const p of generatePoints({ count: n, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 1 })) {
    if (recs.length === 0) ts0 = 1_700_000_000_000 + offset;
    recs.push(Record({ offsetDelta: recs.length, timestampDelta: 1_700_000_000_000 + offset - ts0, key: Buffer.from(`${p.name}|${p.host}`), value: Buffer.from(p.json) }));
    offset++;
    if (recs.length === 250) await flushBatch();
  }
  await flushBatch();
  flushSet();
  return { sets, bytes };
}

async function pass(decode: Decode, sets: Array<{ buf: Buffer; first: string }>): Promise<{ us: number; messages: number }> {
  const c0 = process.cpuUsage();
  let messages = 0;
  for (const s of sets) {
    const ms = await decode(new Decoder(s.buf));
    messages += new Batch('t', s.first, { partition: 0, highWatermark: '0', abortedTransactions: [], messages: ms }).messages.length;
  }
  const c = process.cpuUsage(c0);
  return { us: (c.user + c.system) / messages, messages };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const { sets, bytes } = await build();
const variants: Array<[string, Decode]> = [
  ['kafkajs', original],
  ['records.ts', decodeMessages as unknown as Decode],
];
const res = new Map<string, number[]>(variants.map(([k]) => [k, []]));
for (let r = -1; r < rounds; r++) {
  for (const [name, f] of variants) {
    const x = await pass(f, sets);
    if (x.messages !== n) throw new Error(`${name}: ${x.messages} of ${n} messages`);
    if (r >= 0) res.get(name)!.push(x.us);
  }
}
const out: Record<string, number> = {};
for (const [k, xs] of res) out[k] = Number(median(xs).toFixed(3));
process.stdout.write(`${JSON.stringify({ messages: n, fetchSets: sets.length, bytesPerMessage: Math.round(bytes / n), rounds, usPerMessage: out, ratio: Number((out['records.ts']! / out['kafkajs']!).toFixed(2)) })}\n`);
