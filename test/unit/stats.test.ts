import t from 'tap';
import { addSample, emptyMoments, mergeMoments, stddev, type Moments } from '../../src/core/stats.js';
import { Rng, relDiff } from '../fixtures/gen.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

interface Ref {
  count: number;
  mean: number;
  variance: number;
  min: number;
  max: number;
  sum: number;
  tsMin: number;
  tsMax: number;
}

/** Naive two-pass reference: mean first, then the mean squared deviation. */
function twoPass(xs: readonly number[], ts: readonly number[]): Ref {
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const x of xs) {
    sum += x;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const mean = sum / xs.length;
  let ss = 0;
  for (const x of xs) ss += (x - mean) * (x - mean);
  return {
    count: xs.length,
    mean,
    variance: ss / xs.length,
    min,
    max,
    sum,
    tsMin: Math.min(...ts),
    tsMax: Math.max(...ts),
  };
}

function onePass(xs: readonly number[], ts: readonly number[]): Moments {
  const m = emptyMoments();
  for (let i = 0; i < xs.length; i++) addSample(m, xs[i]!, ts[i]!);
  return m;
}

function clone(m: Moments): Moments {
  return { ...m };
}

/** Random split of [0, n) into k non-empty contiguous chunks (as [start, end) pairs). */
function randomSplit(rng: Rng, n: number, k: number): Array<[number, number]> {
  const cuts = new Set<number>();
  while (cuts.size < k - 1) cuts.add(rng.int(1, n - 1));
  const sorted = [0, ...[...cuts].sort((a, b) => a - b), n];
  const out: Array<[number, number]> = [];
  for (let i = 0; i + 1 < sorted.length; i++) out.push([sorted[i]!, sorted[i + 1]!]);
  return out;
}

function partials(xs: readonly number[], ts: readonly number[], chunks: Array<[number, number]>): Moments[] {
  return chunks.map(([a, b]) => onePass(xs.slice(a, b), ts.slice(a, b)));
}

function foldLeft(parts: readonly Moments[]): Moments {
  const acc = emptyMoments();
  for (const p of parts) mergeMoments(acc, clone(p));
  return acc;
}

function foldTree(parts: readonly Moments[]): Moments {
  if (parts.length === 0) return emptyMoments();
  if (parts.length === 1) return clone(parts[0]!);
  const mid = parts.length >> 1;
  const left = foldTree(parts.slice(0, mid));
  mergeMoments(left, foldTree(parts.slice(mid)));
  return left;
}

function generalData(seed: number, n: number): { xs: number[]; ts: number[] } {
  const rng = new Rng(seed);
  const xs: number[] = [];
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    // Mostly moderate values, some outliers, some exact repeats.
    const r = rng.next();
    xs.push(r < 0.05 ? rng.range(-1e6, 1e6) : r < 0.1 ? 42 : rng.range(-1000, 1000));
    ts.push(1_581_424_933_000 + rng.int(-3_600_000, 3_600_000));
  }
  return { xs, ts };
}

/** Values base + k/q with integer k: exactly representable, so an exact BigInt reference is possible. */
function dyadicData(seed: number, n: number, base: number, q: number, kMax: number): { xs: number[]; ks: number[]; ts: number[] } {
  const rng = new Rng(seed);
  const ks: number[] = [];
  const xs: number[] = [];
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const k = rng.int(0, kMax);
    ks.push(k);
    xs.push(base + k / q);
    ts.push(1_000_000 + i);
  }
  return { xs, ks, ts };
}

/** Exact mean and population variance of base + k/q using rational arithmetic in BigInt. */
function exactDyadic(ks: readonly number[], base: number, q: number): { mean: number; variance: number; sum: number } {
  const Q = BigInt(q);
  const B = BigInt(base) * Q;
  let s = 0n;
  let ss = 0n;
  for (const k of ks) {
    const x = B + BigInt(k);
    s += x;
    ss += x * x;
  }
  const n = BigInt(ks.length);
  const num = n * ss - s * s; // n^2 q^2 variance, exactly
  const nq = ks.length * q;
  return { mean: Number(s) / nq, variance: Number(num) / (nq * nq), sum: Number(s) / q };
}

/** Unit in the last place of a positive double. */
function ulp(x: number): number {
  return 2 ** (Math.floor(Math.log2(x)) - 52);
}

function checkAgainst(t: TapTest, m: Moments, ref: Ref, tol: { mean: number; variance: number; sum: number }, label: string): void {
  t.equal(m.count, ref.count, `${label}: count`);
  t.equal(m.min, ref.min, `${label}: min`);
  t.equal(m.max, ref.max, `${label}: max`);
  t.equal(m.tsMin, ref.tsMin, `${label}: tsMin`);
  t.equal(m.tsMax, ref.tsMax, `${label}: tsMax`);
  const scale = Math.max(Math.abs(ref.min), Math.abs(ref.max));
  t.ok(Math.abs(m.mean - ref.mean) <= tol.mean * scale, `${label}: mean ${m.mean} vs ${ref.mean}`);
  t.ok(relDiff(m.m2 / m.count, ref.variance) <= tol.variance, `${label}: variance ${m.m2 / m.count} vs ${ref.variance}`);
  t.ok(Math.abs(m.sum - ref.sum) <= tol.sum * scale * ref.count, `${label}: sum ${m.sum} vs ${ref.sum}`);
  t.ok(relDiff(stddev(m), Math.sqrt(ref.variance)) <= tol.variance, `${label}: stddev ${stddev(m)} vs ${Math.sqrt(ref.variance)}`);
}


t.test('addSample matches a two-pass computation on generated data', async (t) => {
  for (const [seed, n] of [
    [1, 1],
    [2, 2],
    [3, 17],
    [4, 1000],
    [5, 5000],
  ] as const) {
    const { xs, ts } = generalData(seed, n);
    const m = onePass(xs, ts);
    checkAgainst(t, m, twoPass(xs, ts), { mean: 1e-12, variance: 1e-10, sum: 1e-15 }, `seed ${seed} n ${n}`);
  }
});

t.test('constant values have zero spread and never a negative or NaN stddev', async (t) => {
  for (const c of [0, -5.5, 1e9 + 0.1, 1e-300, 123456789.123]) {
    const m = onePass(new Array<number>(1000).fill(c), new Array<number>(1000).fill(7));
    t.equal(m.mean, c, `mean of constant ${c}`);
    t.equal(stddev(m), 0, `stddev of constant ${c}`);
    t.ok(m.m2 >= 0, `m2 of constant ${c} is not negative`);
  }
  const single = onePass([3.25], [99]);
  t.equal(stddev(single), 0, 'one sample: stddev 0');
  t.equal(single.mean, 3.25);
  t.equal(single.sum, 3.25);
  t.equal(single.tsMin, 99);
  t.equal(single.tsMax, 99);
});

t.test('large offsets: Welford stays accurate where the naive sum of squares fails', async (t) => {
  // The tolerance is set by what a double can represent: a mean near `base` carries an error of about
  // ulp(base) (1.2e-7 at 1e9), so no algorithm that keeps the mean in a double can know the variance better
  // than roughly ulp/stddev relative. The naive formula is off by many orders of magnitude more.
  const cases = [
    { seed: 11, base: 1e9, q: 1024, kMax: 1023 }, // stddev ~0.29
    { seed: 12, base: 1e9, q: 1 << 20, kMax: 1023 }, // stddev ~2.8e-4
    { seed: 13, base: 1e9, q: 1 << 20, kMax: 16 }, // stddev ~4.7e-6 (variance ~2e-11)
    { seed: 14, base: 4e12, q: 64, kMax: 640 }, // stddev ~2.9
  ];
  for (const c of cases) {
    const n = 10_000;
    const { xs, ks, ts } = dyadicData(c.seed, n, c.base, c.q, c.kMax);
    const exact = exactDyadic(ks, c.base, c.q);
    const label = `base ${c.base} step 1/${c.q} kMax ${c.kMax}`;
    const tol = (2 * ulp(c.base)) / Math.sqrt(exact.variance);

    // The naive single-pass formula E[x^2] - E[x]^2: show the data really defeats it.
    let s = 0;
    let s2 = 0;
    for (const x of xs) {
      s += x;
      s2 += x * x;
    }
    const naive = s2 / n - (s / n) * (s / n);
    t.ok(relDiff(naive, exact.variance) > 0.5, `${label}: naive sum-of-squares is badly off (${naive} vs ${exact.variance})`);

    const m = onePass(xs, ts);
    t.ok(relDiff(m.mean, exact.mean) < 1e-14, `${label}: mean ${m.mean} vs exact ${exact.mean}`);
    t.ok(relDiff(m.m2 / n, exact.variance) < tol, `${label}: Welford variance ${m.m2 / n} vs exact ${exact.variance}`);
    t.ok(relDiff(stddev(m), Math.sqrt(exact.variance)) < tol, `${label}: stddev`);
    t.ok(relDiff(m.sum, exact.sum) < 1e-12, `${label}: sum ${m.sum} vs exact ${exact.sum}`);
    t.equal(m.min, c.base + Math.min(...ks) / c.q, `${label}: min`);
    t.equal(m.max, c.base + Math.max(...ks) / c.q, `${label}: max`);

    // Merged partials (Chan) are as accurate as one pass.
    const rng = new Rng(c.seed * 7);
    const merged = foldLeft(rng.shuffle(partials(xs, ts, randomSplit(rng, n, 13))));
    t.equal(merged.count, n, `${label}: merged count`);
    t.ok(relDiff(merged.mean, exact.mean) < 1e-14, `${label}: merged mean`);
    t.ok(relDiff(merged.m2 / n, exact.variance) < tol, `${label}: merged variance ${merged.m2 / n} vs exact ${exact.variance}`);
  }
});

t.test('merging partials in any split and order equals the one-pass result', async (t) => {
  const { xs, ts } = generalData(21, 4000);
  const whole = onePass(xs, ts);
  const ref = twoPass(xs, ts);
  const rng = new Rng(22);
  const close = (a: Moments, b: Moments, label: string): void => {
    t.equal(a.count, b.count, `${label}: count`);
    t.equal(a.min, b.min, `${label}: min`);
    t.equal(a.max, b.max, `${label}: max`);
    t.equal(a.tsMin, b.tsMin, `${label}: tsMin`);
    t.equal(a.tsMax, b.tsMax, `${label}: tsMax`);
    const scale = Math.max(Math.abs(b.min), Math.abs(b.max));
    t.ok(Math.abs(a.mean - b.mean) <= 1e-9 * scale, `${label}: mean ${a.mean} vs ${b.mean}`);
    t.ok(relDiff(a.m2, b.m2) <= 1e-9, `${label}: m2 ${a.m2} vs ${b.m2}`);
    t.ok(relDiff(a.sum, b.sum) <= 1e-9 || Math.abs(a.sum - b.sum) <= 1e-9 * scale, `${label}: sum ${a.sum} vs ${b.sum}`);
  };
  for (const k of [2, 3, 7, 50, 400]) {
    const parts = partials(xs, ts, randomSplit(rng, xs.length, k));
    close(foldLeft(parts), whole, `${k} chunks, in order`);
    close(foldLeft(rng.shuffle(parts)), whole, `${k} chunks, shuffled`);
    close(foldLeft([...parts].reverse()), whole, `${k} chunks, reversed`);
    close(foldTree(rng.shuffle(parts)), whole, `${k} chunks, balanced tree`);
    checkAgainst(t, foldTree(parts), ref, { mean: 1e-12, variance: 1e-10, sum: 1e-15 }, `${k} chunks vs two-pass`);
  }

  // Associativity: (a+b)+c == a+(b+c); commutativity: a+b == b+a.
  const [a, b, c] = partials(xs, ts, randomSplit(rng, xs.length, 3)) as [Moments, Moments, Moments];
  const ab = clone(a);
  mergeMoments(ab, clone(b));
  const abC = clone(ab);
  mergeMoments(abC, clone(c));
  const bc = clone(b);
  mergeMoments(bc, clone(c));
  const aBc = clone(a);
  mergeMoments(aBc, bc);
  close(abC, aBc, '(a+b)+c vs a+(b+c)');
  const ba = clone(b);
  mergeMoments(ba, clone(a));
  close(ab, ba, 'a+b vs b+a');
  close(abC, whole, '(a+b)+c vs one pass');

  // Partials over interleaved (not contiguous) subsets: round-robin assignment to 5 partials.
  const rr = Array.from({ length: 5 }, () => emptyMoments());
  xs.forEach((x, i) => addSample(rr[i % 5]!, x, ts[i]!));
  close(foldTree(rr), whole, 'round-robin partials');

  // Single-sample partials merged one by one are the same as addSample.
  const singles = xs.slice(0, 300).map((x, i) => onePass([x], [ts[i]!]));
  close(foldLeft(rng.shuffle(singles)), onePass(xs.slice(0, 300), ts.slice(0, 300)), 'single-sample partials');
});

t.test('empty merges', async (t) => {
  const e = emptyMoments();
  mergeMoments(e, emptyMoments());
  t.equal(e.count, 0, 'empty+empty: count 0');
  t.equal(e.min, Infinity, 'empty+empty: min stays +Infinity');
  t.equal(e.max, -Infinity, 'empty+empty: max stays -Infinity');
  t.equal(e.sum, 0);
  t.equal(e.m2, 0);
  t.equal(stddev(e), 0, 'stddev of empty is 0, not NaN');

  const { xs, ts } = generalData(31, 50);
  const a = onePass(xs, ts);
  const before = clone(a);
  mergeMoments(a, emptyMoments());
  t.same(a, before, 'a + empty leaves a unchanged');

  const target = emptyMoments();
  mergeMoments(target, a);
  t.same(target, a, 'empty + a equals a');
  // The merge copies values: changing the target later must not change the source.
  addSample(target, 1e6, 0);
  t.same(a, before, 'merging into an empty target does not alias the source');
  t.equal(target.count, a.count + 1);
  t.equal(target.max, 1e6);
  t.equal(target.tsMin, 0);

  // Empty partials interleaved anywhere change nothing.
  const rng = new Rng(32);
  const parts = partials(xs, ts, randomSplit(rng, xs.length, 4));
  const withEmpties = rng.shuffle([...parts, emptyMoments(), emptyMoments(), emptyMoments()]);
  const m = foldLeft(withEmpties);
  t.equal(m.count, xs.length);
  t.ok(relDiff(m.m2, a.m2) < 1e-9, 'empties among partials do not change m2');
  t.ok(Math.abs(m.mean - a.mean) < 1e-9 * 1e6, 'empties among partials do not change the mean');
});
