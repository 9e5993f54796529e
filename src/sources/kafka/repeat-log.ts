// Repeated identical warnings and errors, rate-limited: during a broker outage kafkajs and the
// supervisor say the same thing several times a second (connection refused, crash, back-off), which
// buries the one line that matters and costs disk. The first line of a kind is written at once; the
// same message again within the interval is counted, not written; the next one after the interval is
// written with `repeated`, the number of lines left out since the last one. While a kind keeps
// repeating, its interval doubles after each line (10 s, 20 s, 40 s ... up to MAX_INTERVAL_MS): a
// 3-minute outage is a handful of lines of each kind, not one every 10 s (61 ERROR lines before); a
// kind that was quiet for a whole interval starts again from the first.
import type { Logger } from 'pino';

/** Messages remembered at most (the oldest is forgotten first): the limiter's memory is bounded. */
const MAX_KINDS = 1000;
/** The longest interval a kind that keeps repeating grows to. */
export const MAX_INTERVAL_MS = 10 * 60_000;

export class RepeatLimiter {
  readonly #intervalMs: number;
  readonly #now: () => number;
  /** Per kind: when it was last written and last seen, lines left out since, its interval now. */
  readonly #seen = new Map<string, { lastMs: number; seenMs: number; left: number; intervalMs: number }>();

  constructor(intervalMs: number, now: () => number = Date.now) {
    if (!(intervalMs >= 0)) throw new RangeError(`RepeatLimiter: intervalMs must be >= 0, got ${intervalMs}`);
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** Null: leave this line out. Else write it, with the number of identical lines left out before it. */
  admit(kind: string): number | null {
    const now = this.#now();
    const s = this.#seen.get(kind);
    if (s !== undefined && now - s.lastMs < s.intervalMs) {
      s.left++;
      s.seenMs = now;
      return null;
    }
    const left = s?.left ?? 0;
    // Still repeating (seen within its interval): the next interval is twice as long; quiet for a
    // whole interval: back to the first.
    const repeating = s !== undefined && left > 0 && now - s.seenMs < s.intervalMs;
    const intervalMs = repeating ? Math.min(MAX_INTERVAL_MS, s.intervalMs * 2) : this.#intervalMs;
    // Re-inserted so that the map's order is least recently written first.
    this.#seen.delete(kind);
    this.#seen.set(kind, { lastMs: now, seenMs: now, left: 0, intervalMs });
    if (this.#seen.size > MAX_KINDS) this.#seen.delete(this.#seen.keys().next().value!);
    return left;
  }
}

type Level = 'warn' | 'error';

/**
 * A logger like `logger` whose warn and error lines are rate-limited per message text with its
 * numbers blanked: kafkajs puts delays, ports and counts in its messages ("Restarting the consumer in
 * 3516ms"), and the fields (an attempt number) differ too, yet it is the same complaint. Other levels
 * pass through.
 */
export function limitRepeats(logger: Logger, intervalMs: number, now?: () => number): Logger {
  const limiter = new RepeatLimiter(intervalMs, now);
  const limited = Object.create(logger) as Logger;
  const wrap = (level: Level) => {
    const write = (logger[level] as (...a: unknown[]) => void).bind(logger);
    return (...a: unknown[]): void => {
      if (!logger.isLevelEnabled(level)) return;
      const [first, second] = a;
      const text = typeof first === 'string' ? first : typeof second === 'string' ? second : '';
      const repeated = limiter.admit(`${level}\0${text.replace(/\d+/g, '#')}`);
      if (repeated === null) return;
      if (repeated === 0) return write(...a);
      if (typeof first === 'string') return write({ repeated }, ...a);
      if (first instanceof Error) return write({ err: first, repeated }, ...a.slice(1));
      return write({ ...(first as object), repeated }, ...a.slice(1));
    };
  };
  limited.warn = wrap('warn') as Logger['warn'];
  limited.error = wrap('error') as Logger['error'];
  return limited;
}
