// Summary statistics of a list of measurements (records/s, seconds, bytes).

export interface Summary {
  readonly n: number;
  readonly min: number;
  readonly median: number;
  readonly mean: number;
  readonly max: number;
  /** Sample standard deviation (n - 1); 0 for a single value. */
  readonly stddev: number;
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new RangeError('summarize: no values');
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const mean = sorted.reduce((a, b) => a + b, 0) / n;
  const variance = n > 1 ? sorted.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1) : 0;
  return { n, min: sorted[0]!, median, mean, max: sorted[n - 1]!, stddev: Math.sqrt(variance) };
}

export const fmt = {
  int: (x: number): string => Math.round(x).toLocaleString('en-US'),
  mib: (bytes: number): string => (bytes / 1048576).toFixed(0),
  ratio: (x: number): string => `${x.toFixed(2)}x`,
  secs: (x: number): string => x.toFixed(2),
};
