// The process's memory budget: what RSS stays under for a configuration, as the README states it.
// The main thread holds the estimated state (MAX_STATE_MB: open series, their percentile sketches),
// with as much again and a half for the collector, which lets garbage pile up before it runs; the
// workers' series dictionaries it keeps a copy of (each worker's current one, and two of replaced
// workers, each at most half the quarter of WORKER_MAX_MEMORY_MB a decoder keeps: src/core/decode.ts
// dictionaryBytesFor) and its own decoder's (dead letters; WORKER_THREADS=0 decodes there too). Each
// worker is its heap limit plus young generation, code and the batches it holds. The rest is the
// runtime, the batches in flight and the output buffers.

/** MiB of RSS the process stays under (README "Memory"). */
export function rssBudgetMb(c: { maxStateMb: number; workerThreads: number; workerMaxMemoryMb: number }): number {
  const dictionaries = ((c.workerThreads + 3) * c.workerMaxMemoryMb) / 8;
  return 256 + 3 * c.maxStateMb + dictionaries + c.workerThreads * (c.workerMaxMemoryMb + 128);
}
