// Per-partition window state: merges batch partials into open (series, window) cells, advances the
// watermark, and closes windows whose end the watermark has passed.
// Windows are stored window-first: all series share the epoch-aligned window starts, so closing is a
// walk over a handful of starts, not over every series.
import { CELL, type DecodeResult } from '../core/messages.js';
import { clearMomentsAt, mergeMomentsFrom, MOMENT } from '../core/stats.js';
import { isClosed } from '../core/window.js';
import { MAX_BUCKETS, Sketch, SKETCH_BASE_BYTES, SKETCH_BUCKET_BYTES } from '../core/sketch.js';
import { ClosedCells, firstEmission, type ClosedBy } from './cells.js';
import { KeptWindows, type NotKept } from './kept.js';

/** Defaults of the window store's options (the options table takes WATERMARK_CONFIRM_RECORDS from here). */
export const WINDOW_STORE_DEFAULTS = {
  /** Records at or beyond a forward jump of event time needed before the watermark follows it. */
  confirmRecords: 10,
} as const;

import { StreamClock } from './clock.js';

export { StreamClock, cellPoints, type TimePoint } from './clock.js';
export { ClosedCells, type CellList, type ClosedCell, type ClosedBy } from './cells.js';
export type { NotKept } from './kept.js';

/**
 * Estimated main-thread bytes of one open series: its key in the store, and the parsed identity and
 * serialised prefix the row formatter caches (key, dimension strings, JSON: about 6 bytes per key
 * character), plus the maps' entries and the moments (docs/benchmarks.md, heap per open series).
 * An upper bound: a key in JSON form (core/series.ts) is its own row prefix, and the parsed identity
 * is made only for sinks that read row objects.
 */
export function seriesStateBytes(key: string): number {
  return 512 + 6 * key.length;
}

/**
 * Open-series accounting shared by all partitions, so MAX_SERIES (count) and MAX_STATE_MB (estimated
 * bytes) bound the whole process: large-but-legal keys cannot grow state past the memory limit, and
 * neither can percentile sketches (up to 4,096 buckets a cell: 1,500 series of them were 396 MB).
 */
export class SeriesBudget {
  open = 0;
  /** Estimated bytes: the open series (seriesStateBytes) and their cells' sketches (Sketch.bytes). */
  bytes = 0;
  /**
   * Closed windows kept for amendment (LATE_RECORDS=amend) are counted here too, but open series come
   * first: when one does not fit, the kept windows are asked to give their room back (oldest first).
   */
  readonly #reclaimers = new Set<(bytes: number) => number>();

  constructor(readonly max: number, readonly maxBytes: number = Infinity) {}

  /** Counts a new series in, with room for `extra` bytes it is about to charge; or says which limit refuses it. */
  admit(key: string, extra = 0): 'count' | 'bytes' | null {
    if (this.open >= this.max) return 'count';
    const b = seriesStateBytes(key);
    if (!this.fits(b + extra)) return 'bytes';
    this.open++;
    this.bytes += b;
    return null;
  }

  /** Whether `extra` more bytes fit, once kept closed windows gave back what they can. */
  fits(extra: number): boolean {
    if (this.room(extra)) return true;
    for (const reclaim of this.#reclaimers) {
      reclaim(this.bytes + extra - this.maxBytes);
      if (this.room(extra)) return true;
    }
    return false;
  }

  /** Whether `extra` more bytes fit as things are. */
  room(extra: number): boolean {
    return this.bytes + extra <= this.maxBytes;
  }

  /** A holder of state that can give bytes back (kept closed windows); removed when its lane closes. */
  addReclaimer(reclaim: (bytes: number) => number): () => void {
    this.#reclaimers.add(reclaim);
    return () => this.#reclaimers.delete(reclaim);
  }

  release(key: string): void {
    this.open--;
    this.bytes -= seriesStateBytes(key);
  }

  /** Counts `bytes` more (or fewer, negative) of state beside the open series: sketches, kept windows. */
  charge(bytes: number): void {
    this.bytes += bytes;
  }
}

/** What a window store needs of its budget: SeriesBudget on one thread, SharedSeriesBudget across owners. */
export type StateBudget = Pick<SeriesBudget, 'max' | 'maxBytes' | 'open' | 'bytes' | 'admit' | 'fits' | 'room' | 'addReclaimer' | 'release' | 'charge'>;

/**
 * Where a SharedSeriesBudget keeps its counters: the open series (Int32) and their bytes (BigInt64,
 * at 8), then the same pair for each owner, which is what a lost owner's share is read from.
 */
const SHARED_BUDGET_BYTES = 16;

/**
 * The state budget of lanes owned by several workers (LANE_STATE=worker): the same limits as
 * SeriesBudget, counted with Atomics in one SharedArrayBuffer that every owner and the main thread
 * (for the gauges) map, so MAX_SERIES and MAX_STATE_MB bound the process, not each worker. A new
 * series reserves its count and bytes first and gives them back when a limit refuses it, so two
 * owners racing for the last slot never both get it. Sketches and kept windows charge their bytes
 * as deltas (never an assignment: another owner may have counted in between). Kept windows give room
 * back to open series as in SeriesBudget, but only those of the owner asking: each owner's budget
 * object holds its own lanes' reclaimers (the shared memory holds numbers, not lanes). Each owner
 * also counts its share in a slot of its own, so that the state of an owner that died (its worker
 * took it along) leaves the budget with it (forgetOwner), rather than holding room for ever.
 */
export class SharedSeriesBudget implements StateBudget {
  readonly buffer: SharedArrayBuffer;
  readonly #open: Int32Array;
  readonly #bytes: BigInt64Array;
  readonly #reclaimers = new Set<(bytes: number) => number>();
  /** This owner's counters (null: the main thread's view, or an owner without a slot). */
  readonly #slotOpen: Int32Array | null;
  readonly #slotBytes: BigInt64Array | null;

  /**
   * `owners`: the slots to make (with a new buffer); `owner`: the slot this view counts in as well
   * (an owner worker's view of a buffer it was given).
   */
  constructor(readonly max: number, readonly maxBytes: number = Infinity, buffer?: SharedArrayBuffer, opts: { owners?: number; owner?: number } = {}) {
    this.buffer = buffer ?? new SharedArrayBuffer(SHARED_BUDGET_BYTES * (1 + (opts.owners ?? 0)));
    this.#open = new Int32Array(this.buffer, 0, 1);
    this.#bytes = new BigInt64Array(this.buffer, 8, 1);
    const at = opts.owner === undefined ? -1 : SHARED_BUDGET_BYTES * (1 + opts.owner);
    if (at >= 0 && at + SHARED_BUDGET_BYTES > this.buffer.byteLength) throw new RangeError(`owner ${opts.owner} has no slot in a shared budget of ${this.buffer.byteLength} bytes`);
    this.#slotOpen = at < 0 ? null : new Int32Array(this.buffer, at, 1);
    this.#slotBytes = at < 0 ? null : new BigInt64Array(this.buffer, at + 8, 1);
  }

  /**
   * An owner died with its lanes: what it counted leaves the budget. Called before its replacement
   * gets a task (it starts from nothing in the same slot).
   */
  forgetOwner(owner: number): void {
    const at = SHARED_BUDGET_BYTES * (1 + owner);
    if (at + SHARED_BUDGET_BYTES > this.buffer.byteLength) return;
    const open = Atomics.exchange(new Int32Array(this.buffer, at, 1), 0, 0);
    const bytes = Atomics.exchange(new BigInt64Array(this.buffer, at + 8, 1), 0, 0n);
    Atomics.sub(this.#open, 0, open);
    Atomics.sub(this.#bytes, 0, bytes);
  }

  #count(open: number, bytes: number): void {
    if (open !== 0) {
      Atomics.add(this.#open, 0, open);
      if (this.#slotOpen !== null) Atomics.add(this.#slotOpen, 0, open);
    }
    if (bytes !== 0) {
      Atomics.add(this.#bytes, 0, BigInt(bytes));
      if (this.#slotBytes !== null) Atomics.add(this.#slotBytes, 0, BigInt(bytes));
    }
  }

  get open(): number {
    return Atomics.load(this.#open, 0);
  }

  get bytes(): number {
    return Number(Atomics.load(this.#bytes, 0));
  }

  admit(key: string, extra = 0): 'count' | 'bytes' | null {
    if (Atomics.add(this.#open, 0, 1) >= this.max) {
      Atomics.sub(this.#open, 0, 1);
      return 'count';
    }
    const b = seriesStateBytes(key);
    if (!this.fits(b + extra)) {
      Atomics.sub(this.#open, 0, 1);
      return 'bytes';
    }
    const before = Number(Atomics.add(this.#bytes, 0, BigInt(b)));
    if (before + b + extra > this.maxBytes) {
      Atomics.sub(this.#bytes, 0, BigInt(b));
      Atomics.sub(this.#open, 0, 1);
      return 'bytes';
    }
    if (this.#slotOpen !== null) Atomics.add(this.#slotOpen, 0, 1);
    if (this.#slotBytes !== null) Atomics.add(this.#slotBytes, 0, BigInt(b));
    return null;
  }

  fits(extra: number): boolean {
    if (this.room(extra)) return true;
    for (const reclaim of this.#reclaimers) {
      reclaim(this.bytes + extra - this.maxBytes);
      if (this.room(extra)) return true;
    }
    return false;
  }

  room(extra: number): boolean {
    return this.bytes + extra <= this.maxBytes;
  }

  addReclaimer(reclaim: (bytes: number) => number): () => void {
    this.#reclaimers.add(reclaim);
    return () => this.#reclaimers.delete(reclaim);
  }

  release(key: string): void {
    this.#count(-1, -seriesStateBytes(key));
  }

  charge(bytes: number): void {
    this.#count(0, bytes);
  }
}

export interface ApplyOutcome {
  /**
   * (series key, window start) cells whose window was already closed: their records are late. With
   * amendment on, only those that could not amend their window, and `beyond` says why.
   */
  readonly late: Array<{ key: string; windowStart: number; count: number; beyond?: NotKept }>;
  /** Cells of new series refused because the budget was full, and which of its limits. */
  readonly overLimit: Array<{ key: string; windowStart: number; count: number; limit: 'count' | 'bytes' }>;
  readonly accepted: number;
  /** Late records merged into their kept window (LATE_RECORDS=amend): the window is emitted again. */
  readonly amended: number;
  /** Replayed records (processed before a restart) that rebuilt a kept window silently. */
  readonly rebuilt: number;
}

/** LATE_RECORDS=amend: how long after its close a window can still be amended. */
export interface AmendSettings {
  readonly horizonMs: number;
}


/**
 * Cells live in pages of typed arrays: a page never moves once made (no copy of a million cells when
 * the store grows) and holds at most one page of unused slots.
 */
const PAGE_BITS = 12;
const PAGE_MASK = (1 << PAGE_BITS) - 1;
/** Numbers per cell: its moments (MOMENT), then its window start. */
const NUM_STRIDE = MOMENT.STRIDE + 1;
const WS = MOMENT.STRIDE;
/** Links per cell: the series' next (older) cell or -1, then the series id. */
const LINK_STRIDE = 2;

/** The cells of one open window, in the order they were opened (the order rows come out in). */
interface OpenWindow {
  slots: Int32Array<ArrayBuffer>;
  n: number;
}

function grown(a: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  if (need <= a.length) return a;
  const b = new Int32Array(Math.max(need, Math.ceil(a.length * 1.5)));
  b.set(a);
  return b;
}

export class WindowStore {
  readonly #windowMs: number;
  readonly #latenessMs: number;
  readonly #budget: StateBudget;
  readonly #sketchAccuracy: number;
  #watermark = -Infinity;
  readonly #clock: StreamClock;
  /** window start -> smallest source position that contributed to it (commits never pass it) */
  readonly #minPosition = new Map<number, number>();
  /** Position after the last applied batch; null before any. */
  #appliedEnd: number | null = null;

  // Series: interned once, while any window holds them. The key is the decoder's (or the worker
  // dictionary's) own string, so the store adds a map entry and 8 bytes of columns per series.
  #sids = new Map<string, number>();
  readonly #keys: Array<string | undefined> = [];
  /** series id -> its newest open cell; -1 when none is left (the series closes) */
  #head = new Int32Array(1024);
  readonly #freeSids: number[] = [];

  // Cells: one slot per open (series, window), in pages; freed slots are reused first.
  readonly #nums: Float64Array[] = [];
  readonly #links: Int32Array[] = [];
  #cellsMade = 0;
  readonly #freeCells: number[] = [];
  /** slot -> quantile sketch (PERCENTILES only) */
  readonly #sketches: Array<Sketch | undefined> = [];
  readonly #windows = new Map<number, OpenWindow>();
  #lastWindowCells = 64;
  #evidence = new Int32Array(0);
  /** Closed windows kept for amendment; null with LATE_RECORDS=dead-letter (nothing is kept then). */
  readonly #kept: KeptWindows | null;
  readonly #unregister: (() => void) | null;

  constructor(opts: { windowMs: number; latenessMs: number; budget: StateBudget; sketchAccuracy?: number; confirmRecords?: number; amend?: AmendSettings }) {
    this.#sketchAccuracy = opts.sketchAccuracy ?? 0;
    this.#clock = new StreamClock(opts.latenessMs, opts.confirmRecords ?? WINDOW_STORE_DEFAULTS.confirmRecords);
    this.#windowMs = opts.windowMs;
    this.#latenessMs = opts.latenessMs;
    this.#budget = opts.budget;
    if (opts.amend === undefined) {
      this.#kept = null;
      this.#unregister = null;
    } else {
      const kept = new KeptWindows({ windowMs: opts.windowMs, horizonMs: opts.amend.horizonMs, budget: opts.budget, sketchAccuracy: this.#sketchAccuracy, keptFromMs: -Infinity });
      this.#kept = kept;
      this.#unregister = opts.budget.addReclaimer((bytes) => kept.reclaim(bytes));
    }
  }

  /** Whether closed windows are kept for amendment. */
  get amending(): boolean {
    return this.#kept !== null;
  }

  /** Estimated bytes of the kept closed windows (0 without amendment). */
  get keptBytes(): number {
    return this.#kept?.bytes ?? 0;
  }

  get keptWindows(): number {
    return this.#kept?.windows ?? 0;
  }

  /** Kept windows evicted to stay within MAX_STATE_MB since the lane opened. */
  get evictedWindows(): number {
    return this.#kept?.evictedWindows ?? 0;
  }

  /** Every closed window from here on is kept (undefined without amendment or before a watermark). */
  get keptFromMs(): number | undefined {
    const k = this.#kept?.keptFromMs;
    return k === undefined || !Number.isFinite(k) ? undefined : k;
  }

  /**
   * A restored lane: the closed windows from `ms` on are rebuilt by the replay; without it (a point
   * stored before amendment was on), none of those closed at the restored watermark are.
   */
  restoreKeptFrom(ms: number | undefined): void {
    if (this.#kept === null) return;
    if (ms !== undefined) this.#kept.raiseKeptFrom(ms);
    else if (Number.isFinite(this.#watermark)) this.#kept.raiseKeptFrom((Math.floor((this.#watermark - this.#windowMs) / this.#windowMs) + 1) * this.#windowMs);
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
    return this.#sids.size;
  }

  get openWindows(): number {
    return this.#windows.size;
  }

  /**
   * Merge one batch's partials. Lateness is judged against the watermark as it stood before this
   * batch (the watermark moves per batch, like a micro-batch engine's), so results do not depend on
   * which worker finished first.
   */
  apply(result: DecodeResult, positions?: { start: number; end: number }, replay = false): ApplyOutcome {
    const late: ApplyOutcome['late'] = [];
    const overLimit: ApplyOutcome['overLimit'] = [];
    let accepted = 0;
    let amended = 0;
    let rebuilt = 0;
    const kept = this.#kept;
    const cells = result.cells;
    const so = result.sketchOffsets;
    // Offsets of the accepted cells: the batch's event-time evidence (see StreamClock.observeCells),
    // in a reused array (a fresh one grown cell by cell was most of what a batch's merge allocated).
    if (this.#evidence.length * CELL.STRIDE < cells.length) this.#evidence = new Int32Array(cells.length / CELL.STRIDE);
    const evidence = this.#evidence;
    let evidenceN = 0;
    // The window whose smallest position this batch already noted: a batch's cells are grouped by window,
    // and a Map lookup with a double key boxes it.
    let notedWs = Number.NaN;
    const nums = this.#nums;
    const links = this.#links;
    for (let o = 0; o < cells.length; o += CELL.STRIDE) {
      const key = result.series[cells[o + CELL.SERIES]!]!;
      const ws = cells[o + CELL.WINDOW_START]!;
      const count = cells[o + CELL.COUNT]!;
      if (isClosed(ws, this.#windowMs, this.#watermark)) {
        if (kept === null) {
          late.push({ key, windowStart: ws, count });
          continue;
        }
        const cell = o / CELL.STRIDE;
        const sk = so === undefined ? null : { pairs: result.sketchPairs!, from: so[cell]!, to: so[cell + 1]! };
        const beyond = kept.merge(key, ws, this.#watermark, cells, o + CELL.COUNT, sk, replay, positions);
        if (beyond === null) {
          if (replay) rebuilt += count;
          else amended += count;
        } else late.push({ key, windowStart: ws, count, beyond });
        continue;
      }
      let sid = this.#sids.get(key);
      let slot = -1;
      if (sid !== undefined) {
        for (let c = this.#head[sid]!; c >= 0; c = links[c >> PAGE_BITS]![(c & PAGE_MASK) * LINK_STRIDE]!) {
          if (nums[c >> PAGE_BITS]![(c & PAGE_MASK) * NUM_STRIDE + WS] === ws) {
            slot = c;
            break;
          }
        }
      }
      // Sketch bytes this cell would add: a new cell's sketch, and a bucket for each code it lacks.
      let sketchBytes = 0;
      if (so !== undefined && this.#sketchAccuracy > 0) {
        const sketch = slot < 0 ? undefined : this.#sketches[slot];
        const pairs = result.sketchPairs!;
        const cell = o / CELL.STRIDE;
        let fresh = 0;
        for (let j = so[cell]!; j < so[cell + 1]!; j++) if (sketch === undefined || !sketch.hasCode(pairs[2 * j]!)) fresh++;
        sketchBytes = (sketch === undefined ? SKETCH_BASE_BYTES : 0) + SKETCH_BUCKET_BYTES * Math.min(fresh, 2 * MAX_BUCKETS);
      }
      if (slot < 0) {
        if (sid === undefined) {
          const limit = this.#budget.admit(key, sketchBytes);
          if (limit !== null) {
            overLimit.push({ key, windowStart: ws, count, limit });
            continue;
          }
          sid = this.#newSeries(key);
        } else if (!this.#budget.fits(sketchBytes)) {
          overLimit.push({ key, windowStart: ws, count, limit: 'bytes' });
          continue;
        }
        slot = this.#newCell(sid, ws);
      } else if (sketchBytes > 0 && !this.#budget.fits(sketchBytes)) {
        // An open series whose sketch would grow past the budget: its cell is refused like a new series.
        overLimit.push({ key, windowStart: ws, count, limit: 'bytes' });
        continue;
      }
      if (so !== undefined) {
        const sketch = this.#sketches[slot];
        if (sketch !== undefined) {
          const pairs = result.sketchPairs!;
          const cell = o / CELL.STRIDE;
          const before = sketch.buckets;
          for (let j = so[cell]!; j < so[cell + 1]!; j++) sketch.addCode(pairs[2 * j]!, pairs[2 * j + 1]!);
          sketch.bound();
          this.#budget.charge(SKETCH_BUCKET_BYTES * (sketch.buckets - before));
        }
      }
      if (positions !== undefined && ws !== notedWs) {
        const p = this.#minPosition.get(ws);
        if (p === undefined || positions.start < p) this.#minPosition.set(ws, positions.start);
        notedWs = ws;
      }
      mergeMomentsFrom(nums[slot >> PAGE_BITS]!, (slot & PAGE_MASK) * NUM_STRIDE, cells, o + CELL.COUNT);
      evidence[evidenceN++] = o;
      accepted += count;
    }
    if (positions !== undefined) this.#appliedEnd = positions.end;
    this.#clock.observeCells(cells, evidence.subarray(0, evidenceN));
    this.#watermark = Math.max(this.#watermark, this.#clock.streamMs - this.#latenessMs);
    return { late, overLimit, accepted, amended, rebuilt };
  }

  #newSeries(key: string): number {
    const sid = this.#freeSids.pop() ?? this.#keys.length;
    if (sid === this.#keys.length) this.#keys.push(key);
    else this.#keys[sid] = key;
    this.#head = grown(this.#head, sid + 1);
    this.#head[sid] = -1;
    this.#sids.set(key, sid);
    return sid;
  }

  #newCell(sid: number, ws: number): number {
    const slot = this.#freeCells.pop() ?? this.#cellsMade++;
    const page = slot >> PAGE_BITS;
    if (page === this.#nums.length) {
      this.#nums.push(new Float64Array(NUM_STRIDE << PAGE_BITS));
      this.#links.push(new Int32Array(LINK_STRIDE << PAGE_BITS));
    }
    const nums = this.#nums[page]!;
    const o = (slot & PAGE_MASK) * NUM_STRIDE;
    clearMomentsAt(nums, o);
    nums[o + WS] = ws;
    const links = this.#links[page]!;
    const l = (slot & PAGE_MASK) * LINK_STRIDE;
    links[l] = this.#head[sid]!;
    links[l + 1] = sid;
    this.#head[sid] = slot;
    if (this.#sketchAccuracy > 0) {
      this.#sketches[slot] = new Sketch(this.#sketchAccuracy);
      this.#budget.charge(SKETCH_BASE_BYTES);
    }
    let win = this.#windows.get(ws);
    if (win === undefined) {
      // Sized like the last window closed: windows of a stream hold about the same series, and
      // each regrowth is one more buffer outside the heap for the collector to track.
      win = { slots: new Int32Array(this.#lastWindowCells), n: 0 };
      this.#windows.set(ws, win);
    }
    if (win.n === win.slots.length) win.slots = grown(win.slots, win.n + 1);
    win.slots[win.n++] = slot;
    return slot;
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
    // Kept closed windows too: a restart must replay them whole to amend them again.
    if (this.#kept !== null) p = Math.min(p, this.#kept.minPosition);
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

  /**
   * Removes and returns every window the watermark has closed, oldest first. With amendment: first
   * the rows amended since the last call (a new revision each), then the windows closed now (revision
   * 0, `closedBy`), which are kept until the horizon passes them.
   */
  takeClosed(closedBy: ClosedBy = 'watermark'): ClosedCells {
    const kept = this.#kept;
    if (kept === null) return this.#take((ws) => isClosed(ws, this.#windowMs, this.#watermark));
    const amended = kept.takeAmended();
    const mins = new Map<number, number>();
    const closed = this.#take((ws) => isClosed(ws, this.#windowMs, this.#watermark), mins);
    kept.keep(closed, mins);
    kept.expire(this.#watermark);
    return ClosedCells.concat(amended, closed.withQuality(firstEmission(closed.length, closedBy)));
  }

  /** End of a finite input, or the lane closes: every window closes, and nothing is kept. */
  takeAll(closedBy: ClosedBy = 'end_of_input'): ClosedCells {
    const kept = this.#kept;
    if (kept === null) return this.#take(() => true);
    const amended = kept.takeAmended();
    const closed = this.#take(() => true);
    kept.clear();
    return ClosedCells.concat(amended, closed.withQuality(firstEmission(closed.length, closedBy)));
  }

  /** The lane is gone: its kept windows leave the shared budget. */
  dispose(): void {
    this.#kept?.clear();
    this.#unregister?.();
  }

  /**
   * Copies the closed windows' cells out into columns and frees their slots: a pass over typed arrays
   * with no object per cell (a million series close in tens of milliseconds, not most of a second).
   */
  #take(pred: (ws: number) => boolean, minPositions?: Map<number, number>): ClosedCells {
    const starts = [...this.#windows.keys()].filter(pred).sort((a, b) => a - b);
    let total = 0;
    for (const ws of starts) total += this.#windows.get(ws)!.n;
    const keys = new Array<string>(total);
    // One buffer for both columns: the moments, then the window starts.
    const columns = new Float64Array(total * (MOMENT.STRIDE + 1));
    const stats = columns.subarray(0, total * MOMENT.STRIDE);
    const wss = columns.subarray(total * MOMENT.STRIDE);
    const sketches = this.#sketchAccuracy > 0 ? new Array<Sketch | undefined>(total) : null;
    const head = this.#head;
    const freed: string[] = [];
    let i = 0;
    for (const ws of starts) {
      const win = this.#windows.get(ws)!;
      this.#lastWindowCells = Math.max(64, win.n + (win.n >> 3));
      this.#windows.delete(ws);
      const minPos = this.#minPosition.get(ws);
      if (minPositions !== undefined && minPos !== undefined) minPositions.set(ws, minPos);
      this.#minPosition.delete(ws);
      for (let j = 0; j < win.n; j++, i++) {
        const slot = win.slots[j]!;
        const nums = this.#nums[slot >> PAGE_BITS]!;
        const o = (slot & PAGE_MASK) * NUM_STRIDE;
        const d = i * MOMENT.STRIDE;
        for (let k = 0; k < MOMENT.STRIDE; k++) stats[d + k] = nums[o + k]!;
        wss[i] = ws;
        if (sketches !== null) {
          const sketch = this.#sketches[slot];
          sketches[i] = sketch;
          this.#sketches[slot] = undefined;
          // Handed to the row formatter with the close: no longer open state.
          if (sketch !== undefined) this.#budget.charge(-sketch.bytes);
        }
        const links = this.#links[slot >> PAGE_BITS]!;
        const l = (slot & PAGE_MASK) * LINK_STRIDE;
        const sid = links[l + 1]!;
        const key = this.#keys[sid]!;
        keys[i] = key;
        // Unlink the cell from its series' list (newest first; a series has a few open windows at most).
        const next = links[l]!;
        if (head[sid] === slot) head[sid] = next;
        else {
          let c = head[sid]!;
          for (;;) {
            const cl = this.#links[c >> PAGE_BITS]!;
            const co = (c & PAGE_MASK) * LINK_STRIDE;
            if (cl[co] === slot) {
              cl[co] = next;
              break;
            }
            c = cl[co]!;
          }
        }
        this.#freeCells.push(slot);
        if (head[sid] === -1) {
          this.#keys[sid] = undefined;
          freed.push(key);
          this.#freeSids.push(sid);
          this.#budget.release(key);
        }
      }
    }
    this.#forget(freed);
    return new ClosedCells(keys, wss, stats, sketches);
  }

  /**
   * Drops closed series from the key map: one by one when few close, by keeping the survivors when
   * most do (deleting a million keys one by one took most of a second).
   */
  #forget(freed: readonly string[]): void {
    if (freed.length * 2 < this.#sids.size) {
      for (const key of freed) this.#sids.delete(key);
      return;
    }
    const kept = new Map<string, number>();
    if (freed.length < this.#sids.size) for (const [key, sid] of this.#sids) if (this.#keys[sid] === key) kept.set(key, sid);
    this.#sids = kept;
  }
}
