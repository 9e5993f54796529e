// One kafkajs fetch cut into pool-sized batches. Each batch carries its records' positions (for
// commits and dead letters) and keys; values too long to decode are cut, stand-ins for records a
// decompression bound refused are kept as empty messages with their reason, so every record is either
// decoded or dead-lettered and a commit never skips one silently.
import type { KafkaMessage } from 'kafkajs';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE } from '../../kafka/codecs.js';
import { PackedKeys } from '../../core/batch.js';
import type { BufferRecycler } from '../recycle.js';
import type { SourceBatch } from '../types.js';
import { FastRecord } from './records.js';

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
}

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
