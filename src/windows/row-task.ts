// Rows formatted in a worker. A closed window's rows are the main thread's largest per-row cost
// (the identity prefix, a tail of numbers written digit by digit, and for the Kafka sink each row's
// identity key): the cells go to a worker as columns, the NDJSON bytes and keys come back, and the
// main thread only writes them. Sketches stay on the main thread's formatter (they are objects, and
// PERCENTILES rows are few and large). Pure: both sides import it, the worker through its entry.
import { ClosedCells } from './cells.js';
import { RowFormatter, type RowBatch, type StatsRow } from './row.js';
import type { ByteScratch } from './row-bytes.js';
import { KeyArenaReader, type KeyArena, type KeyArenaRef } from '../core/key-arena.js';
import { SECTION_STRIDE, type CopyTuples, type RowRecords, type RowSettings, type RowsTask, type RowsWire } from '../core/messages.js';

type Where = { readonly topic: string; readonly partition: number } | undefined;

/**
 * The task for cells without sketches, and what to transfer: fresh copies of the columns (a chunk's
 * columns are views into its whole close, which other chunks still read).
 */
export function rowsTask(cells: ClosedCells, settings: RowSettings, where: Where, identityKeys: boolean, arena?: KeyArena): { task: RowsTask; transfer: ArrayBuffer[] } {
  const starts = cells.starts.slice();
  const stats = cells.stats.slice();
  // Keys the arena holds cross as indexes; keys it cannot hold (it is full even anew) as strings.
  const named = arena?.ids(cells.keys) ?? null;
  const keys = named === null ? cells.keys : { arena: named.ref, ids: named.ids };
  const q = cells.quality;
  const quality = q === null ? undefined : { revision: q.revision.slice(), closedBy: q.closedBy.slice(), lateRecords: q.lateRecords.slice() };
  const task: RowsTask = { kind: 'rows', settings, keys, starts, stats, where, identityKeys, ...(quality === undefined ? {} : { quality }) };
  const transfer = [starts.buffer, stats.buffer];
  if (quality !== undefined) transfer.push(quality.revision.buffer, quality.closedBy.buffer, quality.lateRecords.buffer);
  if (named !== null) transfer.push(named.ids.buffer as ArrayBuffer);
  return { task, transfer };
}

/** A worker's formatters, one per row setting (a pool serves one engine: in practice one). */
export class RowWorkshop {
  readonly #formatters = new Map<string, RowFormatter>();
  readonly #keys = new KeyArenaReader();
  /** Where identity keys are written before they are copied out (a worker formats one task at a time). */
  readonly #scratch: KeyScratch = { buf: Buffer.allocUnsafeSlow(0) };

  format(task: RowsTask): RowsWire {
    const t0 = performance.now();
    const s = task.settings;
    const id = `${s.windowMs}/${s.maxEntries}`;
    let fmt = this.#formatters.get(id);
    if (fmt === undefined) {
      fmt = new RowFormatter(s.windowMs, s.maxEntries);
      this.#formatters.set(id, fmt);
    }
    const keys = Array.isArray(task.keys) ? (task.keys as readonly string[]) : this.#keys.keys((task.keys as { arena: KeyArenaRef }).arena, (task.keys as { ids: Int32Array }).ids);
    const batch = fmt.format(new ClosedCells(keys, task.starts, task.stats, null, task.quality ?? null), task.where);
    return rowsWire(batch, keys.length, task.identityKeys, t0, this.#scratch);
  }
}

/**
 * What a formatting thread keeps across batches. `buf`: identity keys are written there before they
 * are copied out. The rest only for a wire of views (rowsWire's `views`): the NDJSON bytes and the
 * ends of lines and keys, grown to the largest batch.
 */
export interface KeyScratch {
  buf: Buffer;
  bytes?: ByteScratch;
  lineEnds?: Int32Array;
  keyEnds?: Int32Array;
}

function ends(have: Int32Array | undefined, n: number): Int32Array {
  return have !== undefined && have.length >= n ? have : new Int32Array(Math.max(n, 2 * (have?.length ?? 0)));
}

/**
 * A formatted batch as it crosses back to the main thread: its NDJSON bytes, each line's end, and the
 * identity keys when asked (`t0`: when the work began, for the seconds it took). Keys are written into
 * `scratch` (kept by the caller across batches, grown to the largest batch's keys) and copied once
 * into a buffer of their exact size: a fresh buffer at 160 bytes a row grew by doubling for 400-byte
 * keys (two or three fresh allocations a batch) and crossed half empty. With `views`, nothing is
 * copied: every array of the wire is a view of the scratch, valid until its next use (the owner copies
 * them into shared memory at once, RowSlabs.place), so a chunk allocates no memory of its own.
 */
export function rowsWire(batch: RowBatch, n: number, identityKeys: boolean, t0: number, scratch: KeyScratch = { buf: Buffer.allocUnsafeSlow(0) }, views = false): RowsWire {
  let bytes: Buffer;
  let lineEnds: Int32Array;
  if (views) {
    scratch.bytes ??= { buf: Buffer.allocUnsafeSlow(0) };
    bytes = batch.ndjsonBytes!(scratch.bytes);
    scratch.lineEnds = ends(scratch.lineEnds, n);
    lineEnds = scratch.lineEnds.subarray(0, n);
  } else {
    bytes = batch.ndjsonBytes!();
    lineEnds = new Int32Array(n);
  }
  let o = -1;
  for (let i = 0; i < n; i++) {
    o = bytes.indexOf(0x0a, o + 1);
    lineEnds[i] = o;
  }
  let identities: Uint8Array | null = null;
  let keyEnds: Int32Array | null = null;
  if (identityKeys) {
    if (views) {
      scratch.keyEnds = ends(scratch.keyEnds, n);
      keyEnds = scratch.keyEnds.subarray(0, n);
    } else keyEnds = new Int32Array(n);
    let buf = scratch.buf;
    let end = 0;
    for (let i = 0; i < n; i++) {
      let e = batch.identityKeyInto!(i, buf, end);
      while (e < 0) {
        const bigger = Buffer.allocUnsafeSlow(Math.max(2 * buf.length, 65536));
        buf.copy(bigger, 0, 0, end);
        buf = bigger;
        e = batch.identityKeyInto!(i, buf, end);
      }
      end = e;
      keyEnds[i] = end;
    }
    scratch.buf = buf;
    if (views) identities = buf.subarray(0, end);
    else {
      identities = new Uint8Array(end);
      identities.set(buf.subarray(0, end));
    }
  }
  return { kind: 'rows', ndjson: bytes, lineEnds, keys: identities, keyEnds, seconds: (performance.now() - t0) / 1000 };
}

/**
 * A chunk's rows as a worker formatted them. What sinks read of a batch (its bytes, each line's end,
 * the identity keys) is the worker's; row objects and anything else are the main thread formatter's,
 * made only when asked (a sink that refuses a row reads `rows`).
 */
export class FormattedElsewhere implements RowBatch {
  readonly where: Where;
  readonly #records: RowRecords | null;
  #wire: RowsWire;
  #bytes: Buffer;
  #keys: Buffer | null;
  readonly #here: () => RowBatch;
  #batch: RowBatch | null = null;

  constructor(wire: RowsWire, where: Where, here: () => RowBatch) {
    this.where = where;
    this.#here = here;
    this.#records = wire.records ?? null;
    this.#wire = wire;
    this.#bytes = NO_BYTES;
    this.#keys = null;
    if (this.#records === null) this.#take(wire);
  }

  #take(wire: RowsWire): void {
    this.#wire = wire;
    const b = wire.ndjson;
    this.#bytes = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    const k = wire.keys;
    this.#keys = k === null ? null : Buffer.from(k.buffer, k.byteOffset, k.byteLength);
  }

  /** Rows that crossed as Kafka records: their lines and keys made from them, for whoever reads those. */
  #lines(): void {
    if (this.#records === null || this.#wire.records === undefined) return;
    this.#take({ ...linesOf(this.#records), seconds: this.#wire.seconds });
  }

  /** The rows as Kafka records when the owner wrote them so (the Kafka sink's path). */
  rowRecords(): RowRecords | null {
    return this.#records;
  }

  #main(): RowBatch {
    this.#batch ??= this.#here();
    return this.#batch;
  }

  get rows(): readonly StatsRow[] {
    this.#lines();
    return this.#main().rows;
  }

  ndjson(): string {
    this.#lines();
    return this.#bytes.toString('utf8');
  }

  ndjsonBytes(): Buffer {
    this.#lines();
    return this.#bytes;
  }

  lineEnds(): Int32Array {
    this.#lines();
    return this.#wire.lineEnds;
  }

  json(i: number): string {
    this.#lines();
    const ends = this.#wire.lineEnds;
    return this.#bytes.toString('utf8', i === 0 ? 0 : ends[i - 1]! + 1, ends[i]!);
  }

  identityKey(i: number): string {
    this.#lines();
    const ends = this.#wire.keyEnds;
    if (this.#keys === null || ends === null) return this.#main().identityKey!(i);
    return this.#keys.toString('utf8', i === 0 ? 0 : ends[i - 1]!, ends[i]!);
  }

  copyTuples(): CopyTuples | null {
    return this.#wire.copy ?? null;
  }

  identityKeyBytes(): { readonly bytes: Buffer; readonly ends: Int32Array } | null {
    this.#lines();
    return this.#keys === null || this.#wire.keyEnds === null ? null : { bytes: this.#keys, ends: this.#wire.keyEnds };
  }
}

const NO_BYTES = Buffer.alloc(0);

/**
 * NDJSON lines and identity keys in row order, read back from rows sent as records (for what reads
 * those of a batch that went as records: a refused row's dead letter, a sink other than Kafka's).
 */
export function linesOf(r: RowRecords): Omit<RowsWire, 'seconds'> {
  const n = r.rowIndex.length;
  const msgOf = new Int32Array(n);
  let bytes = 0;
  let keyBytes = 0;
  for (let m = 0; m < n; m++) {
    msgOf[r.rowIndex[m]!] = m;
    bytes += r.valueEnd[m]! - r.valueStart[m]! + 1;
    keyBytes += r.keyEnd[m]! - r.keyStart[m]!;
  }
  const src = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
  const ndjson = Buffer.allocUnsafe(bytes);
  const keys = Buffer.allocUnsafe(keyBytes);
  const lineEnds = new Int32Array(n);
  const keyEnds = new Int32Array(n);
  let o = 0;
  let k = 0;
  for (let i = 0; i < n; i++) {
    const m = msgOf[i]!;
    o += src.copy(ndjson, o, r.valueStart[m]!, r.valueEnd[m]!);
    lineEnds[i] = o;
    ndjson[o++] = 0x0a;
    k += src.copy(keys, k, r.keyStart[m]!, r.keyEnd[m]!);
    keyEnds[i] = k;
  }
  return { kind: 'rows', ndjson, lineEnds, keys, keyEnds };
}

const NO_INTS = new Int32Array(0);

/** A wire that carries its rows as records only. */
export function recordsWire(records: RowRecords, seconds: number): RowsWire {
  return { kind: 'rows', ndjson: NO_BYTES, lineEnds: NO_INTS, keys: null, keyEnds: null, seconds, records };
}


/** Records of several chunks as one (an emission written whole): bytes back to back, positions moved. */
export function joinRecords(parts: readonly RowRecords[]): RowRecords {
  let n = 0;
  let bytes = 0;
  let sectionInts = 0;
  for (const r of parts) {
    n += r.rowIndex.length;
    bytes += r.bytes.byteLength;
    sectionInts += r.sections.length;
  }
  const out = Buffer.allocUnsafe(bytes);
  const cols = { rowIndex: new Int32Array(n), partition: new Int32Array(n), keyStart: new Int32Array(n), keyEnd: new Int32Array(n), valueStart: new Int32Array(n), valueEnd: new Int32Array(n) };
  const sections = new Int32Array(sectionInts);
  let m = 0;
  let o = 0;
  let s = 0;
  for (const r of parts) {
    const k = r.rowIndex.length;
    Buffer.prototype.copy.call(r.bytes, out, o);
    for (let j = 0; j < k; j++) {
      cols.rowIndex[m + j] = r.rowIndex[j]! + m;
      cols.partition[m + j] = r.partition[j]!;
      cols.keyStart[m + j] = r.keyStart[j]! + o;
      cols.keyEnd[m + j] = r.keyEnd[j]! + o;
      cols.valueStart[m + j] = r.valueStart[j]! + o;
      cols.valueEnd[m + j] = r.valueEnd[j]! + o;
    }
    for (let j = 0; j < r.sections.length; j += SECTION_STRIDE) {
      sections[s + j] = r.sections[j]!;
      sections[s + j + 1] = r.sections[j + 1]! + m;
      sections[s + j + 2] = r.sections[j + 2]!;
      sections[s + j + 3] = r.sections[j + 3]! + o;
      sections[s + j + 4] = r.sections[j + 4]! + o;
      sections[s + j + 5] = r.sections[j + 5]!;
    }
    m += k;
    o += r.bytes.byteLength;
    s += r.sections.length;
  }
  return { partitions: parts[0]?.partitions ?? 0, budget: parts[0]?.budget ?? 0, bytes: out, ...cols, sections };
}
