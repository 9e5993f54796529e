// Kafka -> file, the Kafka intake's main-thread work alone, as the source does it per fetch:
// the fetch record set decoded (the tree's src/sources/kafka/records.ts, installed as kafkajs's
// decoder is), kafkajs's Batch (consumer/batch.js, or the tree's src/sources/kafka/batch.ts), and the
// tree's cutFetch packing the messages into shared batch buffers with their positions and keys; the
// engine's part is played by giving each batch back (Batch.release) once 4 later ones were cut, as
// the pool's in-flight bound does. No broker and no other thread: N seed-000 messages keyed by series
// as streamstats-produce writes them (record batches of 250, uncompressed, no headers) in fetch record
// sets of about 1 MiB (KAFKA_MAX_BYTES_PER_PARTITION), each a fresh copy as kafkajs's connection
// makes one per response. Trees alternate round by round; medians of process CPU per message.
// Usage: node dist/bench/scenarios/kafka-baseline-intake.js [N=200000] [ROUNDS=7] [label=tree,...]
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../lib/scenario.js';
import { buildFetchSets, type FetchSet } from '../lib/kafka-fetch-sets.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const batchPath = require.resolve('kafkajs/src/consumer/batch.js');

type Decode = (d: unknown) => Promise<unknown[]>;
type Fetched = { messages: unknown[]; lastOffset(): string };
type BatchClass = new (topic: string, fetched: string, p: object) => Fetched;
interface Cut {
  data: Buffer;
  offsets: Uint32Array;
  positions?: readonly string[];
  release?: () => void;
}
interface Tree {
  readonly label: string;
  readonly decode: Decode;
  readonly Batch: BatchClass;
  readonly cut: (p: number, f: Fetched, o: object) => Cut[];
  readonly options: object;
}

const n = Number(process.argv[2] ?? 200_000);
const rounds = Number(process.argv[3] ?? 7);
const treeList = (process.argv[4] ?? `new=${ROOT}`).split(',').map((kv) => kv.split('=') as [string, string]);
/** Batches cut and not yet given back: about what the engine holds in flight. */
const IN_FLIGHT = 4;
const OPTIONS = { batchSize: 4000, batchMaxBytes: 4 << 20 };

/**
 * A tree's intake: its records.ts decoder and its Batch, each as the source installs them into
 * kafkajs (the module cache), loaded one tree at a time so that one tree's does not serve another.
 */
async function load(label: string, tree: string): Promise<Tree> {
  const url = (p: string) => pathToFileURL(join(tree, 'dist', 'src', 'sources', 'kafka', p)).href;
  const records = (await import(url('records.js'))) as { decodeMessages: Decode };
  const fetch = (await import(url('fetch.js'))) as { cutFetch: Tree['cut'] };
  // A tree with ./batch.ts has its own Batch for kafkajs's consumer (installFastBatch puts it in
  // kafkajs's place; this process has loaded kafkajs's consumer already, so it is called directly).
  const batch = (await import(url('batch.js')).catch(() => null)) as { FastBatch: BatchClass } | null;
  const Batch = batch?.FastBatch ?? (require(batchPath) as BatchClass);
  const recycle = (await import(pathToFileURL(join(tree, 'dist', 'src', 'sources', 'recycle.js')).href)) as { BufferRecycler: new () => object };
  return { label, decode: records.decodeMessages, Batch, cut: fetch.cutFetch, options: { ...OPTIONS, recycler: new recycle.BufferRecycler() } };
}

async function pass(t: Tree, sets: readonly FetchSet[]): Promise<{ us: number; messages: number; check: number }> {
  const held: Cut[] = [];
  const c0 = process.cpuUsage();
  let messages = 0;
  let check = 0;
  for (const s of sets) {
    // kafkajs's connection concatenates each response into a buffer of its own.
    const buf = Buffer.concat([s.buf]);
    const ms = await t.decode(new Decoder(buf));
    const fetched = new t.Batch('t', s.first, { partition: 0, highWatermark: '0', abortedTransactions: [], messages: ms });
    for (const b of t.cut(0, fetched, t.options)) {
      messages += b.offsets.length - 1;
      check = (check + b.data[b.data.length - 1]! + Number(b.positions?.[b.positions.length - 1] ?? 0)) % 1e9;
      held.push(b);
      if (held.length > IN_FLIGHT) held.shift()!.release?.();
    }
  }
  for (const b of held) b.release?.();
  const c = process.cpuUsage(c0);
  return { us: (c.user + c.system) / messages, messages, check };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const { sets, bytes } = await buildFetchSets(n);
const trees: Tree[] = [];
for (const [label, tree] of treeList) trees.push(await load(label, tree));
const res = new Map<string, number[]>(trees.map((t) => [t.label, []]));
let expect: number | null = null;
for (let r = -1; r < rounds; r++) {
  for (const t of trees) {
    const x = await pass(t, sets);
    if (x.messages !== n) throw new Error(`${t.label}: ${x.messages} of ${n} messages`);
    if (expect !== null && x.check !== expect) throw new Error(`${t.label}: batches differ from the first tree's`);
    expect = x.check;
    if (r >= 0) res.get(t.label)!.push(x.us);
  }
}
const out: Record<string, number> = {};
for (const [k, xs] of res) out[k] = Number(median(xs).toFixed(3));
const base = out[trees[0]!.label]!;
const ratios: Record<string, number> = {};
for (const t of trees.slice(1)) ratios[`${t.label}/${trees[0]!.label}`] = Number((out[t.label]! / base).toFixed(2));
process.stdout.write(`${JSON.stringify({ messages: n, fetchSets: sets.length, bytesPerMessage: Math.round(bytes / n), rounds, usPerMessage: out, ratios })}\n`);
