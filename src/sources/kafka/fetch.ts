// One kafkajs fetch cut into pool-sized batches. Each batch carries its records' positions (for
// commits and dead letters) and keys; values too long to decode are cut, stand-ins for records a
// decompression bound refused are kept as empty messages with their reason, so every record is either
// decoded or dead-lettered and a commit never skips one silently.
import type { KafkaMessage } from 'kafkajs';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE } from '../../kafka/codecs.js';
import { PackedKeys } from '../../core/batch.js';
import { holdFrame } from '../../kafka/frame-pool.js';
import type { BufferRecycler } from '../recycle.js';
import type { SourceBatch } from '../types.js';
import { FastRecord } from './fast-record.js';
import type { RecordRun } from './runs.js';

export interface FetchCutOptions {
  /** Messages per batch handed to the pool. */
  readonly batchSize: number;
  /** Bytes per batch handed to the pool. */
  readonly batchMaxBytes: number;
  /** MAX_MESSAGE_BYTES: longer values are copied cut to this + 1 bytes (enough to reject them as too_large). */
  readonly maxMessageBytes?: number;
  /**
   * Where batch buffers come from and go back to (Batch.release): a fresh shared buffer is zero pages,
   * and the first write of each page faults (./recycle.ts). Without one, every batch gets a fresh buffer.
   */
  readonly recycler?: BufferRecycler;
}

/** The part of a kafkajs Batch this reads. */
export interface Fetched {
  readonly messages: readonly KafkaMessage[];
  lastOffset(): string;
  /** A batch of a record run (./batch.ts): its messages are run's records from runFrom on. */
  readonly run?: RecordRun;
  readonly runFrom?: number;
}

/**
 * Bytes between two values of a record set (the next record's framing and key) below which the two
 * are copied in one copy, framing and all (Batch.ends marks where each value ends): a copy a value
 * cost more than copying a few hundred bytes more.
 */
export const MAX_RUN_GAP = 512;

/** A stand-in for a record of a compressed batch refused by the decompression bound (kafka/codecs.ts). */
function isRefused(m: KafkaMessage): boolean {
  return (m as { attributes?: number }).attributes === REFUSED_RECORD_ATTRIBUTE && m.value !== null && m.value.length === 0;
}

/** Bytes of m that go into a batch: its value, cut to `cap` (none for a tombstone or a refused stand-in, which are empty). */
function packedLength(m: KafkaMessage, cap: number): number {
  // A FastRecord's value view is made only when read: its length is at hand without one.
  const n = m instanceof FastRecord ? m.valueLength : (m.value?.length ?? 0);
  return n > cap ? cap : n > 0 ? n : 0;
}

export function cutFetch(lane: number, fetched: Fetched, o: FetchCutOptions): SourceBatch[] {
  if (fetched.run !== undefined) return cutRun(lane, fetched.run, fetched.runFrom ?? 0, o);
  const out: SourceBatch[] = [];
  const msgs = fetched.messages;
  const cap = o.maxMessageBytes === undefined ? Infinity : o.maxMessageBytes + 1;
  const state: CutState = { refusal: null };
  for (let lo = 0; lo < msgs.length; ) {
    // Where the batch ends and what it holds, before anything is copied: its buffer is made once, at
    // that size, and never grows (a batch ends at batchSize messages or once it holds batchMaxBytes).
    let hi = lo;
    let bytes = 0;
    do bytes += packedLength(msgs[hi++]!, cap);
    while (hi < msgs.length && hi - lo < o.batchSize && bytes < o.batchMaxBytes);
    const endPosition = hi === msgs.length ? Number(fetched.lastOffset()) + 1 : Number(msgs[hi]!.offset);
    out.push(pack(lane, msgs, lo, hi, bytes, endPosition, o, state));
    lo = hi;
  }
  return out;
}

/** What one batch of a fetch passes to the next. */
interface CutState {
  /** The last refusal reason seen in the fetch: a stand-in without one of its own is refused for it. */
  refusal: string | null;
}

/** Messages lo..hi (bytes of them in all) copied into one shared buffer, with their positions and keys. */
function pack(lane: number, msgs: readonly KafkaMessage[], lo: number, hi: number, bytes: number, endPosition: number, o: FetchCutOptions, state: CutState): SourceBatch {
  // Sized to the batch, not to a fixed size: the intake counts message bytes, not capacity, and every
  // byte of a batch's capacity is resident while it waits (1 MiB buffers for 100-message batches grew
  // the overload test's RSS by ~150 MiB). A recycled buffer is at most twice the size class of the batch.
  const data = (o.recycler === undefined ? Buffer.from(new SharedArrayBuffer(bytes)) : o.recycler.allocate(bytes)).subarray(0, bytes);
  const count = hi - lo;
  const offsets = new Uint32Array(count + 1);
  // Fast-path records of one record set (the common fetch): positions as numbers, keys as ranges of
  // the set, so a batch holds no string or Buffer per message. Any other: strings and Buffers.
  const first = msgs[lo];
  const set = first instanceof FastRecord ? first.set : null;
  let packed = set !== null;
  for (let i = lo; packed && i < hi; i++) {
    const m = msgs[i];
    packed = m instanceof FastRecord && m.set === set;
  }
  const numbers = packed ? new Float64Array(count) : null;
  const keyAt = packed ? new Int32Array(count) : null;
  const keyLen = packed ? new Int32Array(count) : null;
  const positions = packed ? null : new Array<string>(count);
  const keys = packed ? null : new Array<Buffer | null>(count);
  let oversized: Map<number, { bytes: number; detail?: string }> | null = null;
  const maxMessageBytes = o.maxMessageBytes ?? Infinity;
  let at = 0;
  let keyed = false;
  for (let i = 0; i < count; i++) {
    const m = msgs[lo + i]!;
    if (numbers !== null) {
      const f = m as FastRecord;
      numbers[i] = f.position;
      keyAt![i] = f.keyLength === -1 ? -1 : f.keyAt;
      keyLen![i] = f.keyLength;
      if (f.keyLength !== -1) keyed = true;
    } else {
      positions![i] = m.offset;
      keys![i] = m.key ?? null;
    }
    offsets[i] = at;
    if (m instanceof FastRecord && (m.valueLength !== 0 || m.attributes !== REFUSED_RECORD_ATTRIBUTE)) {
      // Copied straight from the fetch's bytes, without a view of the value.
      const n = m.valueLength;
      if (n > maxMessageBytes) (oversized ??= new Map()).set(i, { bytes: n });
      if (n > 0) at += m.copyValue(data, at, n > maxMessageBytes ? maxMessageBytes + 1 : n);
      continue;
    }
    const v = m.value;
    if (v !== null && v.length === 0 && isRefused(m)) {
      const h = m.headers?.[REFUSED_HEADER];
      if (h !== undefined) state.refusal = String(h);
      (oversized ??= new Map()).set(i, { bytes: -1, detail: state.refusal ?? 'compressed record batch over the decompression bound: refused' });
    } else if (v !== null && v.length > maxMessageBytes) {
      // Only what the decoder needs to reject it as too_large (and the dead letter keeps) is copied.
      (oversized ??= new Map()).set(i, { bytes: v.length });
      at += v.copy(data, at, 0, maxMessageBytes + 1);
    } else if (v !== null && v.length > 0) {
      // A null value (tombstone) becomes an empty message: dead-lettered as empty_message, not dropped.
      // fill, not copy: Buffer.copy of a whole view is a TypedArray set, byte by byte into shared memory.
      data.fill(v, at, at + v.length);
      at += v.length;
    }
  }
  offsets[count] = at;
  const batch: SourceBatch = {
    lane,
    data,
    offsets,
    positions: numbers ?? positions!,
    // Packed keys hold the fetch's bytes while the batch waits: only where there is a key to show
    // (a batch without keys lets them go once its values are copied, as before).
    ...(numbers === null ? { keys: keys! } : keyed ? { keys: new PackedKeys(set!, keyAt!, keyLen!) } : {}),
    startPosition: numbers !== null ? numbers[0]! : Number(positions![0]),
    endPosition,
    // Only a batch's first and last timestamps are kept: parse no other.
    firstTimestampMs: Number(msgs[lo]!.timestamp),
    lastTimestampMs: Number(msgs[hi - 1]!.timestamp),
    ...(oversized === null ? {} : { oversized }),
  };
  return o.recycler === undefined ? batch : o.recycler.track(batch);
}

/** cutFetch for a record run: records from..count, cut where cutFetch cuts, values copied in runs. */
function cutRun(lane: number, run: RecordRun, from: number, o: FetchCutOptions): SourceBatch[] {
  const out: SourceBatch[] = [];
  const cap = o.maxMessageBytes === undefined ? Infinity : o.maxMessageBytes + 1;
  const len = run.valueLen;
  for (let lo = from; lo < run.count; ) {
    let hi = lo;
    let bytes = 0;
    do {
      const n = len[hi++]!;
      bytes += n > cap ? cap : n > 0 ? n : 0;
    } while (hi < run.count && hi - lo < o.batchSize && bytes < o.batchMaxBytes);
    // As cutFetch: a batch ends where the next one starts (a compacted log's gap included).
    const endPosition = hi < run.count ? run.positions[hi]! : run.positions[hi - 1]! + 1;
    // In a response of the frame pool: a view of it, holding it (before the run lets go below).
    const release = run.hold === null ? null : holdFrame(run.set);
    out.push(release === null ? packRun(lane, run, lo, hi, endPosition, o) : viewRun(lane, run, lo, hi, endPosition, release, o));
    lo = hi;
  }
  // Cut: the batches hold the response now, and a run is cut once (kafkajs hands its batch over once).
  run.hold?.();
  run.hold = null;
  return out;
}

/**
 * Records lo..hi of a run as a view of the response they arrived in: each value where it lies
 * (Batch.ends says where each one ends; the record framing, keys and headers between two values are
 * no message's), cut to maxMessageBytes + 1 as packRun cuts it. The view holds the response until the
 * engine releases the batch (`release`); the worker reads it in place.
 */
function viewRun(lane: number, run: RecordRun, lo: number, hi: number, endPosition: number, release: () => void, o: FetchCutOptions): SourceBatch {
  const count = hi - lo;
  const offsets = new Uint32Array(count + 1);
  const ends = new Uint32Array(count);
  const cap = o.maxMessageBytes === undefined ? Infinity : o.maxMessageBytes + 1;
  const valueAt = run.valueAt;
  const valueLen = run.valueLen;
  let oversized: Map<number, { bytes: number }> | null = null;
  // A null value's position is where it would start: every record's is at or after the end of the
  // one before, so the messages are in order in the view.
  const base = valueAt[lo]!;
  for (let i = lo; i < hi; i++) {
    const v = valueLen[i]!;
    let n = v > 0 ? v : 0;
    if (n >= cap) {
      (oversized ??= new Map()).set(i - lo, { bytes: n });
      n = cap;
    }
    const at = valueAt[i]! - base;
    offsets[i - lo] = at;
    ends[i - lo] = at + n;
  }
  offsets[count] = ends[count - 1]!;
  return { ...batchOfRun(lane, run, lo, hi, endPosition, run.set.subarray(base, base + offsets[count]!), offsets, ends, oversized), release };
}

/** Records lo..hi of a run as a batch whose values are `data` at offsets and ends. */
function batchOfRun(lane: number, run: RecordRun, lo: number, hi: number, endPosition: number, data: Buffer, offsets: Uint32Array, ends: Uint32Array, oversized: Map<number, { bytes: number }> | null): SourceBatch {
  let keyed = false;
  const keyLen = run.keyLen;
  for (let i = lo; i < hi && !keyed; i++) keyed = keyLen[i] !== -1;
  const positions = run.positions.slice(lo, hi);
  return {
    lane,
    data,
    offsets,
    ends,
    positions,
    ...(keyed ? { keys: new PackedKeys(run.set, run.keyAt.slice(lo, hi), keyLen.slice(lo, hi)) } : {}),
    startPosition: positions[0]!,
    endPosition,
    firstTimestampMs: run.timestampMs(lo),
    lastTimestampMs: run.timestampMs(hi - 1),
    ...(oversized === null ? {} : { oversized }),
  };
}

/**
 * Records lo..hi of a run in one shared buffer: each stretch of values whose gaps are under
 * MAX_RUN_GAP is one copy, gaps included (ends says where each value ends); a value over
 * maxMessageBytes is cut as cutFetch cuts it, and ends its stretch. For a set that is not in a
 * response of the frame pool (viewRun): a response small enough to be copied out of the framer's
 * scratch, one read over TLS. Copies go back to the recycler once applied.
 */
function packRun(lane: number, run: RecordRun, lo: number, hi: number, endPosition: number, o: FetchCutOptions): SourceBatch {
  const count = hi - lo;
  const offsets = new Uint32Array(count + 1);
  const ends = new Uint32Array(count);
  const maxMessageBytes = o.maxMessageBytes ?? Infinity;
  const valueAt = run.valueAt;
  const valueLen = run.valueLen;
  // The copies as [from, to) ranges of the set, worked out before the buffer is made at its size.
  const copies: number[] = [];
  let oversized: Map<number, { bytes: number }> | null = null;
  let size = 0;
  let from = -1;
  let to = -1;
  for (let i = lo; i < hi; i++) {
    const at = valueAt[i]!;
    const v = valueLen[i]!;
    let n = v > 0 ? v : 0;
    if (n > maxMessageBytes) {
      (oversized ??= new Map()).set(i - lo, { bytes: n });
      n = maxMessageBytes + 1;
    }
    if (to >= 0 && at >= to && at - to <= MAX_RUN_GAP) {
      size += at - to;
    } else {
      if (to >= 0) copies.push(from, to);
      from = at;
    }
    offsets[i - lo] = size;
    size += n;
    ends[i - lo] = size;
    to = at + n;
    // A cut value's rest is not copied: the next value starts a copy of its own.
    if (n !== v && v > 0) {
      copies.push(from, to);
      to = -1;
    }
  }
  if (to >= 0) copies.push(from, to);
  offsets[count] = size;
  const data = (o.recycler === undefined ? Buffer.from(new SharedArrayBuffer(size)) : o.recycler.allocate(size)).subarray(0, size);
  for (let c = 0, at = 0; c < copies.length; c += 2) at += run.set.copy(data, at, copies[c]!, copies[c + 1]!);
  const batch = batchOfRun(lane, run, lo, hi, endPosition, data, offsets, ends, oversized);
  return o.recycler === undefined ? batch : o.recycler.track(batch);
}
