// The fast fetch decoder (src/sources/kafka/records.ts) against kafkajs's own, on record sets made
// with kafkajs's encoders: every message must read the same (fields, strings, bytes, batch context),
// whichever path decoded it, and malformed input must read (or fail) as kafkajs reads it.
import t from 'tap';
import { createRequire } from 'node:module';
import { decodeMessages, installFastRecords, recordPaths } from '../../src/sources/kafka/records.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
// Loaded before any install: kafkajs's decoder itself, the reference.
const original = require(`${KJS}requests/fetch/v4/decodeMessages.js`) as (d: unknown) => Promise<Array<Record<string, unknown>>>;
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const Encoder = require(`${KJS}encoder.js`) as new () => { writeInt32(n: number): unknown; writeBuffer(b: Buffer): unknown; buffer: Buffer };
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const { Types } = require(`${KJS}message/compression/index.js`) as { Types: { GZIP: number } };
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };

interface Rec {
  offsetDelta: number;
  timestampDelta?: number;
  key: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, unknown>;
}

async function batchOf(firstOffset: string | number, recs: Rec[], o: { compression?: number; transactional?: boolean; firstTimestamp?: number } = {}): Promise<Buffer> {
  const enc = await RecordBatch({
    firstOffset: Long.fromValue(firstOffset),
    firstTimestamp: o.firstTimestamp ?? 1_700_000_000_000,
    maxTimestamp: (o.firstTimestamp ?? 1_700_000_000_000) + 99,
    lastOffsetDelta: recs.at(-1)?.offsetDelta ?? 0,
    transactional: o.transactional ?? false,
    producerId: Long.fromValue(o.transactional === true ? 7 : -1),
    compression: o.compression ?? 0,
    records: recs.map((r) => Record(r)),
  });
  return enc.buffer;
}

/** The record-set field of a fetch partition: int32 size, then the batches. */
function recordSet(batches: Buffer[]): Buffer {
  const body = Buffer.concat(batches);
  const e = new Encoder();
  e.writeInt32(body.length);
  e.writeBuffer(body);
  return e.buffer;
}

/** The fields of a kafkajs message, read by name (a FastRecord makes some of them when read). */
const FIELDS = ['magicByte', 'attributes', 'timestamp', 'offset', 'key', 'value', 'headers', 'isControlRecord', 'batchContext'] as const;

const plain = (ms: Array<Record<string, unknown>>) =>
  ms.map((m) => {
    const out: Record<string, unknown> = {};
    for (const f of FIELDS) out[f] = m[f];
    return { ...out, key: m.key === null ? null : (m.key as Buffer).toString('hex'), value: m.value === null ? null : (m.value as Buffer).toString('hex'), headers: JSON.stringify(m.headers, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v)) };
  });

async function both(set: Buffer): Promise<{ fast: unknown; ref: unknown }> {
  const run = async (f: typeof original) => {
    try {
      return { ok: plain(await f(new Decoder(set))) };
    } catch (err) {
      return { threw: (err as Error).name };
    }
  };
  return { fast: await run(decodeMessages as typeof original), ref: await run(original) };
}

const recs = (n: number, from = 0): Rec[] =>
  Array.from({ length: n }, (_, i) => ({ offsetDelta: i, timestampDelta: (i * 37) % 1000, key: i % 3 === 0 ? null : Buffer.from(`k${i + from}`), value: i % 5 === 4 ? null : Buffer.from(`{"v":${i + from}}`) }));

t.test('plain batches: the fast path decodes them, the messages equal kafkajs\'s', async (t) => {
  const before = recordPaths.fastBatches;
  const set = recordSet([await batchOf(0, recs(50)), await batchOf(50, recs(30, 50)), await batchOf(2 ** 50, recs(10), { firstTimestamp: 5 })]);
  const { fast, ref } = await both(set);
  t.same(fast, ref);
  t.equal((ref as { ok: unknown[] }).ok.length, 90);
  t.equal(recordPaths.fastBatches - before, 3, 'every batch took the fast path');
});

t.test('timestamps: negative, large and multi-byte deltas; empty keys and values', async (t) => {
  const rs: Rec[] = [-1, 0, 127, 128, 2 ** 20, 2 ** 40, -(2 ** 33)].map((d, i) => ({ offsetDelta: i * 1000, timestampDelta: d, key: Buffer.alloc(0), value: Buffer.alloc(0) }));
  const { fast, ref } = await both(recordSet([await batchOf(123, rs)]));
  t.same(fast, ref);
});

t.test('records with headers (duplicate keys, __proto__) are decoded by kafkajs\'s record decoder', async (t) => {
  const before = recordPaths.kafkajsRecords;
  const rs: Rec[] = [
    { offsetDelta: 0, key: null, value: Buffer.from('a'), headers: { h: 'x', dup: ['1', '2'] } },
    { offsetDelta: 1, key: null, value: Buffer.from('b') },
    { offsetDelta: 2, key: Buffer.from('k'), value: Buffer.from('c'), headers: { ['__proto__']: 'p' } },
  ];
  const { fast, ref } = await both(recordSet([await batchOf(9, rs)]));
  t.same(fast, ref);
  t.equal(recordPaths.kafkajsRecords - before, 2);
});

t.test('batches the fast path does not take read as kafkajs reads them', async (t) => {
  const before = recordPaths.kafkajsBatches;
  const set = recordSet([
    await batchOf('9007199254740993', recs(5)), // first offset beyond 2^53
    await batchOf(5, recs(5), { transactional: true }),
    await batchOf(10, recs(20), { compression: Types.GZIP }),
  ]);
  const { fast, ref } = await both(set);
  t.same(fast, ref);
  t.equal(recordPaths.kafkajsBatches - before, 2, 'the 2^53 and the gzip batch went to kafkajs; a transactional one is plain');
});

t.test('LOG_APPEND_TIME batches carry the max timestamp', async (t) => {
  const b = await batchOf(0, recs(4));
  b.writeInt16BE(b.readInt16BE(21) | 0x08, 21);
  const { fast, ref } = await both(recordSet([b]));
  t.same(fast, ref);
  t.equal(((fast as { ok: Array<{ timestamp: string }> }).ok)[0]!.timestamp, String(1_700_000_000_000 + 99));
});

t.test('a partial batch at the end of the set is left out, as kafkajs does', async (t) => {
  const full = recordSet([await batchOf(0, recs(10)), await batchOf(10, recs(10))]);
  const cut = Buffer.from(full.subarray(0, full.length - 25));
  cut.writeInt32BE(cut.length - 4, 0);
  const { fast, ref } = await both(cut);
  t.same(fast, ref);
  t.equal((ref as { ok: unknown[] }).ok.length, 10);
});

t.test('corrupted bytes read (or fail) exactly as in kafkajs', async (t) => {
  const set = recordSet([await batchOf(0, recs(40)), await batchOf(40, recs(40, 40))]);
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  let differ = 0;
  for (let k = 0; k < 400; k++) {
    const b = Buffer.from(set);
    // Past the first batch's header (its CRC is not checked), one to three bytes.
    for (let j = 0, n = 1 + Math.floor(rnd() * 3); j < n; j++) b[4 + 61 + Math.floor(rnd() * (b.length - 65))] = Math.floor(rnd() * 256);
    const { fast, ref } = await both(b);
    if (JSON.stringify(fast) !== JSON.stringify(ref)) differ++;
  }
  t.equal(differ, 0);
});

t.test('install: refused once kafkajs loaded its own decoder (as in this process)', async (t) => {
  t.equal(installFastRecords(), false);
});
