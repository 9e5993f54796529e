// Closed windows kept after their emission so that late records can amend them (LATE_RECORDS=amend).
// A late record's cell is merged into its kept window, and the window's amended rows are emitted
// again, whole, as a higher revision of the same row. What is kept is bounded twice: by the horizon
// (AMEND_HORIZON_SECONDS after a window closed, it is dropped and its late records are dead-lettered
// as before) and by bytes, counted in the shared SeriesBudget (MAX_STATE_MB) beside the open series.
//
// The kept set is always every closed window from `keptFromMs` on: windows leave it oldest first
// (horizon, eviction), never from the middle. That is what makes a restart exact: the lane's commit
// position never passes the first record of a kept window, so a replay from it sees every record of
// every window from keptFromMs on and rebuilds them whole, while a window before keptFromMs, of which
// the replay may see only a part, is never rebuilt (a partial window amended would overwrite a
// complete row with a smaller one).
import { withLength } from '../core/columns.js';
import { MOMENT } from '../core/stats.js';
import { mergeMomentsFrom } from '../core/stats.js';
import { Sketch, SKETCH_BASE_BYTES, SKETCH_BUCKET_BYTES } from '../core/sketch.js';
import { CLOSED_BY, ClosedCells, STAT } from './cells.js';

/**
 * Estimated bytes of one kept cell: its moments and quality columns (13 doubles), its slot in the
 * keys array, an entry of the window's key index (built on the window's first late record, charged
 * from the start), and the key string it keeps alive. Its sketch is charged at Sketch.bytes.
 */
export function keptCellBytes(key: string): number {
  return 200 + key.length;
}

/** Per kept window: its map entry, arrays and index. */
export const KEPT_WINDOW_BYTES = 512;

/** Why a late cell could not be merged: its window is beyond the horizon, or its state is not kept. */
export type NotKept = 'horizon' | 'state';

/** What the window store lends the kept windows: the shared byte budget. */
export interface KeptBudget {
  /** Counts bytes kept (negative: given back). */
  charge(bytes: number): void;
  readonly maxBytes: number;
  /** Whether `extra` more bytes fit, without reclaiming anything. */
  room(extra: number): boolean;
}

class KeptWindow {
  readonly ws: number;
  keys: string[];
  n: number;
  stats: Float64Array;
  /** Revision last emitted; the revision the next emission takes (NaN: the last + 1, for an unpositioned lane). */
  revision: Float64Array;
  pending: Float64Array;
  lateRecords: Float64Array;
  sketches: Array<Sketch | undefined> | null;
  /** 1 where the cell's sketch was handed to a row formatter: cloned before it is changed again. */
  shared: Uint8Array;
  dirty: number[] = [];
  isDirty: Uint8Array;
  index: Map<string, number> | null = null;
  minPosition = Infinity;
  bytes = 0;

  constructor(ws: number, keys: string[], stats: Float64Array, sketches: Array<Sketch | undefined> | null) {
    this.ws = ws;
    this.keys = keys;
    this.n = keys.length;
    this.stats = stats;
    this.revision = new Float64Array(Math.max(this.n, 1));
    this.pending = new Float64Array(Math.max(this.n, 1));
    this.lateRecords = new Float64Array(Math.max(this.n, 1));
    this.isDirty = new Uint8Array(Math.max(this.n, 1));
    this.sketches = sketches;
    this.shared = new Uint8Array(Math.max(this.n, 1)).fill(1);
  }

  find(key: string): number {
    if (this.index === null) {
      this.index = new Map();
      for (let i = 0; i < this.n; i++) this.index.set(this.keys[i]!, i);
    }
    return this.index.get(key) ?? -1;
  }

  add(key: string, withSketch: Sketch | undefined): number {
    const i = this.n++;
    if (i >= this.revision.length || (i + 1) * STAT.STRIDE > this.stats.length) {
      const cap = Math.max(8, i + 1, Math.ceil(this.revision.length * 1.5));
      this.stats = withLength(this.stats, cap * STAT.STRIDE);
      this.revision = withLength(this.revision, cap);
      this.pending = withLength(this.pending, cap);
      this.lateRecords = withLength(this.lateRecords, cap);
      this.isDirty = withLength(this.isDirty, cap);
      this.shared = withLength(this.shared, cap);
    }
    const o = i * STAT.STRIDE;
    this.stats[o + MOMENT.COUNT] = 0;
    this.keys.push(key);
    this.index?.set(key, i);
    if (withSketch !== undefined) (this.sketches ??= new Array<Sketch | undefined>(i))[i] = withSketch;
    this.shared[i] = 0;
    return i;
  }
}


export class KeptWindows {
  readonly #windowMs: number;
  readonly #horizonMs: number;
  readonly #budget: KeptBudget;
  readonly #sketchAccuracy: number;
  readonly #windows = new Map<number, KeptWindow>();
  /** Windows with amended rows not yet taken (takeAmended runs after every batch: no walk over all). */
  readonly #dirty = new Set<KeptWindow>();
  /** Every closed window starting at or after this is kept (see the file's comment). */
  #keptFromMs: number;
  #bytes = 0;
  /** Windows dropped to make room (MAX_STATE_MB) since the lane opened. */
  evictedWindows = 0;

  constructor(opts: { windowMs: number; horizonMs: number; budget: KeptBudget; sketchAccuracy: number; keptFromMs: number }) {
    this.#windowMs = opts.windowMs;
    this.#horizonMs = opts.horizonMs;
    this.#budget = opts.budget;
    this.#sketchAccuracy = opts.sketchAccuracy;
    this.#keptFromMs = opts.keptFromMs;
  }

  /** Estimated bytes held (counted in the budget too). */
  get bytes(): number {
    return this.#bytes;
  }

  get windows(): number {
    return this.#windows.size;
  }

  /** The first window start kept (finite once the watermark is). */
  get keptFromMs(): number {
    return this.#keptFromMs;
  }

  /** The smallest position feeding a kept window (Infinity when none): a commit may not pass it. */
  get minPosition(): number {
    let p = Infinity;
    for (const w of this.#windows.values()) if (w.minPosition < p) p = w.minPosition;
    return p;
  }

  /** Restored from a commit point: windows before it are not rebuilt by the replay (see the file's comment). */
  raiseKeptFrom(ms: number): void {
    if (ms > this.#keptFromMs) this.#dropBefore(ms, false);
  }

  /** Whether a window closed at this watermark is past the horizon. */
  beyondHorizon(ws: number, watermarkMs: number): boolean {
    return ws + this.#windowMs + this.#horizonMs <= watermarkMs;
  }

  /**
   * Keeps the windows just emitted (cells of one window contiguous, oldest first; `minPositions`: the
   * smallest position of each). The cells' moments are copied: the emitted columns are the sink's
   * until it wrote them. Sketches are shared until an amendment changes them (then cloned).
   */
  keep(cells: ClosedCells, minPositions: ReadonlyMap<number, number>): void {
    let a = 0;
    while (a < cells.length) {
      const ws = cells.starts[a]!;
      let b = a + 1;
      while (b < cells.length && cells.starts[b] === ws) b++;
      if (ws >= this.#keptFromMs && !this.#windows.has(ws)) {
        let bytes = KEPT_WINDOW_BYTES;
        for (let i = a; i < b; i++) bytes += keptCellBytes(cells.keys[i]!) + (cells.sketches?.[i]?.bytes ?? 0);
        if (this.#makeRoom(bytes, ws)) {
          const w = new KeptWindow(ws, cells.keys.slice(a, b), cells.stats.slice(a * STAT.STRIDE, b * STAT.STRIDE), cells.sketches === null ? null : cells.sketches.slice(a, b));
          w.minPosition = minPositions.get(ws) ?? Infinity;
          this.#charge(w, bytes);
          this.#windows.set(ws, w);
        } else {
          // Too large to keep even alone: it and everything older leave the kept set.
          this.#dropBefore(ws + this.#windowMs, true);
        }
      }
      a = b;
    }
  }

  /** Drops the windows the watermark has taken past the horizon. */
  expire(watermarkMs: number): void {
    if (!Number.isFinite(watermarkMs)) return;
    // The first window start whose end + horizon is still ahead of the watermark.
    const from = (Math.floor((watermarkMs - this.#windowMs - this.#horizonMs) / this.#windowMs) + 1) * this.#windowMs;
    if (from > this.#keptFromMs) this.#dropBefore(from, false);
  }

  /**
   * Merges a late cell (moments at cells[o..], its sketch pairs so[cell]..so[cell + 1]) into its kept
   * window, or says why it cannot. A replayed cell (processed before a restart) rebuilds the window
   * silently; any other marks the row for a new revision: `positions.end` where the lane has
   * positions (deterministic, and above every position the row covers), else one more than the last.
   */
  merge(
    key: string,
    ws: number,
    watermarkMs: number,
    cells: Float64Array,
    o: number,
    sketch: { pairs: Float64Array; from: number; to: number } | null,
    replay: boolean,
    positions: { start: number; end: number } | undefined,
  ): NotKept | null {
    if (this.beyondHorizon(ws, watermarkMs)) return 'horizon';
    if (ws < this.#keptFromMs) return 'state';
    let w = this.#windows.get(ws);
    if (w === undefined) {
      const bytes = KEPT_WINDOW_BYTES + keptCellBytes(key) + (sketch === null || this.#sketchAccuracy === 0 ? 0 : sketchBytesOf(sketch));
      if (!this.#makeRoom(bytes, ws)) return 'state';
      w = new KeptWindow(ws, [], new Float64Array(0), null);
      this.#charge(w, KEPT_WINDOW_BYTES);
      this.#windows.set(ws, w);
    }
    let i = w.find(key);
    if (i < 0) {
      const sk = this.#sketchAccuracy > 0 && sketch !== null ? new Sketch(this.#sketchAccuracy) : undefined;
      const bytes = keptCellBytes(key) + (sk === undefined ? 0 : sketchBytesOf(sketch!));
      if (!this.#makeRoom(bytes, ws)) return 'state';
      i = w.add(key, sk);
      this.#charge(w, keptCellBytes(key) + (sk === undefined ? 0 : sk.bytes));
    }
    if (sketch !== null && this.#sketchAccuracy > 0) {
      let sk = w.sketches?.[i];
      if (sk === undefined) {
        sk = new Sketch(this.#sketchAccuracy);
        (w.sketches ??= new Array<Sketch | undefined>(w.n))[i] = sk;
        w.shared[i] = 0;
        this.#charge(w, sk.bytes);
      } else if (w.shared[i] === 1) {
        // Handed to an emission whose rows may not be written yet: amend a copy.
        const copy = new Sketch(this.#sketchAccuracy);
        copy.merge(sk);
        w.sketches![i] = copy;
        w.shared[i] = 0;
        sk = copy;
      }
      const before = sk.bytes;
      for (let j = sketch.from; j < sketch.to; j++) sk.addCode(sketch.pairs[2 * j]!, sketch.pairs[2 * j + 1]!);
      sk.bound();
      this.#charge(w, sk.bytes - before);
    }
    mergeMomentsFrom(w.stats, i * STAT.STRIDE, cells, o);
    if (positions !== undefined && positions.start < w.minPosition) w.minPosition = positions.start;
    if (!replay) {
      w.lateRecords[i] = w.lateRecords[i]! + cells[o + MOMENT.COUNT]!;
      w.pending[i] = positions === undefined ? Number.NaN : positions.end;
      if (w.isDirty[i] === 0) {
        w.isDirty[i] = 1;
        w.dirty.push(i);
        this.#dirty.add(w);
      }
    }
    return null;
  }

  /** The rows amended since the last call, oldest window first, with their new revisions. */
  takeAmended(): ClosedCells {
    const ws = [...this.#dirty].sort((a, b) => a.ws - b.ws);
    this.#dirty.clear();
    let n = 0;
    for (const w of ws) n += w.dirty.length;
    const keys = new Array<string>(n);
    const starts = new Float64Array(n);
    const stats = new Float64Array(n * STAT.STRIDE);
    const revision = new Float64Array(n);
    const lateRecords = new Float64Array(n);
    const closedBy = new Uint8Array(n).fill(CLOSED_BY.indexOf('amended'));
    let sketches: Array<Sketch | undefined> | null = null;
    let k = 0;
    for (const w of ws) {
      for (const i of w.dirty) {
        keys[k] = w.keys[i]!;
        starts[k] = w.ws;
        stats.set(w.stats.subarray(i * STAT.STRIDE, (i + 1) * STAT.STRIDE), k * STAT.STRIDE);
        const p = w.pending[i]!;
        w.revision[i] = Number.isNaN(p) ? w.revision[i]! + 1 : p;
        revision[k] = w.revision[i]!;
        lateRecords[k] = w.lateRecords[i]!;
        const sk = w.sketches?.[i];
        if (sk !== undefined) {
          (sketches ??= new Array<Sketch | undefined>(n))[k] = sk;
          w.shared[i] = 1;
        }
        w.isDirty[i] = 0;
        k++;
      }
      w.dirty = [];
    }
    return new ClosedCells(keys, starts, stats, sketches, { revision, closedBy, lateRecords });
  }

  /** Frees everything (the lane closes). */
  clear(): void {
    this.#budget.charge(-this.#bytes);
    this.#bytes = 0;
    this.#windows.clear();
    this.#dirty.clear();
  }

  /**
   * Evicts kept windows, oldest first and never `ws` itself or one after it, until `bytes` more fit
   * in the budget; false when they still do not.
   */
  #makeRoom(bytes: number, ws: number): boolean {
    if (this.#budget.room(bytes)) return true;
    const older = [...this.#windows.keys()].filter((s) => s < ws).sort((a, b) => a - b);
    for (const s of older) {
      // Amended rows not yet emitted stay (and so does everything after them: the kept set is a suffix).
      if (this.#windows.get(s)!.dirty.length > 0) return false;
      this.#dropBefore(s + this.#windowMs, true);
      if (this.#budget.room(bytes)) return true;
    }
    return false;
  }

  /**
   * Frees up to `bytes` by evicting the oldest kept windows (open series need the room: they come
   * first). Returns what was freed.
   */
  reclaim(bytes: number): number {
    const before = this.#bytes;
    for (const s of [...this.#windows.keys()].sort((a, b) => a - b)) {
      if (before - this.#bytes >= bytes || this.#windows.get(s)!.dirty.length > 0) break;
      this.#dropBefore(s + this.#windowMs, true);
    }
    return before - this.#bytes;
  }

  #dropBefore(from: number, evicted: boolean): void {
    for (const [s, w] of this.#windows) {
      if (s >= from) continue;
      this.#budget.charge(-w.bytes);
      this.#bytes -= w.bytes;
      this.#windows.delete(s);
      this.#dirty.delete(w);
      if (evicted) this.evictedWindows++;
    }
    if (from > this.#keptFromMs) this.#keptFromMs = from;
  }

  #charge(w: KeptWindow, bytes: number): void {
    w.bytes += bytes;
    this.#bytes += bytes;
    this.#budget.charge(bytes);
  }
}

function sketchBytesOf(s: { from: number; to: number }): number {
  return SKETCH_BASE_BYTES + SKETCH_BUCKET_BYTES * (s.to - s.from);
}
