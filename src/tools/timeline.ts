// Where a demo producer's timeline starts when GEN_START is unset. Into an empty target the load
// ends now (every point in the past, the rows recent, no window waiting for the future). Into a
// target that already holds data, an engine has most likely consumed it and gone idle, and an idle
// partition's watermark follows the wall clock (IDLE_FLUSH_SECONDS): a second load ending now was
// 99 % late dead letters. So a load into a used target starts after its newest point and not before
// now, and runs forward in time; its windows close as its own points move the watermark on (the
// last ones when the wall clock gets there). A timeline that would end beyond MAX_FUTURE_SECONDS
// (where the engine rejects points as future_timestamp) is refused before anything is written.
import { ConfigError } from '../errors.js';

export interface Timeline {
  /** Event-time step between two points of one series (ms). */
  readonly stepMs: number;
  /** Steps from the first point to the last. */
  readonly steps: number;
  /** How far after its step's time a point may lie (ms; the generator jitters within a round). */
  readonly jitterMs: number;
}

export interface TimelineStart {
  readonly startMs: number;
  /** Why: for the producer's closing line. */
  readonly why: 'ends now (empty target)' | 'starts after the newest point' | 'starts now';
}

const ceilSecond = (ms: number): number => Math.ceil(ms / 1000) * 1000;

/**
 * `newestMs`: the newest event time the target holds (null: it never held anything; 0: it did, but
 * nothing readable is left). `maxFutureSeconds`: the engine's MAX_FUTURE_SECONDS (0 = off). `count`
 * is the option that sets the load's size, named in the refusal.
 */
export function timelineStart(t: Timeline, nowMs: number, newestMs: number | null, maxFutureSeconds: number, count: { readonly name: string; readonly value: number }): TimelineStart {
  const spanMs = t.steps * t.stepMs + t.jitterMs;
  if (newestMs === null) return { startMs: Math.floor((nowMs - spanMs) / 1000) * 1000, why: 'ends now (empty target)' };
  const after = ceilSecond(newestMs + Math.max(1, t.jitterMs));
  const startMs = Math.max(ceilSecond(nowMs), after);
  const endMs = startMs + spanMs;
  if (maxFutureSeconds > 0 && endMs > nowMs + maxFutureSeconds * 1000) {
    throw new ConfigError(
      count.name,
      String(count.value),
      `this load would start at ${new Date(startMs).toISOString()} (after the newest point already there, ${new Date(newestMs).toISOString()}) and end at ${new Date(endMs).toISOString()}, ` +
        `more than MAX_FUTURE_SECONDS=${maxFutureSeconds} ahead of now, where the engine rejects points as future_timestamp: load fewer points, wait, or set GEN_START`,
    );
  }
  return { startMs, why: startMs === after && after > ceilSecond(nowMs) ? 'starts after the newest point' : 'starts now' };
}
