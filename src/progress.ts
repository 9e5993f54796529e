// What an operator watching a terminal sees of an endless source (Kafka, Redis): how long the
// engine was busy, and a progress line with the rate, the lag and the lanes held. An endless source
// idles between loads: records over the whole run (690,000 in 8 s of work reported as 7,852
// records/s after 88 s) tell nothing of its speed, so the summary divides by the busy time.

/** Wall time in which the engine had work: records applied, or batches in the pool, since the last sample. */
export class BusyClock {
  #busyMs = 0;
  #lastMs: number;
  #lastRecords = 0;

  constructor(nowMs: number) {
    this.#lastMs = nowMs;
  }

  /** Counts the time since the last sample as busy when records moved on or work was in flight. */
  sample(nowMs: number, records: number, inFlight: number): void {
    if (records !== this.#lastRecords || inFlight > 0) this.#busyMs += nowMs - this.#lastMs;
    this.#lastMs = nowMs;
    this.#lastRecords = records;
  }

  get busySeconds(): number {
    return this.#busyMs / 1000;
  }
}

/** How often the busy clock samples: its error is at most this much per stretch of work. */
export const BUSY_SAMPLE_MS = 100;

export interface EndlessProgress {
  readonly records: number;
  /** Records per second over the last interval. */
  readonly rate: number;
  /** Messages (entries) behind, summed over the lanes; null while unknown. */
  readonly lag: number | null;
  readonly lanes: number;
}

const n = (x: number): string => Math.round(x).toLocaleString('en-US');

export function endlessProgressLine(p: EndlessProgress): string {
  return `records ${n(p.records)} | ${n(p.rate)} records/s | lag ${p.lag === null ? '?' : n(p.lag)} | lanes ${n(p.lanes)}`;
}
