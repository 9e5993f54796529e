// Group-membership supervision: runs one consumer-group session after another until stopped. A
// session that fails (brokers unreachable, consumer crashed for good) is followed by a jittered,
// capped exponential back-off, so a dead broker never causes a tight reconnect loop; a successful
// join resets the back-off, so a failure long after a healthy join retries quickly again. While it
// backs off, the brokers are probed on a short interval: a broker that did not answer and then does
// cuts the back-off short, so the engine is back within a probe interval of the broker, not up to a
// whole KAFKA_RETRY_MAX_SECONDS later (34 s after a 3-minute outage).
import { backoffMs, sleep, type Signal } from '../../async/index.js';

export interface SupervisorOptions {
  /** One session: resolves once stopped, rejects when it failed. */
  readonly session: () => Promise<void>;
  /** Raised by stop(): the back-off is cut short and no new session starts. */
  readonly stop: Signal;
  /** Back-off before reconnect n: min(maxDelayMs, baseDelayMs * 2^(n-1)), jittered by 0.5..1. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly onFailure: (err: unknown, attempt: number) => void;
  /** Called before each back-off (a reconnect attempt follows it). */
  readonly onBackoff: (attempt: number, delayMs: number) => void;
  /** Whether a broker answers now (a TCP connect); with it, the back-off ends once one answers after none did. */
  readonly probe?: () => Promise<boolean>;
  /** How often `probe` runs during a back-off (default 1000 ms). */
  readonly probeIntervalMs?: number;
  readonly random?: () => number;
}

export class Supervisor {
  readonly #o: SupervisorOptions;
  /** Reconnect attempts since the last successful join. */
  #attempt = 0;

  constructor(o: SupervisorOptions) {
    if (!(o.baseDelayMs > 0) || !(o.maxDelayMs >= o.baseDelayMs)) {
      throw new RangeError(`Supervisor: need 0 < baseDelayMs (${o.baseDelayMs}) <= maxDelayMs (${o.maxDelayMs})`);
    }
    this.#o = o;
  }

  get attempt(): number {
    return this.#attempt;
  }

  /** The session joined its group: the next failure backs off from the first step again. */
  joined(): void {
    this.#attempt = 0;
  }

  /** Runs sessions until stop; never rejects (a failure is reported and followed by a reconnect). */
  async run(): Promise<void> {
    const { stop } = this.#o;
    while (!stop.raised) {
      try {
        await this.#o.session();
      } catch (err) {
        if (!stop.raised) this.#o.onFailure(err, this.#attempt);
      }
      if (stop.raised) break;
      this.#attempt++;
      const delay = backoffMs(this.#attempt, this.#o);
      this.#o.onBackoff(this.#attempt, delay);
      await this.#backoff(delay);
    }
  }

  /**
   * Sleeps `delayMs`, or until the probe answers after having failed. A broker that answers from the
   * start (the session failed for another reason) does not cut it short: no tight loop.
   */
  async #backoff(delayMs: number): Promise<void> {
    const { stop, probe } = this.#o;
    if (probe === undefined) return sleep(delayMs, stop);
    const step = this.#o.probeIntervalMs ?? 1000;
    const end = performance.now() + delayMs;
    let unreachable = !(await probe().catch(() => false));
    for (;;) {
      const left = end - performance.now();
      if (left <= 0 || stop.raised) return;
      await sleep(Math.min(step, left), stop);
      if (stop.raised || performance.now() >= end) return;
      const answers = await probe().catch(() => false);
      if (answers && unreachable) return;
      if (!answers) unreachable = true;
    }
  }
}
