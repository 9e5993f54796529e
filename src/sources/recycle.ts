// Batch buffers given back by the engine (Batch.release) and handed out again by the source's
// BatchBuilder. A fresh SharedArrayBuffer is zero pages until written: copying a message into one
// costs a page fault per 4 KiB, about 0.35 us of system time per 400-byte message against under
// 0.01 us into a buffer already written once (measured by hand: docs/history/measurements-2026-11.md,
// "Seed 001 at 15 M"). Batches in flight are bounded (POOL_QUEUE and the engine's pending gate), so a few buffers
// go round and round.
import { sizeClass } from '../core/size-class.js';
import type { SourceBatch } from './types.js';

export { sizeClass };

export const RECYCLE_DEFAULTS = {
  /** Buffers kept for reuse at most; more given back are left to the garbage collector. */
  maxFree: 8,
} as const;

export class BufferRecycler {
  readonly #free: SharedArrayBuffer[] = [];
  /** Buffers of a batch not yet given back: a second release of the same batch must not count. */
  readonly #out = new WeakSet<SharedArrayBuffer>();
  reused = 0;
  allocated = 0;

  constructor(private readonly maxFree: number = RECYCLE_DEFAULTS.maxFree) {}

  /**
   * A shared buffer of at least `bytes`: the smallest free one that fits (not over twice the size),
   * else a new one of the size rounded up to a size class (sizeClass), so that the builder's
   * slowly creeping requests (the last batch's size plus an eighth) still fit the buffers given back.
   */
  readonly allocate = (bytes: number): Buffer => {
    const size = sizeClass(bytes);
    let best = -1;
    for (let i = 0; i < this.#free.length; i++) {
      const len = this.#free[i]!.byteLength;
      if (len >= bytes && len <= 2 * size && (best < 0 || len < this.#free[best]!.byteLength)) best = i;
    }
    let sab: SharedArrayBuffer;
    if (best >= 0) {
      sab = this.#free[best]!;
      this.#free[best] = this.#free[this.#free.length - 1]!;
      this.#free.pop();
      this.reused++;
    } else {
      sab = new SharedArrayBuffer(size);
      this.allocated++;
    }
    this.#out.add(sab);
    return Buffer.from(sab);
  };

  /** The batch with a release that gives its buffer back once. Batches not in a shared buffer of ours are returned as they are. */
  track<B extends Omit<SourceBatch, 'release'>>(batch: B): B & { release?: () => void } {
    return this.trackShared([batch])[0]!;
  }

  /**
   * Batches that are views of one buffer of ours (a Redis read's), each with a release of its own:
   * the buffer goes back once every one of them was released (a second release of a batch does not
   * count), and then onRelease is called, once. Batches not all in one shared buffer of ours are
   * returned as they are, or, given onRelease, with releases that only count towards it.
   */
  trackShared<B extends Omit<SourceBatch, 'release'>>(batches: readonly B[], onRelease?: () => void): Array<B & { release?: () => void }> {
    const sab = batches[0]?.data.buffer;
    const ours = sab instanceof SharedArrayBuffer && this.#out.has(sab) && batches.every((b) => b.data.buffer === sab);
    if (!ours && onRelease === undefined) return [...batches];
    let left = batches.length;
    return batches.map((b) => {
      let released = false;
      return {
        ...b,
        release: () => {
          if (released) return;
          released = true;
          if (--left > 0) return;
          if (ours && this.#out.delete(sab) && this.#free.length < this.maxFree) this.#free.push(sab);
          onRelease?.();
        },
      };
    });
  }

  get free(): number {
    return this.#free.length;
  }
}
