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
  if (m.count === 0) return 0;
  const v = m.m2 / m.count;
  return v > 0 ? Math.sqrt(v) : 0;
}
