// Fetch responses' record sets built without a broker, for the benches that time the Kafka intake
// alone (kafka-baseline-decode.ts, kafka-baseline-intake.ts): N seed-000 messages keyed by series as
// streamstats-produce writes them (record batches of 250, uncompressed, no headers), in record sets of
// about 1 MiB each (KAFKA_MAX_BYTES_PER_PARTITION), with the offset a fetch of each would start at.
import { createRequire } from 'node:module';
import { generatePoints } from '../../src/sources/generator.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };

const SET_BYTES = 1 << 20;
const RECORDS_PER_BATCH = 250;

export interface FetchSet {
  /** The record set as a fetch response carries it: its length (int32), then its batches. */
  readonly buf: Buffer;
  /** The offset of its first message, as kafkajs's Batch is given the fetched offset. */
  readonly first: string;
}

export async function buildFetchSets(n: number): Promise<{ sets: FetchSet[]; bytes: number }> {
  const sets: FetchSet[] = [];
  let batches: Buffer[] = [];
  let size = 0;
  let first = 0;
  let recs: unknown[] = [];
  let ts0 = 0;
  let offset = 0;
  let bytes = 0;
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
  const flushBatch = async () => {
    if (recs.length === 0) return;
    const b = (await RecordBatch({ firstOffset: Long.fromValue(offset - recs.length), firstTimestamp: ts0, maxTimestamp: ts0, lastOffsetDelta: recs.length - 1, records: recs })).buffer;
    recs = [];
    batches.push(b);
    size += b.length;
    if (size >= SET_BYTES) flushSet();
  };
  for (const p of generatePoints({ count: n, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 1 })) {
    if (recs.length === 0) ts0 = 1_700_000_000_000 + offset;
    recs.push(Record({ offsetDelta: recs.length, timestampDelta: 1_700_000_000_000 + offset - ts0, key: Buffer.from(`${p.name}|agent_${p.host}`), value: Buffer.from(p.json) }));
    offset++;
    if (recs.length === RECORDS_PER_BATCH) await flushBatch();
  }
  await flushBatch();
  flushSet();
  return { sets, bytes };
}
