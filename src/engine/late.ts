// The warning for a stream that is mostly late. Each late record is dead-lettered with its reason,
// but a replayed workload whose event times lie behind the watermark (the 2020 demo timeline loaded
// again, once the partition's watermark has followed the wall clock) turns into nothing but dead
// letters and no rows; the log must say so. One line per partition per interval, carrying what was
// held back since the last line, so a flood of late batches stays a few lines. Only records
// dead-lettered as late count: after a restart or rebalance, the replayed records of windows already
// emitted fall behind the restored watermark too, but they are skipped (counted as replayed), not
// late, and counting them warned falsely on every restart and took the interval's one line from a
// real late flood right after.
import type { Logger } from 'pino';
import type { LaneIdentity } from '../commit/types.js';
import type { DeadLetterEntry } from '../sinks/types.js';

export const LATE_WARNING_INTERVAL_MS = 60_000;

/** What one batch did in the window store. */
export interface LateSample {
  readonly partition: number;
  readonly identity: LaneIdentity | undefined;
  readonly accepted: number;
  /** Records dead-lettered as late (replayed ones, skipped, are not). */
  readonly late: number;
  /** The watermark the late records were measured against (ms; -Infinity = none yet). */
  readonly watermarkMs: number;
  /** Start of the oldest window a late record fell into (ms). */
  readonly oldestWindowMs: number;
}

interface Held {
  lastLineMs: number;
  batches: number;
  late: number;
  records: number;
}

/** Records of a batch's refused entries that were dead-lettered as late. */
export function lateLetters(entries: readonly Pick<DeadLetterEntry, 'reason'>[]): number {
  let n = 0;
  for (const e of entries) if (e.reason === 'late') n++;
  return n;
}

export class LateWarner {
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #held = new Map<number, Held>();

  constructor(logger: Logger, intervalMs = LATE_WARNING_INTERVAL_MS, now: () => number = Date.now) {
    this.#logger = logger;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** Drops a partition's held counts: partition ids are never reused, so a rebalance would otherwise grow the map. */
  forget(partition: number): void {
    this.#held.delete(partition);
  }

  /** Warns when more than half of the batch's records were late, at most once per interval per partition. */
  observe(s: LateSample): void {
    if (s.late === 0 || s.late * 2 <= s.late + s.accepted) return;
    const now = this.#now();
    let h = this.#held.get(s.partition);
    if (h === undefined) {
      h = { lastLineMs: -Infinity, batches: 0, late: 0, records: 0 };
      this.#held.set(s.partition, h);
    }
    if (now - h.lastLineMs < this.#intervalMs) {
      h.batches++;
      h.late += s.late;
      h.records += s.late + s.accepted;
      return;
    }
    const where = s.identity === undefined ? { partition: s.partition } : { partition: s.partition, topic: s.identity.topic, kafka_partition: s.identity.partition };
    this.#logger.warn(
      {
        ...where,
        late: s.late,
        records: s.late + s.accepted,
        watermark: Number.isFinite(s.watermarkMs) ? new Date(s.watermarkMs).toISOString() : 'none',
        oldestLateWindow: new Date(s.oldestWindowMs).toISOString(),
        // Mostly-late batches of this partition since the last line, not logged one by one.
        heldBack: { batches: h.batches, late: h.late, records: h.records },
      },
      'most records of a batch are late (event times behind the watermark): they are dead-lettered, not counted. A replay of old data? Its windows closed when the watermark passed them (ALLOWED_LATENESS_SECONDS; an idle partition follows the wall clock after IDLE_FLUSH_SECONDS)',
    );
    this.#held.set(s.partition, { lastLineMs: now, batches: 0, late: 0, records: 0 });
  }
}
