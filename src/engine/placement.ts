// Where a chunk's rows are formatted. In a worker the main thread saves their per-row cost, but the
// series keys must be copied there, so the whole process spends more: worth it only while the main
// thread is the busier side. A job whose workers wait for the main thread (rows to Kafka) formats its
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

export const PLACEMENT_DEFAULTS = { mode: 'auto', periodMs: 250 } as const;

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
      this.#inWorker = main > workers;
    }
    return this.#inWorker;
  }
}
