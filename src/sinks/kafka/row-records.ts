// Rows written as Kafka records where they are formatted (a lane's owner worker), so the main thread
// sends each section as it stands: it lays a request out and copies a section's bytes in one piece,
// instead of hashing each key for its partition and copying each key and value into its batch.
// The bytes are what the main thread's encoder writes (RecordBatchWriter.appendRange): the same
// records, partitions and order within a partition. Pure: the owner imports it through its entry.
import { SECTION_STRIDE, type RowRecords, type RowsWire } from '../../core/messages.js';
import { crc32c } from '../../kafka/crc32c.js';
import { murmur2View } from '../../kafka/partitioner.js';
import { RECORD_OVERHEAD_BYTES } from '../../kafka/requests.js';
import { putRangeRecord, rangeRecordBody, rangeRecordBytes, varintBytes } from '../../kafka/varint.js';

/** What sections are cut for: the output topic's partitions (0: not known yet) and the per-partition budget. */
export interface RecordLayout {
  readonly partitions: number;
  readonly budget: number;
}

/**
 * The layout as the Kafka sink last read it, in shared memory the owners read before formatting a
 * chunk: written by the main thread whenever the sink reads the topic's limits. A chunk formatted
 * under an older layout is still sent right (the sink checks and falls back to cutting it itself).
 */
export class SharedRecordLayout {
  readonly buffer: SharedArrayBuffer;
  readonly #ints: Int32Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.buffer = buffer;
    this.#ints = new Int32Array(buffer, 0, 2);
  }

  set(layout: RecordLayout): void {
    // Budget first: an owner that reads the new partitions reads a budget at least as new.
    Atomics.store(this.#ints, 1, layout.budget);
    Atomics.store(this.#ints, 0, layout.partitions);
  }

  /** The layout, or null while the partitions are not known. */
  read(): RecordLayout | null {
    const partitions = Atomics.load(this.#ints, 0);
    if (partitions <= 0) return null;
    return { partitions, budget: Atomics.load(this.#ints, 1) };
  }
}

/** Scratch a formatting thread keeps across chunks (grown to the largest): rowRecords returns views of it. */
export interface RecordsScratch {
  ints?: Int32Array;
  bytes?: Buffer;
}

/**
 * The wire's rows (NDJSON lines and identity keys) as records for `layout`, in views of `scratch`
 * valid until its next use. Messages are grouped by partition, in row order within one; a new
 * section starts at each partition and where the next message would pass the budget.
 */
export function rowRecords(wire: RowsWire, layout: RecordLayout, scratch: RecordsScratch): RowRecords {
  const n = wire.lineEnds.length;
  const keys = wire.keys;
  const keyEnds = wire.keyEnds;
  if (keys === null || keyEnds === null) throw new Error('rowRecords: the rows were formatted without identity keys');
  const lineEnds = wire.lineEnds;
  const values = wire.ndjson;
  const { partitions, budget } = layout;
  const need = 7 * n + SECTION_STRIDE * n;
  if (scratch.ints === undefined || scratch.ints.length < need) scratch.ints = new Int32Array(Math.max(need, 2 * (scratch.ints?.length ?? 0)));
  const ints = scratch.ints;
  const rowIndex = ints.subarray(0, n);
  const partition = ints.subarray(n, 2 * n);
  const keyStart = ints.subarray(2 * n, 3 * n);
  const keyEnd = ints.subarray(3 * n, 4 * n);
  const valueStart = ints.subarray(4 * n, 5 * n);
  const valueEnd = ints.subarray(5 * n, 6 * n);
  const rowPartition = ints.subarray(6 * n, 7 * n);
  const sectionInts = ints.subarray(7 * n);
  // Each row's partition, and where each partition's messages begin (a stable counting sort).
  const view = new DataView(keys.buffer, keys.byteOffset, keys.byteLength);
  const first = new Int32Array(partitions + 1);
  for (let i = 0; i < n; i++) {
    const p = (murmur2View(view, i === 0 ? 0 : keyEnds[i - 1]!, keyEnds[i]!) & 0x7fffffff) % partitions;
    rowPartition[i] = p;
    first[p + 1]!++;
  }
  for (let p = 0; p < partitions; p++) first[p + 1]! += first[p]!;
  for (let i = 0; i < n; i++) rowIndex[first[rowPartition[i]!]!++] = i;
  // Sections, and the exact bytes of every record (its offset delta is its place in its section).
  let sections = 0;
  let total = 0;
  let used = 0;
  let from = 0;
  for (let m = 0; m < n; m++) {
    const i = rowIndex[m]!;
    const p = rowPartition[i]!;
    const kn = keyEnds[i]! - (i === 0 ? 0 : keyEnds[i - 1]!);
    const vn = lineEnds[i]! - (i === 0 ? 0 : lineEnds[i - 1]! + 1);
    const size = kn + vn + RECORD_OVERHEAD_BYTES;
    if (m === 0 || p !== partition[m - 1] || used + size > budget) {
      if (m > 0) sectionInts[(sections - 1) * SECTION_STRIDE + 2] = m - from;
      sectionInts[sections * SECTION_STRIDE] = p;
      sectionInts[sections * SECTION_STRIDE + 1] = m;
      sections++;
      from = m;
      used = 0;
    }
    used += size;
    partition[m] = p;
    total += rangeRecordBytes(kn, vn, m - from);
  }
  if (n > 0) sectionInts[(sections - 1) * SECTION_STRIDE + 2] = n - from;
  if (scratch.bytes === undefined || scratch.bytes.length < total) scratch.bytes = Buffer.allocUnsafeSlow(Math.max(total, 2 * (scratch.bytes?.length ?? 0)));
  const out = scratch.bytes;
  const src = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  const keySrc = Buffer.from(keys.buffer, keys.byteOffset, keys.byteLength);
  let o = 0;
  for (let s = 0; s < sections; s++) {
    const at = s * SECTION_STRIDE;
    const m0 = sectionInts[at + 1]!;
    const count = sectionInts[at + 2]!;
    sectionInts[at + 3] = o;
    for (let d = 0; d < count; d++) {
      const m = m0 + d;
      const i = rowIndex[m]!;
      const ks = i === 0 ? 0 : keyEnds[i - 1]!;
      const ke = keyEnds[i]!;
      const vs = i === 0 ? 0 : lineEnds[i - 1]! + 1;
      const ve = lineEnds[i]!;
      const kn = ke - ks;
      const vn = ve - vs;
      // As RecordBatchWriter.appendRange writes it; the key and value found back from the record's end.
      o = putRangeRecord(out, o, rangeRecordBody(kn, vn, d), keySrc, ks, ke, src, vs, ve, d);
      valueEnd[m] = o - 1;
      valueStart[m] = o - 1 - vn;
      keyEnd[m] = valueStart[m]! - varintBytes(vn);
      keyStart[m] = keyEnd[m]! - kn;
    }
    sectionInts[at + 4] = o;
    // Checksummed here, where the bytes are warm: the sink combines it with its header's.
    sectionInts[at + 5] = crc32c(out, sectionInts[at + 3]!, o) | 0;
  }
  return {
    partitions,
    budget,
    bytes: out.subarray(0, o),
    rowIndex,
    partition,
    keyStart,
    keyEnd,
    valueStart,
    valueEnd,
    sections: sectionInts.subarray(0, sections * SECTION_STRIDE),
  };
}
