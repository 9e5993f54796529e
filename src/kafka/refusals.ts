// Records the broker refuses for a reason of their own (MESSAGE_TOO_LARGE after the topic's
// max.message.bytes was lowered, say): the limit is read again, the records now over it are set
// aside, and the rest is sent once more, with a fresh producer (the refused send broke the old one's
// sequence numbers, so the writer discards it before throwing).
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
 * Runs `send(items)`; when it throws RecordsRefused, re-reads the limits, hands each unsent item now
 * over max.message.bytes to `refuse` and runs the rest once more. A refusal no item explains (nothing
 * is over the limit), or a second one, is not a record's fault: its `failure` is thrown.
 */
export async function sendRefusingOversize<T extends { readonly size: number }>(
  items: readonly T[],
  limits: TopicLimits,
  send: (items: readonly T[]) => Promise<void>,
  refuse: (item: T, why: string, maxMessageBytes: number) => void,
): Promise<void> {
  let pending = items;
  let refused: RecordsRefused | null = null;
  try {
    await retry(
      async (attempt) => {
        if (attempt > 1 && refused !== null) pending = await dropOversize(pending.slice(refused.sent), refused, limits, refuse);
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

async function dropOversize<T extends { readonly size: number }>(
  items: readonly T[],
  err: RecordsRefused,
  limits: TopicLimits,
  refuse: (item: T, why: string, maxMessageBytes: number) => void,
): Promise<readonly T[]> {
  await limits.read(true);
  const max = limits.maxMessageBytes;
  const keep = items.filter((x) => x.size + RECORD_OVERHEAD_BYTES <= max);
  if (keep.length === items.length) throw err.failure;
  for (const x of items) if (x.size + RECORD_OVERHEAD_BYTES > max) refuse(x, err.why, max);
  return keep;
}
