// Consumer lag per held partition: messages (high watermark minus the next position to process) and
// seconds (age of the oldest record not yet applied). High watermarks come with every fetch; for
// partitions that fetch nothing (idle, paused) they are polled, so the lag stays fresh. A high
// watermark only ever moves forward here (a poll answered late must not undo a newer fetch's). The
// gauges a scrape reads are set by refresh(), right after a poll: set by the once-a-second tick
// from the fetches' high watermarks instead, a caught-up consumer of a steady producer read 0 while
// the log end ran up to a second of production ahead (19 of 45 samples below the broker's own
// log-end offsets under a 20,000/s producer). While the
// group is away (broker unreachable, consumer crashed) the last figures stay and lag in seconds keeps
// growing with the clock: an outage must show as growing lag, not as a frozen 0 or a missing series.
import type { Admin } from 'kafkajs';
import type { Logger } from 'pino';
import type { Metrics } from '../../metrics/index.js';
import { pendingAgeSeconds, type LaneHost } from '../types.js';
import { CatchUp } from '../catch-up.js';
import { tpKey, type Held, type TopicPartition } from './assignment.js';

export interface LagOptions {
  readonly lanes: Pick<LaneHost, 'status'>;
  readonly metrics: Pick<Metrics, 'lagMessages' | 'lagSeconds' | 'catchUpSeconds' | 'lagState'>;
  readonly logger: Logger;
}

interface Tracked {
  readonly held: Held;
  /** High watermark last seen (fetch or poll). */
  hw: number | null;
  /** Where consumption of this assignment started: the next position until a batch is applied. */
  readonly start: number | null;
  /** Set while the group is away: the next position then, and the oldest the next record can be from. */
  away: { readonly next: number | null; readonly sinceMs: number } | null;
}

export class Lag {
  readonly #o: LagOptions;
  readonly #parts = new Map<string, Tracked>();
  readonly #catchUp: CatchUp;

  constructor(o: LagOptions) {
    this.#o = o;
    this.#catchUp = new CatchUp(o.metrics);
  }

  /** Starts tracking a restored partition from where it starts and the high watermark read then. */
  track(held: Held, start: number | null, hw: number | null): void {
    this.#parts.set(tpKey(held.tp), { held, hw, start, away: null });
  }

  /** The partition's lane was replaced (rebuilt from `start`): its high watermark stays known. */
  retrack(held: Held, start: number): void {
    const t = this.#parts.get(tpKey(held.tp));
    this.#parts.set(tpKey(held.tp), { held, hw: t?.hw ?? null, start, away: null });
  }

  /** A high watermark seen for a tracked partition (fetch or poll); others, and older ones, are ignored. */
  sawHighWatermark(tp: TopicPartition, hw: number): void {
    const t = this.#parts.get(tpKey(tp));
    if (t !== undefined && Number.isFinite(hw) && (t.hw === null || hw > t.hw)) t.hw = hw;
  }

  /** Messages behind, summed over the tracked partitions whose high watermark is known (0 with none). */
  totalMessages(): number {
    const { lanes } = this.#o;
    let sum = 0;
    for (const { held, hw, start, away } of this.#parts.values()) {
      const next = away !== null ? away.next : (lanes.status(held.id)?.appliedEnd ?? start);
      if (hw !== null && next !== null) sum += Math.max(0, hw - next);
    }
    return sum;
  }

  /** How many partitions are tracked (held, restored). */
  get size(): number {
    return this.#parts.size;
  }

  /**
   * The group is away (the session failed or the consumer crashed): the partitions' lanes are
   * closed or stalled, so what the lag needs of them is kept now. Until the next join (clear()), lag
   * in messages stays at its last value and lag in seconds grows from the oldest moment the next
   * unprocessed record can be from: the last applied record when behind, else the moment we left.
   */
  detach(nowMs: number): void {
    const { lanes } = this.#o;
    for (const t of this.#parts.values()) {
      if (t.away !== null) continue;
      const s = lanes.status(t.held.id);
      const next = s?.appliedEnd ?? t.start;
      const pendingAge = pendingAgeSeconds(s, nowMs);
      const lastTs = s?.lastAppliedTimestampMs ?? null;
      const behind = t.hw !== null && next !== null && t.hw > next;
      const sinceMs = pendingAge !== null ? nowMs - pendingAge * 1000 : behind && lastTs !== null ? Math.min(lastTs, nowMs) : nowMs;
      t.away = { next, sinceMs };
    }
  }

  /** Stops tracking every partition and removes their gauges (the assignment is gone). */
  clear(): void {
    for (const { held } of this.#parts.values()) {
      const labels = { topic: held.tp.topic, partition: String(held.tp.partition) };
      this.#o.metrics.lagMessages.remove(labels);
      this.#o.metrics.lagSeconds.remove(labels);
      this.#catchUp.remove(labels);
    }
    this.#parts.clear();
  }

  /**
   * Sets the gauges for `now`; returns the partitions caught up with nothing in hand (no lag, nothing
   * queued per `inHand`, nothing submitted and unapplied): the candidates for an idle flush.
   */
  update(nowMs: number, inHand: (h: Held) => boolean): Held[] {
    const { lanes, metrics } = this.#o;
    const caughtUp: Held[] = [];
    for (const { held, hw, start, away } of this.#parts.values()) {
      const labels = { topic: held.tp.topic, partition: String(held.tp.partition) };
      if (away !== null) {
        // Never a candidate for an idle flush: closing windows by the wall clock while the broker is
        // away would emit windows whose records are still to come.
        const ageS = Math.max(0, (nowMs - away.sinceMs) / 1000);
        if (hw !== null && away.next !== null) {
          const lag = Math.max(0, hw - away.next);
          metrics.lagMessages.set(labels, lag);
          this.#catchUp.observe(labels, nowMs, lag, ageS);
        }
        metrics.lagSeconds.set(labels, ageS);
        continue;
      }
      const s = lanes.status(held.id);
      const next = s?.appliedEnd ?? start;
      if (hw === null || next === null) continue;
      const lag = Math.max(0, hw - next);
      metrics.lagMessages.set(labels, lag);
      const pendingAge = pendingAgeSeconds(s, nowMs);
      if (lag === 0 && pendingAge === null && !inHand(held)) {
        metrics.lagSeconds.set(labels, 0);
        this.#catchUp.observe(labels, nowMs, 0, 0);
        caughtUp.push(held);
        continue;
      }
      // Nothing of it submitted (paused, or not yet fetched): the next record to process is at least
      // as old as the last one applied, so that age is a lower bound of the lag.
      const lastTs = s?.lastAppliedTimestampMs ?? null;
      const age = pendingAge ?? (lastTs === null ? null : Math.max(0, (nowMs - lastTs) / 1000));
      if (age !== null) metrics.lagSeconds.set(labels, age);
      this.#catchUp.observe(labels, nowMs, lag, age);
    }
    return caughtUp;
  }

  /** Polls the high watermarks of the tracked partitions' topics; a failure is logged, the next poll retries. */
  async poll(admin: Pick<Admin, 'fetchTopicOffsets'>): Promise<void> {
    const topics = new Set([...this.#parts.values()].map((t) => t.held.tp.topic));
    try {
      for (const topic of topics) {
        for (const o of await admin.fetchTopicOffsets(topic)) this.sawHighWatermark({ topic, partition: o.partition }, Number(o.high));
      }
    } catch (err) {
      this.#o.logger.debug({ err }, 'kafka: high watermark poll failed');
    }
  }
}
