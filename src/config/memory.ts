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
// binary and libraries, and the main thread's young generation: 8 MiB semi-spaces, set by the bin's
// relaunch, src/config/main-heap.ts; V8 grew them to 64 MiB), the batches in flight and the
// output buffers. Garbage is bounded by the heap growing factor the process sets for itself
// (boundHeapGrowth): without it V8 lets the main thread's old generation grow to four times what
// survived the last full collection, and a flood of new long keys (each one a string the main thread
// receives, keeps in a dictionary copy and drops) piled up garbage past every term here.

import { setFlagsFromString } from 'node:v8';
import { keyArenaBytes } from '../core/key-arena.js';
import { isRelaunchFlag } from './main-heap.js';

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

/**
 * How far (percent of what survived the last full collection) a heap may grow before the next one:
 * V8's --heap-growing-percent, which the engine sets for its own process (boundHeapGrowth). Left to
 * V8, a heap without a limit of its own (the main thread's: no launch flag sets one) may grow four
 * times (its largest factor for heaps limited at 2 GiB or more), so the main thread's garbage was
 * bounded by nothing in the budget: 1,000-character keys of new series, 2 workers of 128 MiB, took
 * its heap to 436-483 MiB and RSS to 981-1,044 MiB against 952; with 30 % its heap peaked at 257 MiB
 * and RSS at 766 MiB, at the same records per second. The workers' heaps, limited to
 * WORKER_MAX_MEMORY_MB, already grow by about this much (V8's factor for small heaps is 1.1-1.3).
 */
export const HEAP_GROWING_PERCENT = 30;

/**
 * Sets HEAP_GROWING_PERCENT for every heap of this process, from the next collection on: V8 reads the
 * flag each time it sets a heap's next limit, so the process can set it for itself once started (no
 * re-exec, no launch flag that a plain `node dist/src/cli.js` or `npx streamstats` would miss). It is
 * V8's own flag: a NODE_OPTIONS=--heap-growing-percent given at launch is left as it is.
 */
export function boundHeapGrowth(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): boolean {
  const given = /--heap[-_]growing[-_]percent\b/;
  if (execArgv.some((a) => given.test(a)) || given.test(nodeOptions)) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}

/**
 * MiB of old generation a worker's heap starts with as its first collection limit (V8's
 * --initial-old-space-size), at most half of WORKER_MAX_MEMORY_MB. A worker's heap holds little that
 * lives (10-15 MiB: its series dictionary, a lane's windows), and V8 starts marking a heap whose room
 * below its limit is less than its young generation: with the 30 % growth above and a 48 MiB young
 * generation, a decode worker ran a full collection every 200-400 ms however little it kept (12-26 in
 * 5 s of Kafka -> file), and V8's helper threads spent on them a third of what the two workers
 * computed. From 64 MiB a worker that keeps less runs none; one that keeps more (a lane owner's
 * windows) grows past it and is collected as before. Within the budget: a worker is counted at its
 * limit (rssBudgetMb).
 */
export const WORKER_INITIAL_OLD_SPACE_MB = 64;

/** The initial old space for workers limited to `workerMaxMemoryMb` (WORKER_INITIAL_OLD_SPACE_MB, at most half the limit). */
export function workerInitialOldSpaceMb(workerMaxMemoryMb: number): number {
  return Math.min(WORKER_INITIAL_OLD_SPACE_MB, Math.floor(workerMaxMemoryMb / 2));
}

/**
 * Sets the initial old space of every heap made from now on: the workers', which start after this;
 * the main thread's heap was made at launch and keeps its own (the bin's relaunch gives it one:
 * src/config/main-heap.ts). A flag the user gave at launch (`node --initial-old-space-size=N`, which
 * NODE_OPTIONS refuses) is left as it is.
 */
export function deferWorkerCollections(workerMaxMemoryMb: number, execArgv: readonly string[] = process.execArgv): boolean {
  // The bin's own relaunch flag sized the main heap only; the workers get theirs here.
  if (execArgv.some((a) => /--initial[-_]old[-_]space[-_]size\b/.test(a) && !isRelaunchFlag(a))) return false;
  setFlagsFromString(`--initial-old-space-size=${workerInitialOldSpaceMb(workerMaxMemoryMb)}`);
  return true;
}
