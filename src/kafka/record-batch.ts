// Kafka record batches (magic 2, the only format a produce request v3+ carries), written by us into
// one buffer per batch: records appended as bytes (key and value copied from the caller's buffers, or
// written from strings), then the 61-byte header and the CRC32C (./crc32c.ts) filled in when the
// producer's id, epoch and sequence are known (at request encoding). kafkajs 2.2.4's encoder made a
// Buffer per field and per record, grew and concatenated them, and checksummed byte by byte in
// JavaScript: most of the ~35 us of CPU a statistics row cost the Kafka sink.
//
// Pure: rows or messages in, bytes out, no I/O and no state outside the writer, so a worker can run it.
//
// Layout (Kafka's DefaultRecordBatch):
//   baseOffset int64 | length int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32 |
//   attributes int16 | lastOffsetDelta int32 | firstTimestamp int64 | maxTimestamp int64 |
//   producerId int64 | producerEpoch int16 | baseSequence int32 | records count int32 | records
// The CRC covers attributes to the end. A record: length varint | attributes int8 | timestampDelta
// varlong | offsetDelta varint | key (varint length, -1 = null) | value (the same) | headers (varint
// count, then key as varint-length string and value as varint-length bytes, -1 = null).
import type { BufferPool } from './buffer-pool.js';
import { compressRecords } from './compressors.js';
import { crc32c, crc32cCombine } from './crc32c.js';
import { putRange, putRangeRecord, putRecordHead, putVarint, rangeRecordBody, varintBytes, varlongBytes } from './varint.js';

export { rangeRecordBytes, varintBytes, varlongBytes } from './varint.js';

/** Header bytes before the first record. */
export const BATCH_HEADER_BYTES = 61;
/** A record's bytes beyond its key, value and headers: length, attributes, deltas, two lengths, header count. */
export const RECORD_FRAMING_MAX_BYTES = 5 + 1 + 10 + 5 + 5 + 5 + 5;

const MAGIC = 2;
const TRANSACTIONAL_FLAG = 0x10;
const CODEC_MASK = 0x07;
/** Where the CRC'd part starts (attributes). */
const CRC_FROM = 21;

/** What a batch's header says about its producer, known only when the request is encoded. */
export interface BatchProducer {
  /** -1 when the producer is neither idempotent nor transactional. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
  /** The sequence number of the batch's first record (-1 without a producer id). */
  readonly firstSequence: number;
  readonly transactional: boolean;
}

/** A record header: its key, and its value (null writes Kafka's null, length -1). */
export interface RecordHeader {
  readonly key: string;
  readonly value: Buffer | string | null;
}

function byteLength(v: Buffer | string | null | undefined): number {
  if (v === null || v === undefined) return -1;
  return typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

function putBytes(b: Buffer, o: number, v: Buffer | string | null | undefined, n: number): number {
  o = putVarint(b, o, n);
  if (n <= 0) return o;
  if (typeof v === 'string') return o + b.write(v, o);
  return putRange(b, o, v!, 0, n);
}

/**
 * One record batch being written: records appended in offset order, then sealed (header and CRC)
 * once the producer's fields are known. The buffer is sized by the caller (recordBytes() of each
 * record it will hold) and grows only if that was short. A writer may also write into a region of a
 * buffer it does not own (a produce request laid out ahead, each partition's batch in its place, so
 * the request is sent without copying the batches into it); should the region be short, the writer
 * moves to a buffer of its own.
 */
export class RecordBatchWriter {
  #buf: Buffer;
  /** Where the batch starts in #buf (0 unless in a region). */
  #base = 0;
  /** The end of the writer's room in #buf. */
  #limit: number;
  /** True while #buf is someone else's (a region). */
  #borrowed = false;
  #pos = BATCH_HEADER_BYTES;
  #count = 0;
  /** The CRC32C of the records when appendRecords() was told it (-1: not known). */
  #recordsCrc = -1;
  #maxTimestampDelta = 0;

  /**
   * capacity: bytes of the records to come (their recordBytes() summed, or an estimate). With a pool,
   * the buffer comes from it, and release() hands it back. With a region, the batch is written at
   * region[base, base + BATCH_HEADER_BYTES + capacity), a buffer the caller owns (release() leaves it
   * alone); records that outgrow it move to a buffer from the pool.
   */
  constructor(capacity: number, private readonly pool: BufferPool | null = null, region: Buffer | null = null, base = 0) {
    const n = BATCH_HEADER_BYTES + Math.max(0, capacity);
    if (region === null) {
      this.#buf = pool === null ? Buffer.allocUnsafe(n) : pool.take(n);
      this.#limit = this.#buf.length;
    } else {
      this.#buf = region;
      this.#base = base;
      this.#limit = Math.min(region.length, base + n);
      this.#pos = base + BATCH_HEADER_BYTES;
      this.#borrowed = true;
    }
  }

  #moveTo(own: Buffer): void {
    const used = this.#pos - this.#base;
    this.#buf.copy(own, 0, this.#base, this.#pos);
    if (!this.#borrowed) this.pool?.give(this.#buf);
    this.#buf = own;
    this.#base = 0;
    this.#limit = own.length;
    this.#pos = used;
    this.#borrowed = false;
  }

  /** True while the batch lies at buf[base, ...): written in the caller's region, not moved. */
  isAt(buf: Buffer, base: number): boolean {
    return this.#borrowed && this.#buf === buf && this.#base === base;
  }

  /**
   * Moves the records out of a region into a buffer of the writer's own (nothing if not in one): the
   * region may then be sent or reused while this batch is sealed again elsewhere.
   */
  detach(): void {
    if (!this.#borrowed) return;
    const n = this.#pos - this.#base;
    this.#moveTo(this.pool === null ? Buffer.allocUnsafe(n) : this.pool.take(n));
  }

  /** Gives the buffer back to the pool (the writer and what seal() returned are not used again); a region stays its owner's. */
  release(): void {
    if (!this.#borrowed) this.pool?.give(this.#buf);
  }

  /** Records appended so far. */
  get count(): number {
    return this.#count;
  }

  /** Bytes of the batch so far, header included. */
  get size(): number {
    return this.#pos - this.#base;
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#limit) return;
    const size = Math.max(2 * (this.#limit - this.#base), this.#pos - this.#base + n);
    this.#moveTo(this.pool === null ? Buffer.allocUnsafe(size) : this.pool.take(size));
  }

  /** Room for a record of `bodyBytes` (its length varint too), and what its timestamp delta tells the header. */
  #begin(bodyBytes: number, timestampDelta: number): void {
    this.#recordsCrc = -1;
    this.#ensure(varintBytes(bodyBytes) + bodyBytes);
    if (timestampDelta > this.#maxTimestampDelta) this.#maxTimestampDelta = timestampDelta;
  }

  /**
   * A record whose key is key[ks, ke) (key null: a null key) and whose value is value[vs, ve), without
   * headers: the bytes are copied as they are. The statistics sink's path: no object per record.
   */
  appendRange(key: Buffer | null, ks: number, ke: number, value: Buffer, vs: number, ve: number, timestampDelta = 0): void {
    const body = rangeRecordBody(key === null ? -1 : ke - ks, ve - vs, this.#count, timestampDelta);
    this.#begin(body, timestampDelta);
    this.#pos = putRangeRecord(this.#buf, this.#pos, body, key, ks, ke, value, vs, ve, this.#count, timestampDelta);
    this.#count++;
  }

  /**
   * Records already written as a batch's body (numbered 0..count-1, timestamp deltas 0: what
   * src/sinks/kafka/row-records.ts writes), copied in as they are: only into an empty batch.
   */
  appendRecords(src: Uint8Array, start: number, end: number, count: number, crc?: number): void {
    if (this.#count !== 0) throw new Error('RecordBatchWriter.appendRecords: the batch already has records, and these are numbered from 0');
    this.#ensure(end - start);
    this.#recordsCrc = crc === undefined ? -1 : crc >>> 0;
    // Buffer's copy, one memmove: set() from shared memory (a worker's slab) copies element by element.
    Buffer.prototype.copy.call(src, this.#buf, this.#pos, start, end);
    this.#pos += end - start;
    this.#count = count;
  }

  /** A record from a key, a value (strings as UTF-8; null or undefined: Kafka's null) and headers. */
  append(key: Buffer | string | null | undefined, value: Buffer | string | null | undefined, headers: readonly RecordHeader[] = [], timestampDelta = 0): void {
    const kn = byteLength(key);
    const vn = byteLength(value);
    let hb = varintBytes(headers.length);
    const hk = new Array<number>(headers.length);
    const hv = new Array<number>(headers.length);
    for (let i = 0; i < headers.length; i++) {
      const h = headers[i]!;
      hk[i] = Buffer.byteLength(h.key);
      hv[i] = byteLength(h.value);
      hb += varintBytes(hk[i]!) + hk[i]! + varintBytes(hv[i]!) + Math.max(hv[i]!, 0);
    }
    const body = 1 + varlongBytes(timestampDelta) + varintBytes(this.#count) + varintBytes(kn) + Math.max(kn, 0) + varintBytes(vn) + Math.max(vn, 0) + hb;
    this.#begin(body, timestampDelta);
    let o = putRecordHead(this.#buf, this.#pos, body, timestampDelta, this.#count);
    const b = this.#buf;
    o = putBytes(b, o, key, kn);
    o = putBytes(b, o, value, vn);
    o = putVarint(b, o, headers.length);
    for (let i = 0; i < headers.length; i++) {
      o = putBytes(b, o, headers[i]!.key, hk[i]!);
      o = putBytes(b, o, headers[i]!.value, hv[i]!);
    }
    this.#pos = o;
    this.#count++;
  }

  /**
   * The batch: header written in place (the writer's buffer, valid until the writer seals again),
   * records as appended (codec 0) or compressed into a new buffer. firstTimestamp is the base of the
   * records' timestamp deltas (the records of a batch without timestamps: the time it is sealed).
   */
  async seal(codec: number, firstTimestamp: number, producer: BatchProducer): Promise<Buffer> {
    const c = codec & CODEC_MASK;
    if (c === 0) return this.sealUncompressed(firstTimestamp, producer);
    const compressed = await compressRecords(c, this.#buf.subarray(this.#base + BATCH_HEADER_BYTES, this.#pos));
    const out = Buffer.allocUnsafe(BATCH_HEADER_BYTES + compressed.length);
    compressed.copy(out, BATCH_HEADER_BYTES);
    return this.#sealed(out, 0, out.length, c, firstTimestamp, producer);
  }

  /** seal() without a codec, synchronous: the header and CRC written where the records lie. */
  sealUncompressed(firstTimestamp: number, producer: BatchProducer): Buffer {
    return this.#sealed(this.#buf, this.#base, this.#pos, 0, firstTimestamp, producer);
  }

  #sealed(b: Buffer, at: number, end: number, codec: number, firstTimestamp: number, p: BatchProducer): Buffer {
    b.writeBigInt64BE(0n, at);
    b.writeInt32BE(end - at - 12, at + 8);
    // As kafkajs: the broker sets the partition leader epoch when it appends the batch.
    b.writeInt32BE(0, at + 12);
    b[at + 16] = MAGIC;
    b.writeInt16BE(codec | (p.transactional ? TRANSACTIONAL_FLAG : 0), at + 21);
    b.writeInt32BE(this.#count - 1, at + 23);
    b.writeBigInt64BE(BigInt(firstTimestamp), at + 27);
    b.writeBigInt64BE(BigInt(firstTimestamp + this.#maxTimestampDelta), at + 35);
    b.writeBigInt64BE(p.producerId, at + 43);
    b.writeInt16BE(p.producerEpoch, at + 51);
    b.writeInt32BE(p.firstSequence, at + 53);
    b.writeInt32BE(this.#count, at + 57);
    // Records checksummed where they were written: only the header's 40 bytes here.
    const crc = codec === 0 && this.#recordsCrc >= 0 ? crc32cCombine(crc32c(b, at + CRC_FROM, at + BATCH_HEADER_BYTES), this.#recordsCrc, end - at - BATCH_HEADER_BYTES) : crc32c(b, at + CRC_FROM, end);
    b.writeUInt32BE(crc, at + 17);
    return at === 0 && end === b.length ? b : b.subarray(at, end);
  }
}

/** The bytes appendRange() writes for a record of kn key bytes (-1: null) and vn value bytes, at most. */
export function recordBytes(kn: number, vn: number): number {
  return RECORD_FRAMING_MAX_BYTES + Math.max(kn, 0) + vn;
}

/** A message as kafkajs's producer takes it (the fields the encoder reads). */
export interface PlainMessage {
  readonly key?: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: Readonly<Record<string, Buffer | string | ReadonlyArray<Buffer | string> | undefined>>;
  readonly timestamp?: string | number;
}

/** kafkajs's header object as a list, in its order (an array value is one header per element). */
export function headerList(h: PlainMessage['headers']): RecordHeader[] {
  if (h === undefined) return [];
  const out: RecordHeader[] = [];
  for (const key of Object.keys(h)) {
    const v = h[key];
    if (Array.isArray(v)) for (const x of v as ReadonlyArray<Buffer | string>) out.push({ key, value: x });
    else out.push({ key, value: (v as Buffer | string | undefined) ?? null });
  }
  return out;
}

/**
 * kafkajs messages as one batch, with kafkajs's timestamps: a message's own (ms, as a number or a
 * string) or `now`; the batch's first timestamp is the smallest of them.
 */
export async function encodeMessages(messages: readonly PlainMessage[], codec: number, producer: BatchProducer, now: number): Promise<Buffer> {
  const ts = messages.map((m) => (m.timestamp === undefined || m.timestamp === null || m.timestamp === '' ? now : Number(m.timestamp)));
  let first = Infinity;
  for (const t of ts) if (t < first) first = t;
  if (first === Infinity) first = now;
  let capacity = 0;
  for (const m of messages) capacity += recordBytes(byteLength(m.key), Math.max(byteLength(m.value), 0)) + 64;
  const w = new RecordBatchWriter(capacity);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    w.append(m.key, m.value, headerList(m.headers), ts[i]! - first);
  }
  return w.seal(codec, first, producer);
}
