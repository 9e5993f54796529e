// Shared buffers kept for reuse, by size: the batch recycler (src/sources/recycle.ts) and the Kafka
// response pool (src/kafka/frame-pool.ts) both hand out shared memory whose pages were written once
// already (a fresh buffer's first write of each 4 KiB page faults), and take it back when nothing
// reads it. Pure: no I/O.

/** bytes rounded up to a multiple of an eighth of the power of two at or below it (at most 1/8 more, from 4 KiB). */
export function sizeClass(bytes: number): number {
  if (bytes <= 4096) return 4096;
  const step = 2 ** Math.floor(Math.log2(bytes)) / 8;
  return Math.ceil(bytes / step) * step;
}

/** At most maxFree buffers; more given back are left to the garbage collector. */
export class SharedFreeList {
  readonly #free: SharedArrayBuffer[] = [];
  reused = 0;
  allocated = 0;

  constructor(private readonly maxFree: number) {}

  /**
   * A shared buffer of at least `bytes`: the smallest free one that fits (not over twice the size),
   * else a new one of the size rounded up to a size class (sizeClass), so that slowly creeping
   * requests (a batch's size plus an eighth, a response a little longer than the last) still fit the
   * buffers given back.
   */
  take(bytes: number): SharedArrayBuffer {
    const size = sizeClass(bytes);
    const free = this.#free;
    let best = -1;
    for (let i = 0; i < free.length; i++) {
      const len = free[i]!.byteLength;
      if (len >= bytes && len <= 2 * size && (best < 0 || len < free[best]!.byteLength)) best = i;
    }
    if (best < 0) {
      this.allocated++;
      return new SharedArrayBuffer(size);
    }
    const sab = free[best]!;
    free[best] = free[free.length - 1]!;
    free.pop();
    this.reused++;
    return sab;
  }

  /** Takes `sab` back for reuse, unless maxFree are free already. */
  give(sab: SharedArrayBuffer): void {
    if (this.#free.length < this.maxFree) this.#free.push(sab);
  }

  get size(): number {
    return this.#free.length;
  }
}
