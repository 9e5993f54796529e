// A cheaper decoder for kafkajs's fetch responses (kafkajs 2.2.4, fetch v4-v11 record sets). kafkajs
// turns every record's offset and timestamp into a 64-bit BigInt and back: per record it parses the
// batch's first offset and timestamp from strings, adds, prints the sums, reads the timestamp delta
// as a BigInt in a loop, makes a sub-decoder and a buffer view of the record and folds headers with
// object spreads. That was 1.6-2.4 us of the main thread's ~6 us per message (profiled on kafkajs 2.2.4). Here the
// same messages (same fields, same strings) come from number arithmetic on the record set:
// - only uncompressed, non-control record batches (v2) whose first offset and timestamp are safe
//   integers take the fast path; every other batch goes to kafkajs's own decoder, unchanged (the
//   codecs' decompression bound and its stand-in records among them);
// - a record takes the fast path only when it has no headers and its fields end exactly where its
//   length says; else that record is decoded by kafkajs's record decoder, so malformed input reads
//   exactly as kafkajs reads it.
// A fast-path record is a FastRecord (./fast-record.ts): the fields kafkajs and the source read on every record (offset,
// key, attributes, batchContext) are its own; its value view, timestamp string and empty headers are
// made only when read, since the source copies the value straight from the fetch's bytes (copyValue)
// and reads two timestamps per batch, and nothing else reads them.
// kafkajs loads the fetch response decoder (v4/decodeMessages.js) lazily, on the first fetch: install()
// puts this one in its place in the CommonJS module cache before that. If it was loaded already,
// install() leaves kafkajs alone and says so.
import Module from 'node:module';
import { kafkajsInternals, kafkajsRequire } from '../../kafka/internals.js';
import { holdFrame } from '../../kafka/frame-pool.js';
import { CREATE_TIME, FastRecord, LOG_APPEND_TIME, type KjsMessage } from './fast-record.js';
import { RecordRun, runsWanted } from './runs.js';

const KJS = 'kafkajs/src/protocol/';

interface KjsDecoder {
  buffer: Buffer;
  offset: number;
  readInt32(): number;
  readBytes(n: number): Buffer;
  canReadBytes(n: number): boolean;
}

interface KafkajsParts {
  readonly decodeMessagesPath: string;
  readonly Decoder: new (b: Buffer) => KjsDecoder;
  readonly RecordBatchDecoder: (d: KjsDecoder) => Promise<{ records: KjsMessage[] }>;
  readonly RecordDecoder: (d: KjsDecoder, ctx: object) => KjsMessage;
  readonly MessageSetDecoder: (d: KjsDecoder, size: number) => Promise<KjsMessage[]>;
  readonly MAGIC_BYTE: number;
}

/** kafkajs's internals this needs; null (nothing installed) for another release or layout. */
function kafkajsParts(): KafkajsParts | null {
  return kafkajsInternals((require) => ({
    decodeMessagesPath: require.resolve(`${KJS}requests/fetch/v4/decodeMessages.js`),
    Decoder: require(`${KJS}decoder.js`) as KafkajsParts['Decoder'],
    RecordBatchDecoder: require(`${KJS}recordBatch/v0/decoder.js`) as KafkajsParts['RecordBatchDecoder'],
    RecordDecoder: require(`${KJS}recordBatch/record/v0/decoder.js`) as KafkajsParts['RecordDecoder'],
    MessageSetDecoder: require(`${KJS}messageSet/decoder.js`) as KafkajsParts['MessageSetDecoder'],
    MAGIC_BYTE: (require(`${KJS}recordBatch/v0/index.js`) as { MAGIC_BYTE: number }).MAGIC_BYTE,
  }));
}

const K = kafkajsParts();

/** kafkajs's RECORD_BATCH_OVERHEAD and MAGIC_OFFSET (v4/decodeMessages.js). */
const RECORD_BATCH_OVERHEAD = 49;
const MAGIC_OFFSET = 16;
const CODEC_MASK = 0x07;
const TIMESTAMP_TYPE_FLAG_MASK = 0x08;
const TRANSACTIONAL_FLAG_MASK = 0x10;
const CONTROL_FLAG_MASK = 0x20;
/** Counts of batches and records by path, for the tests (a fast path that never runs tests nothing). */
export const recordPaths = { fastBatches: 0, kafkajsBatches: 0, kafkajsRecords: 0, runs: 0 };

/** The read position of varInt and varLong: a module variable, not an object per record. */
let pos = 0;

/** kafkajs's Decoder.readVarInt, with its 32-bit arithmetic, at pos. */
function varInt(buf: Buffer): number {
  let b = buf[pos++]!;
  if (b < 0x80) return (b >>> 1) ^ -(b & 1);
  let r = b & 0x7f;
  let i = 7;
  do {
    b = buf[pos++]!;
    r += (b & 0x7f) << i;
    i += 7;
  } while (b >= 0x80);
  return (r >>> 1) ^ -(r & 1);
}

/** A zigzag varlong of at most 7 bytes (|value| < 2^48) at pos, as a number; NaN when longer. */
function varLong(buf: Buffer): number {
  let b: number;
  let v = 0;
  let scale = 1;
  let n = 0;
  do {
    if (n++ === 7) return NaN;
    b = buf[pos++]!;
    v += (b & 0x7f) * scale;
    scale *= 128;
  } while (b >= 0x80);
  return v % 2 === 0 ? v / 2 : -(v + 1) / 2;
}

/**
 * The context kafkajs's record batch decoder gives the records of the batch at o (its fields, in its
 * order), and the batch's first offset and timestamp as numbers; null where either is not a safe
 * integer (kafkajs's own decoder reads that batch).
 */
function batchHead(buf: Buffer, o: number): { context: FastRecord['batchContext']; offsetBase: number; tsBase: number } | null {
  const b = o + 12;
  const attributes = buf.readInt16BE(b + 9);
  const firstOffset = buf.readBigInt64BE(o).toString();
  const firstTimestamp = buf.readBigInt64BE(b + 15).toString();
  const offsetBase = Number(firstOffset);
  const tsBase = Number(firstTimestamp);
  if (!Number.isSafeInteger(offsetBase) || !Number.isSafeInteger(tsBase)) return null;
  const recordContext = {
    firstOffset,
    firstTimestamp,
    partitionLeaderEpoch: buf.readInt32BE(b),
    inTransaction: (attributes & TRANSACTIONAL_FLAG_MASK) > 0,
    isControlBatch: false,
    lastOffsetDelta: buf.readInt32BE(b + 11),
    producerId: buf.readBigInt64BE(b + 31).toString(),
    producerEpoch: buf.readInt16BE(b + 39),
    firstSequence: buf.readInt32BE(b + 41),
    maxTimestamp: buf.readBigInt64BE(b + 23).toString(),
    timestampType: (attributes & TIMESTAMP_TYPE_FLAG_MASK) > 0 ? LOG_APPEND_TIME : CREATE_TIME,
  };
  return { context: { ...recordContext, magicByte: buf.readInt8(b + 4) }, offsetBase, tsBase };
}

/** What fastBatch did with a record batch. */
const DECODED = 0;
const NOT_FAST = 1;
/** The batch runs past the end of the set (a fetch's maxBytes cuts its last one): the set ends before it. */
const PARTIAL = 2;

/**
 * Decodes the record batch at d.offset onto `out` and moves d past it (DECODED); NOT_FAST (d and
 * out untouched) when the batch is not one the fast path takes; PARTIAL where kafkajs's decoder
 * throws its partial-message error, which decodeMessages would catch (about one a partition per
 * fetch, each with a stack trace: not made).
 */
function fastBatch(d: KjsDecoder, out: KjsMessage[]): number {
  const buf = d.buffer;
  const o = d.offset;
  const length = buf.readInt32BE(o + 8);
  const b = o + 12;
  if (buf.length - b < length) return PARTIAL;
  const end = b + length;
  const attributes = buf.readInt16BE(b + 9);
  if ((attributes & CODEC_MASK) !== 0 || (attributes & CONTROL_FLAG_MASK) !== 0 || length < RECORD_BATCH_OVERHEAD) return NOT_FAST;
  const head = batchHead(buf, o);
  if (head === null) return NOT_FAST;
  const { context: batchContext, offsetBase, tsBase } = head;
  const count = buf.readInt32BE(b + 45);
  if (count < -1 || count > length) return NOT_FAST;
  // Records go onto `out` as they are decoded; a batch that turns out not fast takes them off again.
  const mark = out.length;
  let next = b + RECORD_BATCH_OVERHEAD;
  try {
    for (let i = 0; i < count; i++) {
      pos = next;
      const len = varInt(buf);
      const start = pos;
      const stop = start + len;
      if (len < 0 || stop > end) {
        out.length = mark;
        return NOT_FAST;
      }
      next = stop;
      if (len === 0) {
        recordPaths.kafkajsRecords++;
        out.push(K!.RecordDecoder(new K!.Decoder(buf.subarray(start, stop)), batchContext));
        continue;
      }
      const recAttributes = buf[pos++]!;
      const tsDelta = varLong(buf);
      const offsetDelta = varInt(buf);
      const ts = tsBase + tsDelta;
      const offset = offsetBase + offsetDelta;
      const keyLen = varInt(buf);
      const keyAt = pos;
      if (keyLen > 0) pos += keyLen;
      const valueLen = varInt(buf);
      const valueAt = pos;
      if (valueLen > 0) pos += valueLen;
      const headers = varInt(buf);
      if (pos !== stop || keyLen < -1 || valueLen < -1 || (headers !== 0 && headers !== -1) || !Number.isSafeInteger(ts) || !Number.isSafeInteger(offset)) {
        recordPaths.kafkajsRecords++;
        out.push(K!.RecordDecoder(new K!.Decoder(buf.subarray(start, stop)), batchContext));
        continue;
      }
      out.push(new FastRecord(
        recAttributes > 127 ? recAttributes - 256 : recAttributes,
        offset,
        keyAt,
        keyLen,
        batchContext,
        buf,
        valueAt,
        valueLen,
        ts,
      ) as unknown as KjsMessage);
    }
  } catch (e) {
    // kafkajs's record decoder threw: as from kafkajs's batch decoder, no record of the batch is kept.
    out.length = mark;
    throw e;
  }
  d.offset = end;
  recordPaths.fastBatches++;
  return DECODED;
}

/**
 * The record set as a RecordRun, or null where any part of it is not a plain record of the fast path
 * (then decodeMessages decodes it from the start, record by record). The checks are fastBatch's,
 * with fewer cases taken: no record of length 0, no record attributes, no batch of count -1.
 */
export function decodeRun(buf: Buffer): RecordRun | null {
  // The batch headers first: the records' number sizes the columns.
  let total = 0;
  let batches = 0;
  for (let o = 0; buf.length - o >= RECORD_BATCH_OVERHEAD; ) {
    const length = buf.readInt32BE(o + 8);
    const b = o + 12;
    if (buf.length - b < length) break;
    const attributes = buf.readInt16BE(b + 9);
    if ((attributes & CODEC_MASK) !== 0 || (attributes & CONTROL_FLAG_MASK) !== 0 || length < RECORD_BATCH_OVERHEAD || buf[b + 4] !== 2) return null;
    const count = buf.readInt32BE(b + 45);
    if (count < 0 || count > length) return null;
    total += count;
    batches++;
    o = b + length;
  }
  if (total === 0) return null;
  const positions = new Float64Array(total);
  const valueAt = new Int32Array(total);
  const valueLen = new Int32Array(total);
  const keyAt = new Int32Array(total);
  const keyLen = new Int32Array(total);
  const createTimes = new Float64Array(total);
  const batchOf = new Uint32Array(total);
  const contexts: Array<FastRecord['batchContext']> = [];
  let r = 0;
  for (let o = 0, k = 0; k < batches; k++) {
    const length = buf.readInt32BE(o + 8);
    const b = o + 12;
    const end = b + length;
    const head = batchHead(buf, o);
    if (head === null) return null;
    const { offsetBase, tsBase } = head;
    contexts.push(head.context);
    const count = buf.readInt32BE(b + 45);
    let next = b + RECORD_BATCH_OVERHEAD;
    for (let i = 0; i < count; i++, r++) {
      pos = next;
      const len = varInt(buf);
      const stop = pos + len;
      if (len <= 0 || stop > end || buf[pos++] !== 0) return null;
      next = stop;
      const ts = tsBase + varLong(buf);
      const offset = offsetBase + varInt(buf);
      const kl = varInt(buf);
      const ka = pos;
      if (kl > 0) pos += kl;
      const vl = varInt(buf);
      const va = pos;
      if (vl > 0) pos += vl;
      const headers = varInt(buf);
      if (pos !== stop || kl < -1 || vl < -1 || (headers !== 0 && headers !== -1) || !Number.isSafeInteger(ts) || !Number.isSafeInteger(offset)) return null;
      positions[r] = offset;
      keyAt[r] = kl === -1 ? -1 : ka;
      keyLen[r] = kl;
      valueAt[r] = va;
      valueLen[r] = vl;
      createTimes[r] = ts;
      batchOf[r] = k;
    }
    o = end;
  }
  recordPaths.runs++;
  recordPaths.fastBatches += batches;
  const run = new RecordRun(buf, total, positions, valueAt, valueLen, keyAt, keyLen, createTimes, batchOf, contexts);
  run.hold = holdFrame(buf);
  return run;
}

/** kafkajs's v4/decodeMessages with the fast path for record batches. */
export async function decodeMessages(decoder: KjsDecoder): Promise<KjsMessage[]> {
  const messagesSize = decoder.readInt32();
  if (messagesSize <= 0 || !decoder.canReadBytes(messagesSize)) return [];
  const messagesBuffer = decoder.readBytes(messagesSize);
  const messagesDecoder = new K!.Decoder(messagesBuffer);
  const magicByte = messagesBuffer.subarray(MAGIC_OFFSET).readInt8(0);
  if (magicByte !== K!.MAGIC_BYTE) return K!.MessageSetDecoder(messagesDecoder, messagesSize);
  if (runsWanted()) {
    const run = decodeRun(messagesBuffer);
    if (run !== null) return run.messages;
  }
  const records: KjsMessage[] = [];
  while (messagesDecoder.canReadBytes(RECORD_BATCH_OVERHEAD)) {
    try {
      const done = fastBatch(messagesDecoder, records);
      if (done === PARTIAL) break;
      if (done === DECODED) continue;
      recordPaths.kafkajsBatches++;
      const batch = await K!.RecordBatchDecoder(messagesDecoder);
      for (const r of batch.records) records.push(r);
    } catch (e) {
      // As kafkajs: the tail of a fetch can be a partial batch (maxBytes cuts it).
      if ((e as Error).name === 'KafkaJSPartialMessageError') break;
      throw e;
    }
  }
  return records;
}

/**
 * Puts decodeMessages in place of kafkajs's before its first fetch; true when it is (now or
 * already) in place, false when kafkajs had loaded its own first or is not the release this mirrors.
 */
export function installFastRecords(): boolean {
  if (K === null) return false;
  const path = K.decodeMessagesPath;
  const cached = kafkajsRequire.cache[path];
  if (cached !== undefined) return cached.exports === decodeMessages;
  const m = new Module(path);
  m.filename = path;
  m.loaded = true;
  m.exports = decodeMessages;
  kafkajsRequire.cache[path] = m;
  return true;
}
