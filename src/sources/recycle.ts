// Batch buffers given back by the engine (Batch.release) and handed out again by the source's
// BatchBuilder. A fresh SharedArrayBuffer is zero pages until written: copying a message into one
// costs a page fault per 4 KiB, about 0.35 us of system time per 400-byte message against under
// 0.01 us into a buffer already written once (measured by hand: docs/history/measurements-2026-11.md,
// "Seed 001 at 15 M"). Batches in flight are bounded (POOL_QUEUE and the engine's pending gate), so a few buffers
// go round and round.
import { SharedFreeList } from '../core/shared-free-list.js';
import type { SourceBatch } from './types.js';

export const RECYCLE_DEFAULTS = {
  /** Buffers kept for reuse at most; more given back are left to the garbage collector. */
  maxFree: 8,
} as const;

export class BufferRecycler {
  readonly #free: SharedFreeList;
  /** Buffers of a batch not yet given back: a second release of the same batch must not count. */
  readonly #out = new WeakSet<SharedArrayBuffer>();

  constructor(maxFree: number = RECYCLE_DEFAULTS.maxFree) {
    this.#free = new SharedFreeList(maxFree);
  }

  get reused(): number {
    return this.#free.reused;
  }

  get allocated(): number {
    return this.#free.allocated;
  }

  /** A shared buffer of at least `bytes` (SharedFreeList.take), whole. */
  readonly allocate = (bytes: number): Buffer => {
    const sab = this.#free.take(bytes);
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
          if (ours && this.#out.delete(sab)) this.#free.give(sab);
          onRelease?.();
        },
      };
    });
  }

  get free(): number {
    return this.#free.size;
  }
}
