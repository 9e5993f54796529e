// A mergeable quantile sketch with a stated relative accuracy (DDSketch, Masson et al., VLDB 2019):
// values fall into logarithmic buckets of ratio gamma = (1 + a) / (1 - a); any quantile read back is
// within a relative error a of the true value of that rank. Merging is adding bucket counts, so
// partials from workers, partitions and periods combine exactly. Pure: runs in workers too.

export const DEFAULT_RELATIVE_ACCURACY = 0.01;
/** Buckets kept per sign before the lowest ones are collapsed (bounds memory per window). */
export const MAX_BUCKETS = 2048;

export interface SketchData {
  /** relative accuracy */
  a: number;
  /** bucket index -> count, for positive and negative values */
  pos: Record<string, number>;
  neg: Record<string, number>;
  zero: number;
  count: number;
}

/**
 * Estimated heap bytes of a sketch with no bucket (the object, its two Maps), and of each bucket: a
 * Map entry of two small numbers measured at 28-40 bytes (300 sketches of 10 to 4,096 buckets, heap
 * after a full collection), doubled for a Map's table grown to twice its entries. What a sketch
 * charges against MAX_STATE_MB.
 */
export const SKETCH_BASE_BYTES = 520;
export const SKETCH_BUCKET_BYTES = 56;

/** Bucket codes let workers ship sketches as numbers: 2k = positive bucket k, 2k+1 = negative bucket k. */
export const ZERO_CODE = 2 ** 52;

export function logGammaOf(alpha: number): number {
  return Math.log((1 + alpha) / (1 - alpha));
}

export function bucketCode(v: number, logGamma: number): number {
  if (v > Sketch.MIN_INDEXABLE) return 2 * Math.ceil(Math.log(v) / logGamma);
  if (v < -Sketch.MIN_INDEXABLE) return 2 * Math.ceil(Math.log(-v) / logGamma) + 1;
  return ZERO_CODE;
}

export class Sketch {
  readonly alpha: number;
  readonly #gamma: number;
  readonly #logGamma: number;
  readonly pos = new Map<number, number>();
  readonly neg = new Map<number, number>();
  zero = 0;
  count = 0;

  constructor(alpha = DEFAULT_RELATIVE_ACCURACY) {
    if (!(alpha > 0 && alpha < 1)) throw new RangeError(`relative accuracy (${alpha}) must be between 0 and 1`);
    this.alpha = alpha;
    this.#gamma = (1 + alpha) / (1 - alpha);
    this.#logGamma = Math.log(this.#gamma);
  }

  /** Values this close to 0 count as 0 (the log of a subnormal is not worth a bucket). */
  static readonly MIN_INDEXABLE = 1e-300;

  /** Adds n values of the bucket a worker encoded with bucketCode(). */
  addCode(code: number, n: number): void {
    this.count += n;
    if (code === ZERO_CODE) this.zero += n;
    else if (code % 2 === 0) bump(this.pos, code / 2, n);
    else bump(this.neg, (code - 1) / 2, n);
  }

  /** Buckets held (both signs; the zero count is a field, not a bucket). */
  get buckets(): number {
    return this.pos.size + this.neg.size;
  }

  /** Whether the bucket of a bucketCode() is held already (zero always is). */
  hasCode(code: number): boolean {
    if (code === ZERO_CODE) return true;
    return code % 2 === 0 ? this.pos.has(code / 2) : this.neg.has((code - 1) / 2);
  }

  /** Estimated heap bytes (SKETCH_BASE_BYTES + SKETCH_BUCKET_BYTES a bucket). */
  get bytes(): number {
    return SKETCH_BASE_BYTES + SKETCH_BUCKET_BYTES * this.buckets;
  }

  /** Collapses the lowest buckets of each sign beyond MAX_BUCKETS (after addCode()s; merge() does it itself). */
  bound(): void {
    this.#collapse(this.pos);
    this.#collapse(this.neg);
  }

  add(v: number, n = 1): void {
    this.count += n;
    if (v > Sketch.MIN_INDEXABLE) bump(this.pos, this.#index(v), n);
    else if (v < -Sketch.MIN_INDEXABLE) bump(this.neg, this.#index(-v), n);
    else this.zero += n;
  }

  #index(v: number): number {
    return Math.ceil(Math.log(v) / this.#logGamma);
  }

  #value(i: number): number {
    // The bucket's representative value: within alpha of everything in (gamma^(i-1), gamma^i].
    return (2 * this.#gamma ** i) / (this.#gamma + 1);
  }

  merge(o: Sketch | SketchData): void {
    if (Math.abs(('alpha' in o ? o.alpha : o.a) - this.alpha) > 1e-12) {
      throw new RangeError('cannot merge sketches of different relative accuracy');
    }
    const pos = o instanceof Sketch ? o.pos : new Map(Object.entries(o.pos).map(([k, v]) => [Number(k), v]));
    const neg = o instanceof Sketch ? o.neg : new Map(Object.entries(o.neg).map(([k, v]) => [Number(k), v]));
    for (const [k, v] of pos) bump(this.pos, k, v);
    for (const [k, v] of neg) bump(this.neg, k, v);
    this.zero += o.zero;
    this.count += o.count;
    this.#collapse(this.pos);
    this.#collapse(this.neg);
  }

  /** q in [0, 1]; NaN for an empty sketch. */
  quantile(q: number): number {
    if (this.count === 0) return NaN;
    const rank = q * (this.count - 1);
    let seen = 0;
    const negKeys = [...this.neg.keys()].sort((a, b) => b - a);
    for (const k of negKeys) {
      seen += this.neg.get(k)!;
      if (seen > rank) return -this.#value(k);
    }
    seen += this.zero;
    if (seen > rank) return 0;
    const posKeys = [...this.pos.keys()].sort((a, b) => a - b);
    for (const k of posKeys) {
      seen += this.pos.get(k)!;
      if (seen > rank) return this.#value(k);
    }
    return this.#value(posKeys[posKeys.length - 1] ?? 0);
  }

  toJSON(): SketchData {
    return { a: this.alpha, pos: Object.fromEntries(this.pos), neg: Object.fromEntries(this.neg), zero: this.zero, count: this.count };
  }

  static from(d: SketchData): Sketch {
    const s = new Sketch(d.a);
    s.merge(d);
    return s;
  }

  /** Keeps memory bounded: the lowest buckets are folded into one (only low quantiles lose accuracy). */
  #collapse(m: Map<number, number>): void {
    if (m.size <= MAX_BUCKETS) return;
    const keys = [...m.keys()].sort((a, b) => a - b);
    const cut = keys.length - MAX_BUCKETS;
    let folded = 0;
    for (let i = 0; i <= cut; i++) {
      folded += m.get(keys[i]!)!;
      m.delete(keys[i]!);
    }
    bump(m, keys[cut]!, folded);
  }
}

function bump(m: Map<number, number>, k: number, n: number): void {
  m.set(k, (m.get(k) ?? 0) + n);
}
