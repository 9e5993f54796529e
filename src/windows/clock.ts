// A partition's stream time and the watermark it implies, robust to outliers: a forward jump of event
// time is followed only once enough records confirm it (WATERMARK_CONFIRM_RECORDS).
import { CELL } from '../core/messages.js';
import { cellPoints, confirmedAt, confirmedTime, latestRecord, MAX_FAST_CONFIRM, pointsOf, type TimePoint } from './clock-points.js';

export { cellPoints, type TimePoint };

/**
 * The partition's stream time, from which the watermark (stream time - lateness) follows.
 *
 * A record within `jumpMs` (the allowed lateness) of stream time moves it freely: such a record can
 * never make a later in-order record late. A record further ahead is held, as evidence of a jump:
 * stream time follows only once `confirm` records at or beyond a point confirm it (within this batch
 * or across consecutive batches that each bring such records), and then to the confirm-th largest of
 * their event times, so fewer than `confirm` outliers never move it. A batch with no record ahead of
 * the bound clears the evidence. Until stream time exists (a new partition without a restored
 * watermark), every record counts as ahead: the first `confirm` records start it.
 * The evidence held is at most `confirm - 1` records' worth of points.
 */
export class StreamClock {
  readonly #jumpMs: number;
  readonly #confirm: number;
  #stream = -Infinity;
  /** Held evidence ahead of stream time + jump, ascending by time; its total n is < confirm. */
  #held: TimePoint[] = [];
  /** #chainsAll's scratch: a batch's point times. */
  #times = new Float64Array(0);
  /** #observeKeyed's scratch: the points' keys, and their counts by index. */
  #keys = new Float64Array(0);
  #counts = new Float64Array(0);

  constructor(jumpMs: number, confirm: number) {
    if (!(jumpMs >= 0)) throw new RangeError(`jumpMs (${jumpMs}) must be >= 0`);
    if (!(Number.isSafeInteger(confirm) && confirm >= 1)) throw new RangeError(`confirm (${confirm}) must be an integer >= 1`);
    this.#jumpMs = jumpMs;
    this.#confirm = confirm;
  }

  get streamMs(): number {
    return this.#stream;
  }

  /** Records held as evidence of a jump not yet confirmed. */
  get heldRecords(): number {
    let n = 0;
    for (const p of this.#held) n += p.n;
    return n;
  }

  /** Stream time is at least ms (a restored or wall-clock watermark + lateness); never moves back. */
  raise(ms: number): void {
    if (ms > this.#stream) this.#stream = ms;
  }

  /** One batch's evidence. */
  observe(points: readonly TimePoint[]): void {
    const limit = this.#stream + this.#jumpMs;
    let ahead = false;
    for (const p of points) if (p.n > 0 && !(p.t <= limit)) ahead = true;
    const all = [...this.#held, ...points.filter((p) => p.n > 0)].sort((a, b) => a.t - b.t);
    let i = this.#chain(all, 0);
    if (!ahead) {
      // Nothing of this batch is beyond the bound: earlier evidence was not confirmed in time.
      this.#held = [];
      return;
    }
    const j = confirmedAt(i, all.length, (x) => all[x]!.n, this.#confirm);
    if (j >= 0) {
      this.raise(all[j]!.t);
      i = this.#chain(all, j);
    }
    this.#held = all.slice(i);
  }

  /**
   * observe() of the points of these partials (CELL layout, at the given offsets; see cellPoints),
   * with the two common cases decided in one pass and no points built: with nothing held, a batch
   * entirely within the jump bound (an in-order stream), and a batch entirely beyond it whose
   * confirm-th latest record is within the bound of its latest (the whole stream moved on). Anything
   * else goes through observe().
   */
  observeCells(cells: Float64Array, at: ArrayLike<number>): void {
    if (this.#held.length === 0 && this.#confirm <= MAX_FAST_CONFIRM) {
      let tmin = Infinity;
      let tmax = -Infinity;
      let total = 0;
      for (let j = 0; j < at.length; j++) {
        const o = at[j]!;
        const count = cells[o + CELL.COUNT]!;
        if (count <= 0) continue;
        total += count;
        if (cells[o + CELL.TS_MIN]! < tmin) tmin = cells[o + CELL.TS_MIN]!;
        if (cells[o + CELL.TS_MAX]! > tmax) tmax = cells[o + CELL.TS_MAX]!;
      }
      const limit = this.#stream + this.#jumpMs;
      // Every point is within the bound: the chain takes them all, and nothing is ahead.
      if (total === 0 || tmax <= limit) {
        if (tmax > this.#stream) this.#stream = tmax;
        return;
      }
      if (tmin > limit && total >= this.#confirm) {
        const t = confirmedTime(cells, at, this.#confirm);
        // Stream time jumps to the confirm-th latest record, and from there the chain takes the rest.
        if (tmax - t <= this.#jumpMs) {
          this.raise(t);
          this.raise(tmax);
          return;
        }
      }
    }
    if (this.#observeBuckets(cells, at)) return;
    if (this.#held.length === 0 && this.#chainsAll(cells, at)) return;
    if (this.#observeKeyed(cells, at)) return;
    const points: TimePoint[] = [];
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      cellPoints(cells[o + CELL.TS_MIN]!, cells[o + CELL.TS_MAX]!, cells[o + CELL.COUNT]!, points);
    }
    this.observe(points);
  }

  /**
   * observe() of the partials' points (and the held ones) without sorting them: the points go into
   * buckets one jump bound wide, from the smallest time up. Points of one bucket lie within the bound
   * of each other, so a chain that reaches a bucket's earliest point takes the whole bucket, and the
   * chain is decided bucket by bucket in time order; only the bucket where the confirm-th latest
   * record lies is searched, for its time (latestRecord). A file of samples on the minute (seed 001: a batch's
   * tens of thousands of partials on four minutes, each spread over a second) fails #chainsAll at the
   * first minute and was sorted twice a batch, the main thread's largest part. False (nothing
   * changed) where the bound is 0, the times are not numbers or need more than BUCKETS_PER_POINT
   * buckets a point (a point far ahead of the rest) or MAX_BUCKETS in all, or rounding made a bucket
   * wider than the bound.
   */
  #observeBuckets(cells: Float64Array, at: ArrayLike<number>): boolean {
    const jump = this.#jumpMs;
    const held = this.#held;
    if (!(jump > 0)) return false;
    const limit = this.#stream + jump;
    let tmin = Infinity;
    let tmax = -Infinity;
    let ahead = false;
    let m = held.length;
    for (const p of held) {
      if (p.t !== p.t) return false;
      if (p.t < tmin) tmin = p.t;
      if (p.t > tmax) tmax = p.t;
    }
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      const count = cells[o + CELL.COUNT]!;
      if (!(count > 0)) {
        if (count <= 0) continue;
        return false;
      }
      const lo = cells[o + CELL.TS_MIN]!;
      const hi = cells[o + CELL.TS_MAX]!;
      if (hi !== hi || (count > 1 && lo !== lo)) return false;
      // As observe(): a point beyond the bound is ahead.
      if (!(hi <= limit) || (count > 1 && !(lo <= limit))) ahead = true;
      if (hi > tmax) tmax = hi;
      if (hi < tmin) tmin = hi;
      if (count > 1) {
        if (lo > tmax) tmax = lo;
        if (lo < tmin) tmin = lo;
      }
      m += count > 1 ? 2 : 1;
    }
    if (m === 0) {
      this.#held = [];
      return true;
    }
    const nb = Math.floor((tmax - tmin) / jump) + 1;
    // Not a number (a time that is not) or too many buckets for the points.
    if (!(nb <= BUCKETS_PER_POINT * m + 64 && nb <= MAX_BUCKETS)) return false;
    if (scratch.min.length < nb) {
      const size = Math.min(MAX_BUCKETS, Math.max(nb, 2 * scratch.min.length));
      scratch.min = new Float64Array(size);
      scratch.max = new Float64Array(size);
      scratch.n = new Float64Array(size);
    }
    const bMin = scratch.min;
    const bMax = scratch.max;
    const bN = scratch.n;
    bMin.fill(Infinity, 0, nb);
    bMax.fill(-Infinity, 0, nb);
    bN.fill(0, 0, nb);
    const bucketOf = (t: number): number => Math.floor((t - tmin) / jump);
    const put = (t: number, n: number): void => {
      const b = bucketOf(t);
      if (t < bMin[b]!) bMin[b] = t;
      if (t > bMax[b]!) bMax[b] = t;
      bN[b] = bN[b]! + n;
    };
    // Written out, not eachPoint: this loop runs over every point of every batch, and a visitor
    // shared by several callers is a call per point that the compiler does not inline.
    for (const p of held) put(p.t, p.n);
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      const count = cells[o + CELL.COUNT]!;
      if (!(count > 0)) continue;
      // cellPoints: one record at the latest time, the others at or after the earliest.
      put(cells[o + CELL.TS_MAX]!, 1);
      if (count > 1) put(cells[o + CELL.TS_MIN]!, count - 1);
    }
    // A bucket's points are all taken once its earliest is: only while each is within the bound of it.
    for (let b = 0; b < nb; b++) if (bN[b]! > 0 && !(bMax[b]! <= bMin[b]! + jump)) return false;
    /** The first bucket from b on that the chain from stream time does not reach. */
    const chain = (b: number): number => {
      for (; b < nb; b++) {
        if (bN[b] === 0) continue;
        if (!(bMin[b]! <= this.#stream + jump)) break;
        if (bMax[b]! > this.#stream) this.#stream = bMax[b]!;
      }
      return b;
    };
    let stop = chain(0);
    if (!ahead) {
      this.#held = [];
      return true;
    }
    const c = confirmedAt(stop, nb, (b) => bN[b]!, this.#confirm);
    if (c >= 0) {
      let acc = 0;
      for (let b = c + 1; b < nb; b++) acc += bN[b]!;
      // The confirm-th latest record is in bucket c: the (confirm - acc)-th latest of its records.
      const inC = (t: number): boolean => bucketOf(t) === c;
      this.raise(latestRecord(this.#held, cells, at, inC, this.#confirm - acc));
      // The chain from that record takes the rest of bucket c (later, within the bound of its earliest).
      if (bMax[c]! > this.#stream) this.#stream = bMax[c]!;
      stop = chain(c + 1);
    }
    const rest = stop < nb ? pointsOf(this.#held, cells, at, (t) => bucketOf(t) >= stop) : [];
    rest.sort((x, y) => x.t - y.t);
    this.#held = rest;
    return true;
  }

  /**
   * With nothing held: when the batch's points, in time order, each lie within the jump bound of
   * stream time as the ones before moved it, observe() would take them all and hold nothing. Decided
   * on a sorted copy of the times alone (a typed-array sort, no point objects): a time-ordered stream
   * whose batches span more than the lateness (a file of samples) is this case every batch.
   * Leaves stream time as it was and returns false otherwise.
   */
  #chainsAll(cells: Float64Array, at: ArrayLike<number>): boolean {
    if (this.#times.length < 2 * at.length) this.#times = new Float64Array(2 * at.length);
    const times = this.#times;
    let n = 0;
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      const count = cells[o + CELL.COUNT]!;
      if (count <= 0) continue;
      times[n++] = cells[o + CELL.TS_MAX]!;
      if (count > 1) times[n++] = cells[o + CELL.TS_MIN]!;
    }
    const sorted = times.subarray(0, n).sort();
    let stream = this.#stream;
    for (let i = 0; i < n; i++) {
      const t = sorted[i]!;
      if (!(t <= stream + this.#jumpMs)) return false;
      if (t > stream) stream = t;
    }
    this.#stream = stream;
    return true;
  }

  /**
   * observe() of the partials' points (and the held ones) without a point object per partial or a
   * comparator sort: each point is one number, its time above the smallest times KEY_SLOTS plus its
   * index, sorted as a typed array; its count is looked up by the index. A file of samples taken on
   * the minute has batches whose times lie a minute apart, beyond the jump bound (no #chainsAll):
   * every batch came here, and sorting its tens of thousands of point objects was a tenth of the main
   * thread's time. False (nothing changed) where the keys would not be exact: a time that is not a
   * whole millisecond, times over KEY_SPAN_MS apart, more than KEY_SLOTS points.
   */
  #observeKeyed(cells: Float64Array, at: ArrayLike<number>): boolean {
    const held = this.#held;
    const m = 2 * at.length + held.length;
    if (m > KEY_SLOTS) return false;
    const limit = this.#stream + this.#jumpMs;
    let tmin = Infinity;
    let tmax = -Infinity;
    let ahead = false;
    for (const p of held) {
      if (p.t < tmin) tmin = p.t;
      if (p.t > tmax) tmax = p.t;
    }
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      const count = cells[o + CELL.COUNT]!;
      if (!(count > 0)) continue;
      const lo = cells[o + CELL.TS_MIN]!;
      const hi = cells[o + CELL.TS_MAX]!;
      if (lo < tmin) tmin = lo;
      if (hi > tmax) tmax = hi;
      // As observe(): a point beyond the bound is ahead (the latest is, if any is; a time that is not
      // a number leaves the batch to observe() below).
      if (!(hi <= limit)) ahead = true;
    }
    if (!(tmax - tmin < KEY_SPAN_MS)) return false;
    if (this.#keys.length < m) {
      this.#keys = new Float64Array(m);
      this.#counts = new Float64Array(m);
    }
    const keys = this.#keys;
    const counts = this.#counts;
    let k = 0;
    const put = (t: number, n: number): boolean => {
      if (n <= 0) return true;
      if (!Number.isInteger(t)) return false;
      keys[k] = (t - tmin) * KEY_SLOTS + k;
      counts[k++] = n;
      return true;
    };
    for (const p of held) if (!put(p.t, p.n)) return false;
    for (let j = 0; j < at.length; j++) {
      const o = at[j]!;
      const count = cells[o + CELL.COUNT]!;
      // cellPoints: one record at the latest time, the others at or after the earliest.
      if (!(count > 0)) continue;
      if (!put(cells[o + CELL.TS_MAX]!, 1) || !put(cells[o + CELL.TS_MIN]!, count - 1)) return false;
    }
    const sorted = keys.subarray(0, k).sort();
    const timeOf = (i: number) => tmin + Math.floor(sorted[i]! / KEY_SLOTS);
    const countOf = (i: number) => counts[sorted[i]! % KEY_SLOTS]!;
    const chain = (i: number): number => {
      while (i < k && timeOf(i) <= this.#stream + this.#jumpMs) {
        if (timeOf(i) > this.#stream) this.#stream = timeOf(i);
        i++;
      }
      return i;
    };
    let i = chain(0);
    if (!ahead) {
      this.#held = [];
      return true;
    }
    const j = confirmedAt(i, k, countOf, this.#confirm);
    if (j >= 0) {
      this.raise(timeOf(j));
      i = chain(j);
    }
    const rest: TimePoint[] = [];
    for (let j = i; j < k; j++) rest.push({ t: timeOf(j), n: countOf(j) });
    this.#held = rest;
    return true;
  }

  /** Advances stream time over points (ascending) within the jump bound, from index i; returns the first point beyond it. */
  #chain(all: readonly TimePoint[], i: number): number {
    while (i < all.length && all[i]!.t <= this.#stream + this.#jumpMs) {
      if (all[i]!.t > this.#stream) this.#stream = all[i]!.t;
      i++;
    }
    return i;
  }
}

/**
 * #observeKeyed's keys: (time - the smallest time) * KEY_SLOTS + index, exact below 2^53, so the
 * times must lie within KEY_SPAN_MS (about 2.2 years) and the points be at most KEY_SLOTS.
 */
const KEY_SLOTS = 2 ** 17;
const KEY_SPAN_MS = 2 ** 53 / KEY_SLOTS;

/** #observeBuckets' bound on buckets a point (beyond it, a point far ahead of the rest, the batch is sorted). */
const BUCKETS_PER_POINT = 4;

/** #observeBuckets' buckets at most (1.5 MiB of scratch); a batch that needs more is sorted. */
const MAX_BUCKETS = 1 << 16;

/**
 * #observeBuckets' scratch, one for all the clocks of a thread (a call never waits, so no two use it
 * at once): a clock per lane, each keeping buckets of its own, would hold megabytes a lane.
 */
const scratch = { min: new Float64Array(0), max: new Float64Array(0), n: new Float64Array(0) };
