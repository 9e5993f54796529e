// Kafka responses read into shared memory, so that the Kafka source's pool batches can be views of a
// fetch response instead of copies of its values (the copies were the main thread's largest single
// cost after the socket with rows to a file: 0.17 s of 1.6 s per million records). A worker reads a
// view in place; the response goes back to this pool, to be read into again, once nothing reads it:
// every record run decoded from it cut into batches, and every such batch released by the engine.
//
// Why not let the garbage collector free them: shared memory that a worker was handed is freed only
// once that worker's isolate collected its handle too, and the workers hardly allocate; with views and
// no reuse, Kafka -> file's peak RSS rose from 425-449 to 729-757 MiB. Given back deterministically,
// the same few buffers go round, their pages already written once (a fresh buffer's first write of
// each 4 KiB page faults).
//
// What holds a response: each record run decoded from it (./records.ts decodeRun takes the hold, the
// cut into batches drops it) and each batch cut from it. All runs of a response are decoded before
// kafkajs hands any of them to the consumer (the fetch response is decoded whole), so its count can
// reach 0 only once every run was cut and every batch released. A response nothing ever holds (not a
// fetch, a compressed record set decoded elsewhere), or one whose runs are never cut (a partition
// revoked or paused with data fetched), is left to the collector, as every response was before.
import { SharedFreeList } from '../core/shared-free-list.js';

export const FRAME_POOL_DEFAULTS = {
  /** Responses kept for reuse at most; more given back are left to the garbage collector. */
  maxFree: 8,
} as const;

interface Hold {
  n: number;
}

const free = new SharedFreeList(FRAME_POOL_DEFAULTS.maxFree);
/** The pool's buffers handed out and not given back, with what holds each. */
const holds = new WeakMap<SharedArrayBuffer, Hold>();

/** For the tests and the bench: buffers made, reused, and given back. */
export const framePoolCounts = {
  get allocated(): number {
    return free.allocated;
  },
  get reused(): number {
    return free.reused;
  },
  returned: 0,
};

/** A buffer of `bytes` in shared memory for a response (SharedFreeList.take). */
export function sharedFrame(bytes: number): Buffer {
  const sab = free.take(bytes);
  holds.set(sab, { n: 0 });
  return Buffer.from(sab, 0, bytes);
}

/**
 * Holds the response that `view` lies in until the returned release is called (once; a second call
 * does nothing). Null when the view is not in a response of the pool: the caller copies what it keeps.
 */
export function holdFrame(view: Uint8Array): (() => void) | null {
  const sab = view.buffer;
  if (!(sab instanceof SharedArrayBuffer)) return null;
  const h = holds.get(sab);
  if (h === undefined) return null;
  h.n++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--h.n > 0) return;
    holds.delete(sab);
    framePoolCounts.returned++;
    free.give(sab);
  };
}

/**
 * The response of the pool that `view` lies in, while it is handed out; else null. What holds a
 * response holds all of it: a queue bounded by bytes counts the response once, not the view.
 */
export function frameOf(view: Uint8Array): SharedArrayBuffer | null {
  const sab = view.buffer;
  return sab instanceof SharedArrayBuffer && holds.has(sab) ? sab : null;
}

/** Free buffers of the pool now (for the tests). */
export function freeFrames(): number {
  return free.size;
}
