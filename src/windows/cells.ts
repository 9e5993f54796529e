// Closed (series, window) cells as columns: what the window store hands to the row formatter. One
// close used to build a cell object and a moments object per series (a million of each for a million
// series): most of the main thread's garbage. Here a close is three arrays, whatever its size.
import { MOMENT, type Moments } from '../core/stats.js';
import type { Sketch } from '../core/sketch.js';

/** The numbers of one cell in ClosedCells.stats (core/stats.ts MOMENT), STAT.STRIDE of them per cell. */
export const STAT = MOMENT;

/**
 * How a row's window came to be emitted: the watermark passed it, its lane was idle (the watermark
 * followed the wall clock), the process shut down or its finite input ended, or late records were
 * merged into it after it was emitted (LATE_RECORDS=amend). Stored as the index in this list.
 */
export const CLOSED_BY = ['watermark', 'idle', 'shutdown', 'end_of_input', 'amended'] as const;
export type ClosedBy = (typeof CLOSED_BY)[number];

/**
 * The quality columns of closed cells (LATE_RECORDS=amend; absent otherwise, so rows stay as they
 * were): per cell its revision (0 for the first emission), how it was closed (index in CLOSED_BY)
 * and the late records merged into it so far.
 */
export interface CellQuality {
  readonly revision: Float64Array;
  readonly closedBy: Uint8Array;
  readonly lateRecords: Float64Array;
}

/** Quality of n first emissions, all closed the same way. */
export function firstEmission(n: number, closedBy: ClosedBy): CellQuality {
  return { revision: new Float64Array(n), closedBy: new Uint8Array(n).fill(CLOSED_BY.indexOf(closedBy)), lateRecords: new Float64Array(n) };
}

/** One closed cell as an object (tests, callers that build cells by hand). */
export interface ClosedCell {
  readonly key: string;
  readonly windowStart: number;
  readonly moments: Moments;
  readonly sketch?: Sketch;
}

export class ClosedCells {
  constructor(
    /** Series key of each cell. */
    readonly keys: readonly string[],
    /** Window start (ms) of each cell; cells of one window are contiguous, oldest window first. */
    readonly starts: Float64Array,
    /** STAT.STRIDE numbers per cell. */
    readonly stats: Float64Array,
    /** Each cell's quantile sketch, when PERCENTILES is on. */
    readonly sketches: ReadonlyArray<Sketch | undefined> | null,
    /** Revision, how it closed and late records merged, per cell (LATE_RECORDS=amend only). */
    readonly quality: CellQuality | null = null,
  ) {}

  get length(): number {
    return this.keys.length;
  }

  /** Cells a..b, sharing this one's memory. */
  slice(a: number, b: number): ClosedCells {
    return new ClosedCells(
      this.keys.slice(a, b),
      this.starts.subarray(a, b),
      this.stats.subarray(a * STAT.STRIDE, b * STAT.STRIDE),
      this.sketches === null ? null : this.sketches.slice(a, b),
      this.quality === null ? null : { revision: this.quality.revision.subarray(a, b), closedBy: this.quality.closedBy.subarray(a, b), lateRecords: this.quality.lateRecords.subarray(a, b) },
    );
  }

  /** These cells with quality columns (replacing any they had). */
  withQuality(quality: CellQuality): ClosedCells {
    return new ClosedCells(this.keys, this.starts, this.stats, this.sketches, quality);
  }

  /** a's cells then b's, in new columns; quality is kept when both have it. */
  static concat(a: ClosedCells, b: ClosedCells): ClosedCells {
    if (a.length === 0) return b;
    if (b.length === 0) return a;
    const n = a.length + b.length;
    const starts = new Float64Array(n);
    starts.set(a.starts);
    starts.set(b.starts, a.length);
    const stats = new Float64Array(n * STAT.STRIDE);
    stats.set(a.stats);
    stats.set(b.stats, a.stats.length);
    const sketches = a.sketches === null && b.sketches === null ? null : [...(a.sketches ?? new Array<undefined>(a.length)), ...(b.sketches ?? new Array<undefined>(b.length))];
    let quality: CellQuality | null = null;
    if (a.quality !== null && b.quality !== null) {
      const revision = new Float64Array(n);
      revision.set(a.quality.revision);
      revision.set(b.quality.revision, a.length);
      const closedBy = new Uint8Array(n);
      closedBy.set(a.quality.closedBy);
      closedBy.set(b.quality.closedBy, a.length);
      const lateRecords = new Float64Array(n);
      lateRecords.set(a.quality.lateRecords);
      lateRecords.set(b.quality.lateRecords, a.length);
      quality = { revision, closedBy, lateRecords };
    }
    return new ClosedCells([...a.keys, ...b.keys], starts, stats, sketches, quality);
  }

  moments(i: number): Moments {
    const s = this.stats;
    const o = i * STAT.STRIDE;
    return {
      count: s[o + STAT.COUNT]!,
      mean: s[o + STAT.MEAN]!,
      m2: s[o + STAT.M2]!,
      min: s[o + STAT.MIN]!,
      max: s[o + STAT.MAX]!,
      sum: s[o + STAT.SUM]!,
      tsMin: s[o + STAT.TS_MIN]!,
      tsMax: s[o + STAT.TS_MAX]!,
    };
  }

  cell(i: number): ClosedCell {
    const sketch = this.sketches?.[i];
    const c = { key: this.keys[i]!, windowStart: this.starts[i]!, moments: this.moments(i) };
    return sketch === undefined ? c : { ...c, sketch };
  }

  static from(cells: readonly ClosedCell[]): ClosedCells {
    const n = cells.length;
    const keys = new Array<string>(n);
    const starts = new Float64Array(n);
    const stats = new Float64Array(n * STAT.STRIDE);
    let sketches: Array<Sketch | undefined> | null = null;
    for (let i = 0; i < n; i++) {
      const c = cells[i]!;
      keys[i] = c.key;
      starts[i] = c.windowStart;
      const m = c.moments;
      const o = i * STAT.STRIDE;
      stats[o + STAT.COUNT] = m.count;
      stats[o + STAT.MEAN] = m.mean;
      stats[o + STAT.M2] = m.m2;
      stats[o + STAT.MIN] = m.min;
      stats[o + STAT.MAX] = m.max;
      stats[o + STAT.SUM] = m.sum;
      stats[o + STAT.TS_MIN] = m.tsMin;
      stats[o + STAT.TS_MAX] = m.tsMax;
      if (c.sketch !== undefined) (sketches ??= new Array<Sketch | undefined>(n))[i] = c.sketch;
    }
    return new ClosedCells(keys, starts, stats, sketches);
  }
}

/** Closed cells in either form: the store's columns, or objects. */
export type CellList = readonly ClosedCell[] | ClosedCells;

export function cellCount(cells: CellList): number {
  return cells.length;
}

export function cellKey(cells: CellList, i: number): string {
  return cells instanceof ClosedCells ? cells.keys[i]! : cells[i]!.key;
}

export function cellStart(cells: CellList, i: number): number {
  return cells instanceof ClosedCells ? cells.starts[i]! : cells[i]!.windowStart;
}

export function cellHasSketch(cells: CellList, i: number): boolean {
  return cells instanceof ClosedCells ? cells.sketches?.[i] !== undefined : cells[i]!.sketch !== undefined;
}

export function sliceCells<T extends CellList>(cells: T, a: number, b: number): T {
  return cells.slice(a, b) as T;
}

/** Rows of a new revision among cells (LATE_RECORDS=amend). */
export function amendedRows(cells: CellList): number {
  if (!(cells instanceof ClosedCells) || cells.quality === null) return 0;
  const amended = CLOSED_BY.indexOf('amended');
  let n = 0;
  for (const c of cells.quality.closedBy) if (c === amended) n++;
  return n;
}
