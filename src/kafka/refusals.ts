// Records the broker refuses for a reason of their own (MESSAGE_TOO_LARGE after the topic's
// max.message.bytes was lowered, say): the limit is read again, the unsent records are adjusted to it
// (set aside, or cut to fit) and sent once more, with a fresh producer (the refused send broke the old
// one's sequence numbers, so the writer discards it before throwing).
import { retry } from '../async/index.js';
import type { StreamstatsError } from '../errors.js';
import { RECORD_OVERHEAD_BYTES } from './requests.js';
import type { TopicLimits } from './topics.js';

/** A send the broker refused for a reason of the records; the first `sent` items were written. */
export class RecordsRefused extends Error {
  constructor(readonly why: string, readonly failure: StreamstatsError, readonly sent: number) {
    super(failure.message);
    this.name = 'RecordsRefused';
  }
}

/**
 * The unsent items adapted to the limit read again, or null when the limit explains nothing (no item
 * changes): the refusal is then not the records' fault.
 */
export type AdjustToLimit<T> = (unsent: readonly T[], maxMessageBytes: number, why: string) => readonly T[] | null;

/**
 * Runs `send(items)`; when it throws RecordsRefused, re-reads the limits, adjusts the unsent items and
 * runs them once more. A refusal the limit does not explain, or a second one, throws its `failure`.
 */
export async function sendAgainAfterRefusal<T>(items: readonly T[], limits: TopicLimits, send: (items: readonly T[]) => Promise<void>, adjust: AdjustToLimit<T>): Promise<void> {
  let pending = items;
  let refused: RecordsRefused | null = null;
  try {
    await retry(
      async (attempt) => {
        if (attempt > 1 && refused !== null) {
          await limits.read(true);
          const next = adjust(pending.slice(refused.sent), limits.maxMessageBytes, refused.why);
          if (next === null) throw refused.failure;
          pending = next;
        }
        await send(pending);
      },
      {
        attempts: 2,
        baseDelayMs: 0,
        maxDelayMs: 0,
        retriable: (err) => err instanceof RecordsRefused,
        onRetry: (err) => {
          refused = err as RecordsRefused;
        },
      },
    );
  } catch (err) {
    throw err instanceof RecordsRefused ? err.failure : err;
  }
}

/** sendAgainAfterRefusal that hands each unsent item now over max.message.bytes to `refuse` and sends the rest. */
export function sendRefusingOversize<T extends { readonly size: number }>(
  items: readonly T[],
  limits: TopicLimits,
  send: (items: readonly T[]) => Promise<void>,
  refuse: (item: T, why: string, maxMessageBytes: number) => void,
): Promise<void> {
  return sendRefusingOversizeBy(items, limits, send, (x) => x.size, refuse);
}

/** sendRefusingOversize for items whose key and value bytes sizeOf tells (numbers into columns, say). */
export function sendRefusingOversizeBy<T>(
  items: readonly T[],
  limits: TopicLimits,
  send: (items: readonly T[]) => Promise<void>,
  sizeOf: (item: T) => number,
  refuse: (item: T, why: string, maxMessageBytes: number) => void,
): Promise<void> {
  return sendAgainAfterRefusal(items, limits, send, (unsent, max, why) => {
    const fits = (x: T) => sizeOf(x) + RECORD_OVERHEAD_BYTES <= max;
    const keep = unsent.filter(fits);
    if (keep.length === unsent.length) return null;
    for (const x of unsent) if (!fits(x)) refuse(x, why, max);
    return keep;
  });
}
