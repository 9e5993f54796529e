// Per-partition window state: merges batch partials into open (series, window) cells, advances the
// watermark, and closes windows whose end the watermark has passed.
// Windows are stored window-first: all series share the epoch-aligned window starts, so closing is a
// walk over a handful of starts, not over every series.
import { CELL, type DecodeResult } from '../core/messages.js';
import { emptyMoments, mergeMoments, type Moments } from '../core/stats.js';
import { isClosed } from '../core/window.js';
import { Sketch } from '../core/sketch.js';

/** Defaults of the window store's options (the options table takes WATERMARK_CONFIRM_RECORDS from here). */
export const WINDOW_STORE_DEFAULTS = {
  /** Records at or beyond a forward jump of event time needed before the watermark follows it. */
  confirmRecords: 10,
} as const;

import { StreamClock } from './clock.js';

export { StreamClock, cellPoints, type TimePoint } from './clock.js';

/**
 * Estimated main-thread bytes of one open series: its key in the store, and the parsed identity and
 * serialised prefix the row formatter caches (key, dimension strings, JSON: about 6 bytes per key
 * character), plus the maps' entries and the moments (docs/benchmarks.md, heap per open series).
 */
export function seriesStateBytes(key: string): number {
  return 512 + 6 * key.length;
}

/**
 * Open-series accounting shared by all partitions, so MAX_SERIES (count) and MAX_STATE_MB (estimated
 * bytes) bound the whole process: large-but-legal keys cannot grow state past the memory limit.
 */
export class SeriesBudget {
  open = 0;
  bytes = 0;
  constructor(readonly max: number, readonly maxBytes: number = Infinity) {}

  /** Counts a new series in; or says which limit refuses it. */
  admit(key: string): 'count' | 'bytes' | null {
    if (this.open >= this.max) return 'count';
    const b = seriesStateBytes(key);
    if (this.bytes + b > this.maxBytes) return 'bytes';
    this.open++;
    this.bytes += b;
    return null;
  }

  release(key: string): void {
    this.open--;
    this.bytes -= seriesStateBytes(key);
  }
}

export interface ClosedCell {
  readonly key: string;
  readonly windowStart: number;
  readonly moments: Moments;
  readonly sketch?: Sketch;
}

/** Moments of one (series, window), with its quantile sketch when PERCENTILES is on. */
type Cell = Moments & { sketch?: Sketch };

export interface ApplyOutcome {
  /** (series key, window start) cells whose window was already closed: their records are late. */
  readonly late: Array<{ key: string; windowStart: number; count: number }>;
  /** Cells of new series refused because the budget was full, and which of its limits. */
  readonly overLimit: Array<{ key: string; windowStart: number; count: number; limit: 'count' | 'bytes' }>;
  readonly accepted: number;
}

export class WindowStore {
  readonly #windowMs: number;
  readonly #latenessMs: number;
  readonly #budget: SeriesBudget;
  /** window start -> series key -> moments */
  readonly #windows = new Map<number, Map<string, Cell>>();
  readonly #sketchAccuracy: number;
  /** series key -> number of open windows holding it */
  readonly #seriesRefs = new Map<string, number>();
  #watermark = -Infinity;
  readonly #clock: StreamClock;
  /** window start -> smallest source position that contributed to it (commits never pass it) */
  readonly #minPosition = new Map<number, number>();
  /** Position after the last applied batch; null before any. */
  #appliedEnd: number | null = null;

  constructor(opts: { windowMs: number; latenessMs: number; budget: SeriesBudget; sketchAccuracy?: number; confirmRecords?: number }) {
    this.#sketchAccuracy = opts.sketchAccuracy ?? 0;
    this.#clock = new StreamClock(opts.latenessMs, opts.confirmRecords ?? WINDOW_STORE_DEFAULTS.confirmRecords);
    this.#windowMs = opts.windowMs;
    this.#latenessMs = opts.latenessMs;
    this.#budget = opts.budget;
  }

  get watermark(): number {
    return this.#watermark;
  }

  /** Stream time (the watermark + lateness), from a jump-resistant rule: see StreamClock. */
  get streamMs(): number {
    return this.#clock.streamMs;
  }

  /** Records held in their windows as evidence of a forward jump not yet confirmed. */
  get heldRecords(): number {
    return this.#clock.heldRecords;
  }

  get openSeries(): number {
    return this.#seriesRefs.size;
  }

  get openWindows(): number {
    return this.#windows.size;
  }

  /**
   * Merge one batch's partials. Lateness is judged against the watermark as it stood before this
   * batch (the watermark moves per batch, like a micro-batch engine's), so results do not depend on
   * which worker finished first.
   */
  apply(result: DecodeResult, positions?: { start: number; end: number }): ApplyOutcome {
    const late: ApplyOutcome['late'] = [];
    const overLimit: ApplyOutcome['overLimit'] = [];
    let accepted = 0;
    const cells = result.cells;
    // Offsets of the accepted cells: the batch's event-time evidence (see StreamClock.observeCells).
    const evidence: number[] = [];
    for (let o = 0; o < cells.length; o += CELL.STRIDE) {
      const key = result.series[cells[o + CELL.SERIES]!]!;
      const ws = cells[o + CELL.WINDOW_START]!;
      const count = cells[o + CELL.COUNT]!;
      if (isClosed(ws, this.#windowMs, this.#watermark)) {
        late.push({ key, windowStart: ws, count });
        continue;
      }
      let win = this.#windows.get(ws);
      let m = win?.get(key);
      if (m === undefined) {
        const refs = this.#seriesRefs.get(key);
        if (refs === undefined) {
          const limit = this.#budget.admit(key);
          if (limit !== null) {
            overLimit.push({ key, windowStart: ws, count, limit });
            continue;
          }
        }
        this.#seriesRefs.set(key, (refs ?? 0) + 1);
        if (win === undefined) {
          win = new Map();
          this.#windows.set(ws, win);
        }
        m = emptyMoments() as Cell;
        if (this.#sketchAccuracy > 0) m.sketch = new Sketch(this.#sketchAccuracy);
        win.set(key, m);
      }
      const so = result.sketchOffsets;
      if (so !== undefined && m.sketch !== undefined) {
        const pairs = result.sketchPairs!;
        const cell = o / CELL.STRIDE;
        for (let j = so[cell]!; j < so[cell + 1]!; j++) m.sketch.addCode(pairs[2 * j]!, pairs[2 * j + 1]!);
      }
      if (positions !== undefined) {
        const p = this.#minPosition.get(ws);
        if (p === undefined || positions.start < p) this.#minPosition.set(ws, positions.start);
      }
      mergeMoments(m, {
        count,
        mean: cells[o + CELL.MEAN]!,
        m2: cells[o + CELL.M2]!,
        min: cells[o + CELL.MIN]!,
        max: cells[o + CELL.MAX]!,
        sum: cells[o + CELL.SUM]!,
        tsMin: cells[o + CELL.TS_MIN]!,
        tsMax: cells[o + CELL.TS_MAX]!,
      });
      evidence.push(o);
      accepted += count;
    }
    if (positions !== undefined) this.#appliedEnd = positions.end;
    this.#clock.observeCells(cells, evidence);
    this.#watermark = Math.max(this.#watermark, this.#clock.streamMs - this.#latenessMs);
    return { late, overLimit, accepted };
  }

  /**
   * The position a commit may name: the oldest position still feeding an open window, or, with no
   * window open, the position after the last applied batch. A restart from here rebuilds every open
   * window exactly. Null until a positioned batch was applied.
   */
  commitPosition(): number | null {
    if (this.#appliedEnd === null) return null;
    let p = this.#appliedEnd;
    for (const [ws, pos] of this.#minPosition) if (this.#windows.has(ws) && pos < p) p = pos;
    return p;
  }

  get appliedEnd(): number | null {
    return this.#appliedEnd;
  }

  /** Moves the watermark forward (restored, or idle partitions following the wall clock); never backward. */
  advanceWatermark(ms: number): void {
    if (ms > this.#watermark) this.#watermark = ms;
    this.#clock.raise(ms + this.#latenessMs);
  }

  /** Removes and returns every window the watermark has closed, oldest first. */
  takeClosed(): ClosedCell[] {
    return this.#take((ws) => isClosed(ws, this.#windowMs, this.#watermark));
  }

  /** End of a finite input: every window closes. */
  takeAll(): ClosedCell[] {
    return this.#take(() => true);
  }

  #take(pred: (ws: number) => boolean): ClosedCell[] {
    const starts = [...this.#windows.keys()].filter(pred).sort((a, b) => a - b);
    const out: ClosedCell[] = [];
    for (const ws of starts) {
      const win = this.#windows.get(ws)!;
      this.#windows.delete(ws);
      this.#minPosition.delete(ws);
      for (const [key, moments] of win) {
        out.push(moments.sketch === undefined ? { key, windowStart: ws, moments } : { key, windowStart: ws, moments, sketch: moments.sketch });
        const refs = this.#seriesRefs.get(key)! - 1;
        if (refs === 0) {
          this.#seriesRefs.delete(key);
          this.#budget.release(key);
        } else {
          this.#seriesRefs.set(key, refs);
        }
      }
    }
    return out;
  }
}
