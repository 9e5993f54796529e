// The record-batch encoder (src/kafka/record-batch.ts) against kafkajs 2.2.4's own encoder and
// decoder: random keys, values and headers (null, empty, large, non-ASCII) in every codec must
// decode with kafkajs's RecordBatch decoder to what went in, and an uncompressed batch must be
// kafkajs's bytes exactly (kafkajs's CRC32C included); the CRC32C itself against kafkajs's and the
// standard check value.
import t from 'tap';
import fc from 'fast-check';
import { createRequire } from 'node:module';
import { registerCodecs } from '../../src/kafka/codecs.js';
import { producibleCompressions, compressionCode } from '../../src/kafka/compression.js';
import { crc32c, crc32cCombine, crc32cJs, CRC32C_IMPLEMENTATION } from '../../src/kafka/crc32c.js';
import { encodeMessages, recordBytes, RecordBatchWriter, varintBytes, varlongBytes, type BatchProducer, type PlainMessage } from '../../src/kafka/record-batch.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const decodeBatch = require(`${KJS}recordBatch/v0/decoder.js`) as (d: unknown) => Promise<KjsBatch>;
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const kafkajsCrc = require(`${KJS}recordBatch/crc32C/index.js`) as (b: Buffer) => number;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };

interface KjsRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | Buffer[]>;
  offset: string;
  timestamp: string;
}
interface KjsBatch {
  records: KjsRecord[];
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
  inTransaction: boolean;
  lastOffsetDelta: number;
  firstTimestamp: string;
  maxTimestamp: string;
}

registerCodecs();

const bytesOf = (v: Buffer | string | null | undefined): string | null => (v === null || v === undefined ? null : Buffer.from(v).toString('hex'));

/** kafkajs's header object from our list of headers, as its decoder folds repeated keys. */
function expectedHeaders(m: PlainMessage): Record<string, string | null | Array<string | null>> {
  const out: Record<string, string | null | Array<string | null>> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    const vs = Array.isArray(v) ? (v as Array<Buffer | string>) : [v as Buffer | string | undefined];
    for (const x of vs) {
      const b = bytesOf(x);
      const cur = out[k];
      out[k] = cur === undefined ? b : Array.isArray(cur) ? [...cur, b] : [cur, b];
    }
  }
  return out;
}

function decodedHeaders(h: KjsRecord['headers']): Record<string, string | null | Array<string | null>> {
  const out: Record<string, string | null | Array<string | null>> = {};
  for (const [k, v] of Object.entries(h)) out[k] = Array.isArray(v) ? v.map((x) => bytesOf(x)) : bytesOf(v);
  return out;
}

const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.constant(''), fc.string({ minLength: 3000, maxLength: 5000 }));
const bytes = fc.oneof(fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)), fc.uint8Array({ minLength: 20_000, maxLength: 70_000 }).map((a) => Buffer.from(a)));
const field = fc.oneof(text, bytes, fc.constant(null));
const headerValue = fc.oneof(text, bytes.filter((b) => b.length < 1000));
const message: fc.Arbitrary<PlainMessage> = fc.record(
  {
    key: fc.oneof(field, fc.constant(undefined)),
    value: field,
    // Not a name of Object.prototype's: kafkajs's decoder folds headers into a plain object.
    headers: fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 12 }).filter((k) => !(k in Object.prototype)), fc.oneof(headerValue, fc.array(headerValue, { minLength: 1, maxLength: 3 })), { maxKeys: 4 }),
    timestamp: fc.integer({ min: 0, max: 2 ** 41 }),
  },
  { requiredKeys: ['value'] },
) as fc.Arbitrary<PlainMessage>;
const producer: fc.Arbitrary<BatchProducer> = fc.record({
  producerId: fc.oneof(fc.constant(-1n), fc.bigInt({ min: 0n, max: 2n ** 63n - 1n })),
  producerEpoch: fc.integer({ min: -1, max: 32767 }),
  firstSequence: fc.integer({ min: -1, max: 2 ** 31 - 1 }),
  transactional: fc.boolean(),
});

t.test('CRC32C: the check value, kafkajs\'s table, and every alignment and length', async (t) => {
  t.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  t.equal(crc32cJs(Buffer.from('123456789')), 0xe3069283);
  t.ok(['native', 'js'].includes(CRC32C_IMPLEMENTATION), CRC32C_IMPLEMENTATION);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(7), fc.nat(7), (a, s, cut) => {
      const b = Buffer.concat([Buffer.alloc(s), Buffer.from(a), Buffer.alloc(cut)]);
      const want = kafkajsCrc(b.subarray(s, s + a.length));
      return crc32c(b, s, s + a.length) === want && crc32cJs(b, s, s + a.length) === want;
    }),
    { numRuns: 500 },
  );
});

t.test('CRC32C combined from the CRCs of two parts is the CRC of the whole, for any cut', async (t) => {
  fc.assert(fc.property(fc.uint8Array({ maxLength: 3000 }), fc.nat(), (a, c) => {
    const b = Buffer.from(a);
    const cut = c % (b.length + 1);
    return crc32cCombine(crc32cJs(b, 0, cut), crc32cJs(b, cut), b.length - cut) === crc32cJs(b);
  }), { numRuns: 500 });
  // A batch sealed from records whose CRC was given: the same bytes as one checksummed whole.
  const body = new RecordBatchWriter(0);
  for (let i = 0; i < 300; i++) body.appendRange(Buffer.from(`k${i}`), 0, `k${i}`.length, Buffer.from(`v${i}`.repeat(i % 13)), 0, `v${i}`.length * (i % 13));
  const p: BatchProducer = { producerId: 7n, producerEpoch: 1, firstSequence: 40, transactional: true };
  const whole = Buffer.from(body.sealUncompressed(1_600_000_000_000, p));
  const records = whole.subarray(61);
  const told = new RecordBatchWriter(records.length);
  told.appendRecords(records, 0, records.length, 300, crc32cJs(records));
  t.ok(told.sealUncompressed(1_600_000_000_000, p).equals(whole), 'header CRC combined with the records\' CRC: the same batch');
  const untold = new RecordBatchWriter(records.length);
  untold.appendRecords(records, 0, records.length, 300);
  t.ok(untold.sealUncompressed(1_600_000_000_000, p).equals(whole), 'without it, checksummed whole: the same batch');
  t.throws(() => told.appendRecords(records, 0, 10, 1), /numbered from 0/, 'records numbered from 0 go only into an empty batch');
});

t.test('varint sizes are the bytes written', async (t) => {
  for (const x of [0, 1, -1, 63, -64, 64, -65, 8191, 8192, 2 ** 31 - 1, -(2 ** 31)]) t.equal(varintBytes(x), kafkajsVarintBytes(x), `varint ${x}`);
  for (const x of [0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 41, -(2 ** 47), Number.MAX_SAFE_INTEGER]) t.equal(varlongBytes(x), KjsEncoder.sizeOfVarLong(x), `varlong ${x}`);
});

const KjsEncoder = require(`${KJS}encoder.js`) as { sizeOfVarInt(v: number): number; sizeOfVarLong(v: number): number };
const kafkajsVarintBytes = (x: number): number => KjsEncoder.sizeOfVarInt(x);

for (const c of producibleCompressions()) {
  t.test(`${c}: random messages read back by kafkajs's RecordBatch decoder as they went in`, async (t) => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 12 }), producer, fc.integer({ min: 0, max: 2 ** 41 }), async (ms, p, now) => {
        const batch = await encodeMessages(ms, compressionCode(c), p, now);
        const d = await decodeBatch(new Decoder(batch));
        const times = ms.map((m) => Number(m.timestamp ?? now));
        const got = {
          batch: [d.lastOffsetDelta, d.producerId, d.producerEpoch, d.firstSequence, d.inTransaction, d.firstTimestamp, d.maxTimestamp, batch.readUInt32BE(17)],
          records: d.records.map((r) => ({ key: bytesOf(r.key), value: bytesOf(r.value), headers: decodedHeaders(r.headers), offset: r.offset, timestamp: r.timestamp })),
        };
        const want = {
          batch: [ms.length - 1, String(p.producerId), p.producerEpoch, p.firstSequence, p.transactional, String(Math.min(...times)), String(Math.max(...times)), crc32cJs(batch, 21)],
          records: ms.map((m, i) => ({ key: bytesOf(m.key), value: bytesOf(m.value), headers: expectedHeaders(m), offset: String(i), timestamp: String(times[i]) })),
        };
        t.strictSame(got, want);
      }),
      { numRuns: c === 'none' ? 40 : 15 },
    );
  });
}

t.test('uncompressed, a batch is the bytes kafkajs\'s own encoder writes', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 8 }), producer, async (ms, p) => {
      // kafkajs sorts timestamps as strings: equal digit counts keep its first timestamp the smallest.
      const base = 1_700_000_000_000;
      const withTs = ms.map((m, i) => ({ ...m, timestamp: base + ((i * 7919) % 1000) }));
      const first = Math.min(...withTs.map((m) => m.timestamp));
      const max = Math.max(...withTs.map((m) => m.timestamp));
      const theirs = await RecordBatch({
        compression: 0,
        records: withTs.map((m, i) => Record({ ...m, key: m.key ?? null, offsetDelta: i, timestampDelta: m.timestamp - first })),
        firstTimestamp: first,
        maxTimestamp: max,
        producerId: Long.fromValue(String(p.producerId)),
        producerEpoch: p.producerEpoch,
        firstSequence: p.firstSequence,
        transactional: p.transactional,
        lastOffsetDelta: ms.length - 1,
      });
      const ours = await encodeMessages(withTs, 0, p, 0);
      return ours.equals(theirs.buffer);
    }),
    { numRuns: 60 },
  );
  t.pass('60 random batches are kafkajs\'s bytes');
});

t.test('appendRange: records from byte ranges of other buffers, a null key, the writer growing', async (t) => {
  const keys = Buffer.from('xxk0k11k222é');
  const values = Buffer.from('{"a":1}\n{"b":22}\n\n{"c":"ü"}\n');
  const w = new RecordBatchWriter(4);
  w.appendRange(keys, 2, 4, values, 0, 7);
  w.appendRange(keys, 4, 7, values, 8, 16);
  w.appendRange(null, 0, 0, values, 17, 17);
  w.appendRange(keys, 7, keys.length, values, 18, values.length - 1);
  t.equal(w.count, 4);
  const batch = await w.seal(0, 1_700_000_000_000, { producerId: 5n, producerEpoch: 1, firstSequence: 10, transactional: true });
  const d = await decodeBatch(new Decoder(batch));
  t.same(d.records.map((r) => [r.key?.toString() ?? null, r.value?.toString(), r.offset, r.timestamp]), [
    ['k0', '{"a":1}', '0', '1700000000000'],
    ['k11', '{"b":22}', '1', '1700000000000'],
    [null, '', '2', '1700000000000'],
    ['k222é', '{"c":"ü"}', '3', '1700000000000'],
  ]);
  t.ok(recordBytes(2, 7) >= 2 + 7 + 8);
  // A second seal writes the header afresh (a retried request gets the producer's fields again).
  const again = await w.seal(0, 1_700_000_000_001, { producerId: 6n, producerEpoch: 2, firstSequence: 0, transactional: false });
  const d2 = await decodeBatch(new Decoder(again));
  t.same([d2.producerId, d2.producerEpoch, d2.firstSequence, d2.inTransaction, d2.firstTimestamp], ['6', 2, 0, false, '1700000000001']);
  t.equal(again.readUInt32BE(17), crc32cJs(again, 21));
});
