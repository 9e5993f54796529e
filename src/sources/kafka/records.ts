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
// A fast-path record is a FastRecord: the fields kafkajs and the source read on every record (offset,
// key, attributes, batchContext) are its own; its value view, timestamp string and empty headers are
// made only when read, since the source copies the value straight from the fetch's bytes (copyValue)
// and reads two timestamps per batch, and nothing else reads them.
// kafkajs loads the fetch response decoder (v4/decodeMessages.js) lazily, on the first fetch: install()
// puts this one in its place in the CommonJS module cache before that. If it was loaded already,
// install() leaves kafkajs alone and says so.
import Module from 'node:module';
import { kafkajsInternals, kafkajsRequire } from '../../kafka/internals.js';

const KJS = 'kafkajs/src/protocol/';

interface KjsDecoder {
  buffer: Buffer;
  offset: number;
  readInt32(): number;
  readBytes(n: number): Buffer;
  canReadBytes(n: number): boolean;
}
type KjsMessage = Record<string, unknown>;

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
const LOG_APPEND_TIME = 1;
const CREATE_TIME = 0;

/**
 * A record of the fast path: reads as kafkajs's message object, field for field. Its offset string
 * and key view are made only when read, like its value: kafkajs reads a few offsets a batch, and the
 * source packs keys as ranges of the record set (PackedKeys), so a string and a Buffer per record
 * were made for nothing.
 */
export class FastRecord {
  declare readonly isControlRecord: false;
  constructor(
    readonly attributes: number,
    /** The offset as a number (a safe integer: the fast path takes no other). */
    readonly position: number,
    /** Where the key is in the record set, and how long (-1: null). */
    readonly keyAt: number,
    readonly keyLength: number,
    readonly batchContext: { readonly magicByte: number; readonly maxTimestamp: string; readonly timestampType: number },
    /** The record set the key and value are in; the value's place and length (-1: null). */
    readonly set: Buffer,
    private readonly valueAt: number,
    readonly valueLength: number,
    /** The record's own timestamp (a LOG_APPEND_TIME batch's records read its max timestamp instead). */
    private readonly createTime: number,
  ) {}

  get offset(): string {
    return String(this.position);
  }

  get key(): Buffer | null {
    return this.keyLength === -1 ? null : this.set.subarray(this.keyAt, this.keyAt + this.keyLength);
  }

  get magicByte(): number {
    return this.batchContext.magicByte;
  }

  get timestamp(): string {
    const b = this.batchContext;
    return b.timestampType === LOG_APPEND_TIME && b.maxTimestamp ? b.maxTimestamp : String(this.createTime);
  }

  get value(): Buffer | null {
    return this.valueLength === -1 ? null : this.set.subarray(this.valueAt, this.valueAt + this.valueLength);
  }

  get headers(): Record<string, never> {
    return {};
  }

  /**
   * Copies the first `n` bytes of the value to `target` at `at`; returns n. From the record set with
   * a source range: Buffer.copy of a part of a buffer is a native copy, while a whole view (a value's
   * own) goes through TypedArray set, byte by byte into shared memory (3x slower per 500-byte value).
   */
  copyValue(target: Buffer, at: number, n: number): number {
    return this.set.copy(target, at, this.valueAt, this.valueAt + n);
  }
}
Object.defineProperty(FastRecord.prototype, 'isControlRecord', { value: false });

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
 * One partition's record set as columns: what FastRecords would hold, record by record, without an
 * object per record. Made only where every record of the set takes the fast path and has attributes
 * 0 (the columns keep none); the source cuts batches from the columns (./fetch.ts) and copies runs of
 * values in one copy each. kafkajs sees `messages`: an array of the records' number whose first and
 * last elements are FastRecords and the rest holes, which only FastBatch (./batch.ts) reads (runs are
 * made only once it is in kafkajs's place, and kept as runs only for the topics of useRuns).
 */
export class RecordRun {
  readonly messages: KjsMessage[];

  constructor(
    readonly set: Buffer,
    readonly count: number,
    readonly positions: Float64Array,
    /** Where each value is in the set and how long (-1: null). */
    readonly valueAt: Int32Array,
    readonly valueLen: Int32Array,
    /** Where each key is in the set (-1: null) and how long (-1: null). */
    readonly keyAt: Int32Array,
    readonly keyLen: Int32Array,
    readonly createTimes: Float64Array,
    /** The record batch each record is from, an index into contexts. */
    readonly batchOf: Uint32Array,
    readonly contexts: ReadonlyArray<FastRecord['batchContext']>,
  ) {
    const m = new Array<KjsMessage>(count);
    m[0] = this.record(0) as unknown as KjsMessage;
    m[count - 1] = this.record(count - 1) as unknown as KjsMessage;
    this.messages = m;
    runs.set(m, this);
  }

  /** Record i as the fast decoder makes it. */
  record(i: number): FastRecord {
    const keyLen = this.keyLen[i]!;
    return new FastRecord(0, this.positions[i]!, keyLen === -1 ? -1 : this.keyAt[i]!, keyLen, this.contexts[this.batchOf[i]!]!, this.set, this.valueAt[i]!, this.valueLen[i]!, this.createTimes[i]!);
  }

  /** Record i's timestamp in ms, as Number(record(i).timestamp). */
  timestampMs(i: number): number {
    const b = this.contexts[this.batchOf[i]!]!;
    return b.timestampType === LOG_APPEND_TIME && b.maxTimestamp ? Number(b.maxTimestamp) : this.createTimes[i]!;
  }

  /** Every record as a FastRecord: what decodeMessages returns for the same set. */
  materialize(): KjsMessage[] {
    const out = new Array<KjsMessage>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.record(i) as unknown as KjsMessage;
    return out;
  }
}

const runs = new WeakMap<readonly unknown[], RecordRun>();

/** The run whose `messages` these are (undefined for any other array). */
export function runOf(messages: readonly unknown[]): RecordRun | undefined {
  return runs.get(messages);
}

/** Set once FastBatch is kafkajs's Batch: kafkajs's own would read a run's holes as missing records. */
let runsEnabled = false;

/** Called by installFastBatch once FastBatch is in kafkajs's place. */
export function enableRuns(): void {
  runsEnabled = true;
}

/**
 * Topics whose batches may be runs, with the number of sources that read them so: only a reader that
 * cuts from the run (the Kafka source) may get one. Any other consumer in the process (a tool's, a
 * test's) iterates its batches' messages, and gets every record, as FastRecords.
 */
const runTopics = new Map<string, number>();

/** The batches of `topics` may be runs until the returned function is called (once). */
export function useRuns(topics: readonly string[]): () => void {
  for (const t of topics) runTopics.set(t, (runTopics.get(t) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    for (const t of topics) {
      const n = runTopics.get(t)! - 1;
      if (n === 0) runTopics.delete(t);
      else runTopics.set(t, n);
    }
  };
}

/** True when a batch of `topic` may be a run (FastBatch asks). */
export function runsFor(topic: string): boolean {
  return runTopics.has(topic);
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
  return new RecordRun(buf, total, positions, valueAt, valueLen, keyAt, keyLen, createTimes, batchOf, contexts);
}

/** kafkajs's v4/decodeMessages with the fast path for record batches. */
export async function decodeMessages(decoder: KjsDecoder): Promise<KjsMessage[]> {
  const messagesSize = decoder.readInt32();
  if (messagesSize <= 0 || !decoder.canReadBytes(messagesSize)) return [];
  const messagesBuffer = decoder.readBytes(messagesSize);
  const messagesDecoder = new K!.Decoder(messagesBuffer);
  const magicByte = messagesBuffer.subarray(MAGIC_OFFSET).readInt8(0);
  if (magicByte !== K!.MAGIC_BYTE) return K!.MessageSetDecoder(messagesDecoder, messagesSize);
  if (runsEnabled && runTopics.size > 0) {
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
