// Kafka -> file, the fetch decoding alone: kafkajs's fetch record-set decoder against the
// Kafka source's (src/sources/kafka/records.ts), each followed by what kafkajs does next with the
// messages (consumer/batch.js: the offset filter), on the same bytes: N seed-000 messages keyed by
// series as streamstats-produce writes them (record batches of 250, uncompressed, no headers) in fetch
// record sets of about 1 MiB (KAFKA_MAX_BYTES_PER_PARTITION). No broker and no other thread, so the
// CPU per message is steady on a shared machine. Alternated rounds, medians.
// Usage: node dist/bench/scenarios/kafka-baseline-decode.js [N=200000] [ROUNDS=7]
import { createRequire } from 'node:module';
import { decodeMessages } from '../../src/sources/kafka/records.js';
import { buildFetchSets, type FetchSet } from '../lib/kafka-fetch-sets.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
type Decode = (d: unknown) => Promise<Array<{ offset: string }>>;
const original = require(`${KJS}requests/fetch/v4/decodeMessages.js`) as Decode;
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const Batch = require('kafkajs/src/consumer/batch.js') as new (topic: string, fetched: string, p: object) => { messages: unknown[] };

const n = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);

async function pass(decode: Decode, sets: readonly FetchSet[]): Promise<{ us: number; messages: number }> {
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
const { sets, bytes } = await buildFetchSets(n);
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
