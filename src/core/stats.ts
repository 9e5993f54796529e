// Running statistics: Welford for single samples, Chan et al. for merging partials.
// Both are numerically stable where sum/sum-of-squares is not (large offsets, tiny variances).

export interface Moments {
  count: number;
  mean: number;
  /** Sum of squared deviations from the mean. */
  m2: number;
  min: number;
  max: number;
  sum: number;
  tsMin: number;
  tsMax: number;
}

export function emptyMoments(): Moments {
  return { count: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity, sum: 0, tsMin: Infinity, tsMax: -Infinity };
}

export function addSample(m: Moments, value: number, tsMs: number): void {
  m.count += 1;
  const delta = value - m.mean;
  m.mean += delta / m.count;
  m.m2 += delta * (value - m.mean);
  if (value < m.min) m.min = value;
  if (value > m.max) m.max = value;
  m.sum += value;
  if (tsMs < m.tsMin) m.tsMin = tsMs;
  if (tsMs > m.tsMax) m.tsMax = tsMs;
}

/** Merge b into a (Chan's parallel update). */
export function mergeMoments(a: Moments, b: Moments): void {
  if (b.count === 0) return;
  if (a.count === 0) {
    Object.assign(a, b);
    return;
  }
  const n = a.count + b.count;
  const delta = b.mean - a.mean;
  a.mean += delta * (b.count / n);
  a.m2 += b.m2 + delta * delta * ((a.count * b.count) / n);
  a.count = n;
  if (b.min < a.min) a.min = b.min;
  if (b.max > a.max) a.max = b.max;
  a.sum += b.sum;
  if (b.tsMin < a.tsMin) a.tsMin = b.tsMin;
  if (b.tsMax > a.tsMax) a.tsMax = b.tsMax;
}

/** Population standard deviation (Ceilometer reports the population stddev). */
export function stddev(m: Moments): number {
  return stddevOf(m.count, m.m2);
}

/** The population standard deviation of count samples whose squared deviations sum to m2 (0 when none). */
export function stddevOf(count: number, m2: number): number {
  if (count === 0) return 0;
  const v = m2 / count;
  return v > 0 ? Math.sqrt(v) : 0;
}

/**
 * Moments laid out as numbers in a Float64Array (the window store's cells, closed cells): no object
 * per (series, window). MOMENT.STRIDE numbers from an offset, in this order.
 */
export const MOMENT = {
  COUNT: 0,
  MEAN: 1,
  M2: 2,
  MIN: 3,
  MAX: 4,
  SUM: 5,
  TS_MIN: 6,
  TS_MAX: 7,
  STRIDE: 8,
} as const;

/** An empty cell at a[o..o + MOMENT.STRIDE) (what emptyMoments() is as an object). */
export function clearMomentsAt(a: Float64Array, o: number): void {
  a[o + MOMENT.COUNT] = 0;
  a[o + MOMENT.MEAN] = 0;
  a[o + MOMENT.M2] = 0;
  a[o + MOMENT.MIN] = Infinity;
  a[o + MOMENT.MAX] = -Infinity;
  a[o + MOMENT.SUM] = 0;
  a[o + MOMENT.TS_MIN] = Infinity;
  a[o + MOMENT.TS_MAX] = -Infinity;
}

/**
 * mergeMoments(cell at a[o], cell at b[bo]) on MOMENT layouts: the same arithmetic, in the same order,
 * with the numbers read where they lie (ten double arguments to a call that is not inlined are boxed).
 */
export function mergeMomentsFrom(a: Float64Array, o: number, b: Float64Array, bo: number): void {
  const count = b[bo + MOMENT.COUNT]!;
  if (count === 0) return;
  const ac = a[o + MOMENT.COUNT]!;
  if (ac === 0) {
    for (let k = 0; k < MOMENT.STRIDE; k++) a[o + k] = b[bo + k]!;
    return;
  }
  const n = ac + count;
  const am = a[o + MOMENT.MEAN]!;
  const delta = b[bo + MOMENT.MEAN]! - am;
  a[o + MOMENT.MEAN] = am + delta * (count / n);
  a[o + MOMENT.M2] = a[o + MOMENT.M2]! + (b[bo + MOMENT.M2]! + delta * delta * ((ac * count) / n));
  a[o + MOMENT.COUNT] = n;
  if (b[bo + MOMENT.MIN]! < a[o + MOMENT.MIN]!) a[o + MOMENT.MIN] = b[bo + MOMENT.MIN]!;
  if (b[bo + MOMENT.MAX]! > a[o + MOMENT.MAX]!) a[o + MOMENT.MAX] = b[bo + MOMENT.MAX]!;
  a[o + MOMENT.SUM] = a[o + MOMENT.SUM]! + b[bo + MOMENT.SUM]!;
  if (b[bo + MOMENT.TS_MIN]! < a[o + MOMENT.TS_MIN]!) a[o + MOMENT.TS_MIN] = b[bo + MOMENT.TS_MIN]!;
  if (b[bo + MOMENT.TS_MAX]! > a[o + MOMENT.TS_MAX]!) a[o + MOMENT.TS_MAX] = b[bo + MOMENT.TS_MAX]!;
}
