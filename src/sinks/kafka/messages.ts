// Rows as Kafka messages: keyed by the row's identity, so a compacted topic keeps the latest row per
// window and the Java-compatible murmur2 partitioner keeps one identity in one partition.
import { murmur2View } from '../../kafka/partitioner.js';
import { RECORD_OVERHEAD_BYTES } from '../../kafka/requests.js';
import type { TopicLimits } from '../../kafka/topics.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import type { RowRecords } from '../../core/messages.js';
import type { RowRejection } from '../types.js';

/**
 * The message key of a row: JSON of [topic, partition, name, groupby pairs sorted by name, period_start],
 * with topic and partition null for an unpartitioned source. Example:
 * `["metrics",3,"cpu.idle_perc",[["hostname","h1"],["service","monitoring"]],"2020-02-11T12:42:00.000Z"]`.
 * The unit is not part of it (as in the PostgreSQL sink's upsert key): two series that differ only
 * in unit share a key.
 */
export function rowIdentityKey(r: StatsRow): string {
  const g = Object.keys(r.groupby).sort().map((k) => [k, r.groupby[k] ?? null]);
  return JSON.stringify([r.topic ?? null, r.partition ?? null, r.name, g, r.period_start]);
}

/**
 * A batch's rows as Kafka records, column by column (no object per row): message i's key is
 * keys[keyStart[i], keyEnd[i]), its value values[valueStart[i], valueEnd[i]), its partition (the
 * Java-compatible partitioner's, -1 when the topic's partitions are not known yet) partition[i], and
 * it is row rowIndex[i] of the batch. What the lanes need to cut requests and report refusals.
 */
export interface EncodedRows {
  /** Rows of the batch (the messages and the rejected). */
  readonly rowCount: number;
  /** Messages. */
  readonly count: number;
  readonly keys: Buffer;
  readonly values: Buffer;
  readonly keyStart: Int32Array;
  readonly keyEnd: Int32Array;
  readonly valueStart: Int32Array;
  readonly valueEnd: Int32Array;
  readonly partition: Int32Array;
  readonly rowIndex: Int32Array;
  /** Key and value bytes of all messages. */
  readonly bytes: number;
  /** Rows over the topic's max.message.bytes: never sent. */
  readonly rejected: RowRejection[];
  /**
   * Sections of the messages that are record-batch bodies as they stand (core/messages.ts RowRecords:
   * keys and values are then in one buffer, each record's framing around them), cut for `budget`;
   * null when the messages are to be written record by record.
   */
  readonly sections?: Int32Array | null;
  readonly budget?: number;
}

/** Key and value bytes of message i. */
export function messageSize(e: EncodedRows, i: number): number {
  return e.keyEnd[i]! - e.keyStart[i]! + e.valueEnd[i]! - e.valueStart[i]!;
}

/** Bytes written back to back into one growing buffer (UTF-8). */
class ByteRun {
  buf: Buffer;
  end = 0;
  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 256));
  }

  write(s: string): void {
    this.room(3 * s.length);
    this.end += this.buf.write(s, this.end);
  }

  room(n: number): void {
    if (this.end + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.end + n));
    this.buf.copy(bigger, 0, 0, this.end);
    this.buf = bigger;
  }

}

/**
 * The rows of a batch as records. Values: the batch's NDJSON bytes when it has them (each line is the
 * row's JSON, as json(i) and JSON.stringify write it: JSON escapes every newline inside a string), else
 * each row's JSON; keys: identityKey(i) (or rowIdentityKey), written into one buffer and hashed there
 * for the partition. No row object is made when the batch writes its own bytes.
 */
export function encodeRows(batch: RowBatch, topic: string, limits: TopicLimits): EncodedRows {
  const records = batch.rowRecords?.() ?? null;
  if (records !== null) return fromRecords(records, topic, limits);
  let values: Buffer;
  let lineEnds: ArrayLike<number>;
  let key: (i: number) => string;
  let keyInto: ((i: number, out: Buffer, at: number) => number) | null = null;
  let newlines: boolean;
  // Keys a worker wrote with the rows (windows/row-task.ts): read where they lie.
  let prebuilt: { readonly bytes: Buffer; readonly ends: Int32Array } | null = null;
  if (batch.ndjsonBytes !== undefined && batch.identityKey !== undefined) {
    newlines = true;
    values = batch.ndjsonBytes();
    const known = batch.lineEnds?.();
    if (known !== undefined) {
      lineEnds = known;
    } else {
      const found: number[] = [];
      for (let o = values.indexOf(0x0a); o !== -1; o = values.indexOf(0x0a, o + 1)) found.push(o);
      lineEnds = found;
    }
    prebuilt = batch.identityKeyBytes?.() ?? null;
    key = batch.identityKey.bind(batch);
    if (batch.identityKeyInto !== undefined) keyInto = batch.identityKeyInto.bind(batch);
  } else {
    newlines = false;
    const rows = batch.rows;
    const v = new ByteRun(rows.length * 256);
    const ends = new Array<number>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      v.write(batch.json?.(i) ?? JSON.stringify(rows[i]));
      ends[i] = v.end;
    }
    lineEnds = ends;
    values = v.buf;
    key = (i) => batch.identityKey?.(i) ?? rowIdentityKey(rows[i]!);
  }
  const n = lineEnds.length;
  const keys = new ByteRun(prebuilt === null ? n * 128 : 0);
  if (prebuilt !== null) {
    keys.buf = prebuilt.bytes;
    keys.end = 0;
  }
  const keyStart = new Int32Array(n);
  const keyEnd = new Int32Array(n);
  const valueStart = new Int32Array(n);
  const valueEnd = new Int32Array(n);
  const partition = new Int32Array(n);
  const rowIndex = new Int32Array(n);
  const rejected: RowRejection[] = [];
  const max = limits.maxMessageBytes;
  const partitions = limits.partitions;
  let bytes = 0;
  let m = 0;
  let vs = 0;
  // One view of the key buffer for every hash (a new one whenever the buffer grew).
  let view = new DataView(keys.buf.buffer, keys.buf.byteOffset, keys.buf.byteLength);
  for (let i = 0; i < n; i++) {
    const ks = keys.end;
    if (prebuilt !== null) {
      keys.end = prebuilt.ends[i]!;
    } else if (keyInto === null) {
      keys.write(key(i));
    } else {
      // The batch writes the key itself, from its cached parts; it says when the buffer is short.
      let end = keyInto(i, keys.buf, keys.end);
      while (end < 0) {
        // Room for the rest at the mean key size so far (one growth, not a doubling per size class).
        keys.room(Math.max(4096, Math.ceil(((keys.end + 1024) / (i + 1)) * (n - i) * 1.25)));
        end = keyInto(i, keys.buf, keys.end);
      }
      keys.end = end;
    }
    const ke = keys.end;
    const ve = lineEnds[i]!;
    const size = ke - ks + ve - vs;
    if (size + RECORD_OVERHEAD_BYTES > max) {
      rejected.push({ index: i, detail: oversize(size, max, topic) });
      // A key written here is taken back; a prebuilt one stays in its place, unreferenced.
      if (prebuilt === null) keys.end = ks;
    } else {
      keyStart[m] = ks;
      keyEnd[m] = ke;
      valueStart[m] = vs;
      valueEnd[m] = ve;
      // The partition the Java-compatible partitioner would pick, so requests can be cut per partition.
      if (view.buffer !== keys.buf.buffer || view.byteOffset !== keys.buf.byteOffset) view = new DataView(keys.buf.buffer, keys.buf.byteOffset, keys.buf.byteLength);
      partition[m] = partitions > 0 ? (murmur2View(view, ks, ke) & 0x7fffffff) % partitions : -1;
      rowIndex[m] = i;
      bytes += size;
      m++;
    }
    // The next value starts after this one's newline (the values built here have none).
    vs = newlines ? ve + 1 : ve;
  }
  return { rowCount: n, count: m, keys: keys.buf, values, keyStart, keyEnd, valueStart, valueEnd, partition, rowIndex, bytes, rejected };
}

/** Why a row is never sent: its key and value are over the topic's limit. */
function oversize(size: number, max: number, topic: string): string {
  return `kafka: row of ${size} bytes (key and value) is over max.message.bytes=${max} of topic ${topic}`;
}

/**
 * Rows a worker wrote as records: its columns are the messages as they are. Only what changed since
 * is redone here: the partitions when the topic's count is no longer the one they were hashed for,
 * and a row now over max.message.bytes is set aside (the sections then no longer hold; the messages
 * go record by record).
 */
function fromRecords(r: RowRecords, topic: string, limits: TopicLimits): EncodedRows {
  const n = r.rowIndex.length;
  const buf = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
  const max = limits.maxMessageBytes;
  const partitions = limits.partitions;
  let partition = r.partition;
  let sections: Int32Array | null = r.sections;
  if (partitions !== r.partitions) {
    sections = null;
    partition = new Int32Array(n);
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    for (let m = 0; m < n; m++) partition[m] = partitions > 0 ? (murmur2View(view, r.keyStart[m]!, r.keyEnd[m]!) & 0x7fffffff) % partitions : -1;
  }
  let bytes = 0;
  let over = 0;
  for (let m = 0; m < n; m++) {
    const size = r.keyEnd[m]! - r.keyStart[m]! + r.valueEnd[m]! - r.valueStart[m]!;
    if (size + RECORD_OVERHEAD_BYTES > max) over++;
    else bytes += size;
  }
  const base = { rowCount: n, keys: buf, values: buf, bytes };
  if (over === 0) {
    return { ...base, count: n, keyStart: r.keyStart, keyEnd: r.keyEnd, valueStart: r.valueStart, valueEnd: r.valueEnd, partition, rowIndex: r.rowIndex, rejected: [], sections, budget: r.budget };
  }
  const kept = n - over;
  const cols = { keyStart: new Int32Array(kept), keyEnd: new Int32Array(kept), valueStart: new Int32Array(kept), valueEnd: new Int32Array(kept), partition: new Int32Array(kept), rowIndex: new Int32Array(kept) };
  const rejected: RowRejection[] = [];
  let k = 0;
  for (let m = 0; m < n; m++) {
    const size = r.keyEnd[m]! - r.keyStart[m]! + r.valueEnd[m]! - r.valueStart[m]!;
    if (size + RECORD_OVERHEAD_BYTES > max) {
      rejected.push({ index: r.rowIndex[m]!, detail: oversize(size, max, topic) });
      continue;
    }
    cols.keyStart[k] = r.keyStart[m]!;
    cols.keyEnd[k] = r.keyEnd[m]!;
    cols.valueStart[k] = r.valueStart[m]!;
    cols.valueEnd[k] = r.valueEnd[m]!;
    cols.partition[k] = partition[m]!;
    cols.rowIndex[k] = r.rowIndex[m]!;
    k++;
  }
  rejected.sort((a, b) => a.index - b.index);
  return { ...base, count: kept, ...cols, rejected, sections: null };
}
