// How long until a lane has caught up, and whether it is getting there. Lag in messages changes by
// what is produced minus what is consumed, so its slope over the last minute is (produce rate -
// consume rate) without asking the source for either: a falling lag of L messages at slope -s
// catches up in L / s seconds. The same estimate then serves Kafka partitions (lag from high
// watermarks) and Redis streams (lag from the group's counters).
//
// The slope is the least-squares fit of the lag samples in the window, not the first and last ones:
// lag moves in fetch-sized steps (a batch of 10,000 applied at once), and two samples either side of
// one step read a rate many times the real one.
import type { Metrics } from '../metrics/index.js';

export type CatchUpState = 'keeping_up' | 'catching_up' | 'falling_behind';
export const CATCH_UP_STATES: readonly CatchUpState[] = ['keeping_up', 'catching_up', 'falling_behind'];

export const CATCH_UP_DEFAULTS = {
  /** Samples older than this do not count: the estimate follows the last minute's rates. */
  windowMs: 60_000,
  /** No estimate before the samples span this long: a rate over a few seconds is one fetch's noise. */
  minSpanMs: 10_000,
  /** Samples closer than this to the previous one replace it: bounds the window to windowMs / this. */
  minStepMs: 1_000,
  /**
   * Keeping up: nothing behind, or the oldest record not yet processed is at most this old (a few
   * batches in hand under a steady load are not lag to alarm on).
   */
  keepingUpLagSeconds: 10,
} as const;

export type CatchUpOptions = typeof CATCH_UP_DEFAULTS;

export interface CatchUpEstimate {
  readonly state: CatchUpState;
  /** 0 keeping up; lag / (consume - produce rate) catching up; Infinity falling behind. */
  readonly seconds: number;
  /** Messages a second by which the lag shrinks (negative: it grows). */
  readonly ratePerSecond: number;
}

interface Sample {
  t: number;
  lag: number;
}

/** One lane's samples: pure, no clock of its own (the caller passes the time of each sample). */
export class CatchUpSeries {
  readonly #o: CatchUpOptions;
  readonly #samples: Sample[] = [];

  constructor(o: Partial<CatchUpOptions> = {}) {
    this.#o = { ...CATCH_UP_DEFAULTS, ...o };
  }

  /** Adds a sample; returns the estimate, or null while the samples span less than minSpanMs. */
  observe(nowMs: number, lagMessages: number, lagSeconds: number | null): CatchUpEstimate | null {
    const s = this.#samples;
    const last = s[s.length - 1];
    if (last !== undefined && nowMs < last.t) s.length = 0; // the clock stepped back: start again
    if (last !== undefined && s.length > 1 && nowMs - s[s.length - 2]!.t < this.#o.minStepMs) {
      last.t = nowMs;
      last.lag = lagMessages;
    } else {
      s.push({ t: nowMs, lag: lagMessages });
    }
    while (s.length > 2 && nowMs - s[0]!.t > this.#o.windowMs) s.shift();
    const keeping = lagMessages <= 0 || (lagSeconds !== null && lagSeconds <= this.#o.keepingUpLagSeconds);
    if (keeping) return { state: 'keeping_up', seconds: 0, ratePerSecond: -slope(s) * 1000 };
    if (s.length < 2 || nowMs - s[0]!.t < this.#o.minSpanMs) return null;
    const shrink = -slope(s) * 1000;
    if (shrink > 0) return { state: 'catching_up', seconds: lagMessages / shrink, ratePerSecond: shrink };
    return { state: 'falling_behind', seconds: Infinity, ratePerSecond: shrink };
  }
}

/** Lag per millisecond by least squares (0 for fewer than two distinct times). */
function slope(s: readonly Sample[]): number {
  const n = s.length;
  if (n < 2) return 0;
  const t0 = s[0]!.t;
  let st = 0;
  let sl = 0;
  for (const x of s) {
    st += x.t - t0;
    sl += x.lag;
  }
  const mt = st / n;
  const ml = sl / n;
  let num = 0;
  let den = 0;
  for (const x of s) {
    const dt = x.t - t0 - mt;
    num += dt * (x.lag - ml);
    den += dt * dt;
  }
  return den === 0 ? 0 : num / den;
}

export type CatchUpLabels = { topic: string; partition: string } | { stream: string };

/** The gauges of every lane of a source: one series of samples per label set. */
export class CatchUp {
  readonly #metrics: Pick<Metrics, 'catchUpSeconds' | 'lagState'>;
  readonly #o: Partial<CatchUpOptions>;
  readonly #series = new Map<string, CatchUpSeries>();

  constructor(metrics: Pick<Metrics, 'catchUpSeconds' | 'lagState'>, o: Partial<CatchUpOptions> = {}) {
    this.#metrics = metrics;
    this.#o = o;
  }

  observe(labels: CatchUpLabels, nowMs: number, lagMessages: number, lagSeconds: number | null): CatchUpEstimate | null {
    const key = JSON.stringify(labels);
    let series = this.#series.get(key);
    if (series === undefined) this.#series.set(key, (series = new CatchUpSeries(this.#o)));
    const e = series.observe(nowMs, lagMessages, lagSeconds);
    if (e === null) return null;
    this.#metrics.catchUpSeconds.set(labels, e.seconds);
    for (const state of CATCH_UP_STATES) this.#metrics.lagState.set({ ...labels, state }, state === e.state ? 1 : 0);
    return e;
  }

  /** Forgets a lane (revoked, or its stream gone): its gauges go with it. */
  remove(labels: CatchUpLabels): void {
    this.#series.delete(JSON.stringify(labels));
    this.#metrics.catchUpSeconds.remove(labels);
    for (const state of CATCH_UP_STATES) this.#metrics.lagState.remove({ ...labels, state });
  }
}
