// Event-time evidence as points (a time and the records at or after it) and what StreamClock asks
// of them without sorting them all: the confirm-th latest record, the points of some times. Pure.
import { CELL } from '../core/messages.js';

/** Event-time evidence: n records at or after time t (ms). */
export interface TimePoint {
  t: number;
  n: number;
}

/**
 * What a batch's partial of n records proves about event times: one record at its latest time, and
 * n - 1 at or after its earliest (the records in between are not known one by one).
 */
export function cellPoints(tsMin: number, tsMax: number, count: number, out: TimePoint[]): void {
  if (count <= 0) return;
  out.push({ t: tsMax, n: 1 });
  if (count > 1) out.push({ t: tsMin, n: count - 1 });
}

/** observeCells' fast path keeps the confirm latest points; beyond this many it sorts, as observe does. */
export const MAX_FAST_CONFIRM = 64;

/**
 * Where the confirm-th latest record lies among points first..n-1 in time order (count(i) records
 * each): the point whose records, with those of every later point, first reach confirm; -1 where all
 * of them together are fewer (nothing confirms a jump).
 */
export function confirmedAt(first: number, n: number, count: (i: number) => number, confirm: number): number {
  let acc = 0;
  for (let j = n - 1; j >= first; j--) {
    acc += count(j);
    if (acc >= confirm) return j;
  }
  return -1;
}

/**
 * The time of the confirm-th latest record among the partials' points (cellPoints: n - 1 records at
 * tsMin, one at tsMax), from the confirm latest points (each holds at least one record).
 */
export function confirmedTime(cells: Float64Array, at: ArrayLike<number>, confirm: number): number {
  const top = new LatestPoints(confirm);
  for (let j = 0; j < at.length; j++) {
    const o = at[j]!;
    const count = cells[o + CELL.COUNT]!;
    if (count <= 0) continue;
    top.offer(cells[o + CELL.TS_MAX]!, 1);
    top.offer(cells[o + CELL.TS_MIN]!, count - 1);
  }
  return top.recordTime(confirm);
}

/** The latest `size` points offered (their times and records), kept in descending time order. */
class LatestPoints {
  readonly #ts: Float64Array;
  readonly #ns: Float64Array;
  #k = 0;

  constructor(readonly size: number) {
    this.#ts = new Float64Array(size);
    this.#ns = new Float64Array(size);
  }

  offer(t: number, n: number): void {
    const ts = this.#ts;
    const ns = this.#ns;
    const full = this.#k === this.size;
    if (n <= 0 || (full && t <= ts[this.#k - 1]!)) return;
    let i = full ? this.#k - 1 : this.#k++;
    // Insertion into the descending list.
    while (i > 0 && ts[i - 1]! < t) {
      ts[i] = ts[i - 1]!;
      ns[i] = ns[i - 1]!;
      i--;
    }
    ts[i] = t;
    ns[i] = n;
  }

  /** The time of the r-th latest record among the points kept (the earliest point's where they hold fewer). */
  recordTime(r: number): number {
    let acc = 0;
    for (let i = 0; i < this.#k; i++) if ((acc += this.#ns[i]!) >= r) return this.#ts[i]!;
    return this.#ts[this.#k - 1]!;
  }
}

/**
 * The time of the r-th latest record among the points whose time passes keep (there are at least
 * r): the r latest points kept in order as they come where r is small, else all of them sorted.
 */
export function latestRecord(held: readonly TimePoint[], cells: Float64Array, at: ArrayLike<number>, keep: (t: number) => boolean, r: number): number {
  if (r > MAX_FAST_CONFIRM) {
    const all = pointsOf(held, cells, at, keep).sort((x, y) => y.t - x.t);
    let acc = 0;
    for (const p of all) if ((acc += p.n) >= r) return p.t;
    return all[all.length - 1]!.t;
  }
  const top = new LatestPoints(r);
  eachPoint(held, cells, at, (t, n) => {
    if (keep(t)) top.offer(t, n);
  });
  return top.recordTime(r);
}

/** The held points and the partials' points (cellPoints) whose time passes keep. */
export function pointsOf(held: readonly TimePoint[], cells: Float64Array, at: ArrayLike<number>, keep: (t: number) => boolean): TimePoint[] {
  const out: TimePoint[] = [];
  eachPoint(held, cells, at, (t, n) => {
    if (keep(t)) out.push({ t, n });
  });
  return out;
}

/** Calls f(t, n) for each held point, then each point of the partials at `at` (as cellPoints makes them). */
function eachPoint(held: readonly TimePoint[], cells: Float64Array, at: ArrayLike<number>, f: (t: number, n: number) => void): void {
  for (const p of held) f(p.t, p.n);
  for (let j = 0; j < at.length; j++) {
    const o = at[j]!;
    const count = cells[o + CELL.COUNT]!;
    if (!(count > 0)) continue;
    f(cells[o + CELL.TS_MAX]!, 1);
    if (count > 1) f(cells[o + CELL.TS_MIN]!, count - 1);
  }
}
