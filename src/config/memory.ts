// The process's memory budget: what RSS stays under for a configuration, as the README states it.
// The main thread holds the estimated state (MAX_STATE_MB: open series, their percentile sketches),
// with as much again and a half for the collector, which lets garbage pile up before it runs; the
// workers' series dictionaries it keeps a copy of (each worker's current one, and two of replaced
// workers, each at most half the quarter of WORKER_MAX_MEMORY_MB a decoder keeps: src/core/decode.ts
// dictionaryBytesFor) and its own decoder's (dead letters; WORKER_THREADS=0 decodes there too), and
// the key arena the workers that format rows read series keys from (shared memory, a sixteenth of
// WORKER_MAX_MEMORY_MB at most, 32 MiB; the keys a worker keeps from it are in its heap). Each
// worker is its heap limit plus its young generation (WORKER_YOUNG_GENERATION_MB: bounded, as V8's own
// bound is 192 MiB), code and the batches it holds. The rest is the runtime (about 55 MiB of the node
// binary and libraries, and the main thread's young generation, which V8 grows to two 64 MiB
// semi-spaces under a steady load and no setting here can bound), the batches in flight and the
// output buffers.

import { keyArenaBytes } from '../core/key-arena.js';

/** MiB of RSS the process stays under (README "Memory"). */
export function rssBudgetMb(c: { maxStateMb: number; workerThreads: number; workerMaxMemoryMb: number }): number {
  const dictionaries = ((c.workerThreads + 3) * c.workerMaxMemoryMb) / 8;
  // The shared key arena (src/core/key-arena.ts): outside every heap, once.
  const keyArena = c.workerThreads > 0 ? keyArenaBytes(c.workerMaxMemoryMb) / (1024 * 1024) : 0;
  return 256 + 3 * c.maxStateMb + dictionaries + keyArena + c.workerThreads * (c.workerMaxMemoryMb + 128);
}

/**
 * MiB of young generation each decode worker gets (resourceLimits.maxYoungGenerationSizeMb: two
 * semi-spaces of 16 MiB and as much for new large objects). Left to V8, a worker's young generation
 * may grow to 192 MiB (semi-spaces of 64 MiB: a 64-bit build without pointer compression), whatever
 * WORKER_MAX_MEMORY_MB says: it doubles its semi-spaces step by step under a steady load, so a
 * worker's RSS grew for minutes (27 to 74 MiB of heap in the first minute of a sketch flood) past
 * the budget's share. A batch's garbage is short-lived, so the smaller young generation costs little.
 */
export const WORKER_YOUNG_GENERATION_MB = 48;
