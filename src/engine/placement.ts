// Where a chunk's rows are formatted. In a worker the main thread saves their per-row cost, but the
// whole process spends more (the rows' bytes cross back, the worker's collector runs more): worth it
// only while the main thread is busy and the workers have room. A job whose workers wait for the main thread (rows to Kafka) formats its
// rows there; one whose workers are saturated (the generator's default job) keeps them on the main
// thread. Measured over short spans, so the choice follows the load as it moves.
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

export interface PlacementPool {
  /** Seconds the workers ran tasks, since the pool started. */
  readonly workerBusySeconds: number;
  readonly threads: number;
  /** False in-thread or once closed: nowhere else to format. */
  readonly formatsRows: boolean;
}

export type RowPlacementMode = 'auto' | 'worker' | 'main';

/**
 * Rows move to a worker when the main thread's event loop is busier than moveMain and the workers'
 * busy share is below moveWorkers; they stay there while above stayMain and below stayWorkers.
 */
export const PLACEMENT_DEFAULTS = { mode: 'auto', periodMs: 250, moveMain: 0.75, moveWorkers: 0.5, stayMain: 0.5, stayWorkers: 0.7 } as const;

export class RowPlacement {
  readonly #pool: PlacementPool;
  readonly #periodMs: number;
  readonly #mode: RowPlacementMode;
  #elu: EventLoopUtilization = performance.eventLoopUtilization();
  #busy = 0;
  #at = performance.now();
  #inWorker = false;

  constructor(pool: PlacementPool, mode: RowPlacementMode = PLACEMENT_DEFAULTS.mode, periodMs: number = PLACEMENT_DEFAULTS.periodMs) {
    this.#pool = pool;
    this.#mode = mode;
    this.#periodMs = periodMs;
  }

  /** True when the next chunk's rows should be formatted in a worker. */
  inWorker(): boolean {
    const pool = this.#pool;
    if (!pool.formatsRows || pool.threads === 0 || this.#mode === 'main') return false;
    if (this.#mode === 'worker') return true;
    const now = performance.now();
    const span = now - this.#at;
    if (span >= this.#periodMs) {
      const main = performance.eventLoopUtilization(this.#elu).utilization;
      const busy = pool.workerBusySeconds;
      const workers = (busy - this.#busy) / ((span / 1000) * pool.threads);
      this.#elu = performance.eventLoopUtilization();
      this.#busy = busy;
      this.#at = now;
      // Only a pool with room to spare gains: moving rows onto workers that are half busy or more made
      // the generator's default job slower (the worker became the bottleneck, and its collector ran
      // more), while a job whose workers wait for the main thread (Kafka in and out) gains. Once moved,
      // rows stay while the workers keep some room, so the choice does not flip on every span.
      this.#inWorker = this.#inWorker ? main > PLACEMENT_DEFAULTS.stayMain && workers < PLACEMENT_DEFAULTS.stayWorkers : main > PLACEMENT_DEFAULTS.moveMain && workers < PLACEMENT_DEFAULTS.moveWorkers;
    }
    return this.#inWorker;
  }
}
