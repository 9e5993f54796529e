// Pacing of a lane that keeps up with its producers. Once a read comes back short (caught up), the
// next one waits for the lane's batch in the pool: what arrives meanwhile is then one read and one
// batch, not a read, a pool task and a reply for every few entries (their fixed costs, on both
// threads, were most of the CPU per entry of a consumer keeping pace with its producer). A backlog is
// read ahead as before. One per lane's read loop, which calls read() after each read, awaits wait()
// before the next, and has the lane's batches call applied once they are released.
import type { LaneHost } from '../types.js';

/** How long a caught-up lane waits at most for its batch in the pool before it reads again. */
export const PACE_MAX_WAIT_MS = 200;

export interface LaneRead {
  /** Entries (or records) the read asked for, and those it got. */
  readonly asked: number;
  readonly got: number;
  /** It left entries behind (a byte bound cut it): there is more to read now. */
  readonly more: boolean;
  /** It read entries known to lie behind the producers (a Redis PEL): never caught up. */
  readonly behind?: boolean;
}

export class LanePace {
  readonly #lanes: Pick<LaneHost, 'status'>;
  readonly #lane: number;
  readonly #maxWaitMs: number;
  #caughtUp = false;
  #wake: (() => void) | null = null;

  constructor(lanes: Pick<LaneHost, 'status'>, lane: number, maxWaitMs = PACE_MAX_WAIT_MS) {
    this.#lanes = lanes;
    this.#lane = lane;
    this.#maxWaitMs = maxWaitMs;
  }

  /** After each read: caught up when it got fewer than it asked for and left nothing behind. */
  read(r: LaneRead): void {
    this.#caughtUp = r.behind !== true && !r.more && r.got < r.asked;
  }

  /**
   * Before the next read: null to read at once, else a wait that ends when a batch of the lane was
   * applied, or after maxWaitMs, since a batch that never comes back (its lane revoked, its owner
   * lost) must not hold the reads.
   */
  wait(): Promise<void> | null {
    if (!this.#caughtUp || (this.#lanes.status(this.#lane)?.oldestPendingMs ?? null) === null) return null;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#maxWaitMs);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      this.#wake = null;
    });
  }

  /** A batch of the lane was applied: a waiting read goes on. */
  readonly applied = (): void => {
    const w = this.#wake;
    this.#wake = null;
    w?.();
  };
}
