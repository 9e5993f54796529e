// The at-least-once write of a group (one idempotent producer per lane, acks=-1), and what both modes
// share: requests cut per partition, and rows the broker refuses returned as rejected.
import type { Logger } from 'pino';
import { StreamstatsError } from '../../errors.js';
import { rowLevelRefusal } from '../../kafka/errors.js';
import type { ProducerSet } from '../../kafka/producer.js';
import { RecordsRefused, sendRefusingOversize } from '../../kafka/refusals.js';
import { chunkItems, RECORD_OVERHEAD_BYTES, requestBudget } from '../../kafka/requests.js';
import type { TopicLimits } from '../../kafka/topics.js';
import type { RowRejection } from '../types.js';
import { flatten, type Item, type QueuedWrite } from './lanes.js';

/** What a group write needs of the sink. */
export interface GroupWriteContext {
  readonly topic: string;
  readonly groupId: string;
  readonly codec: number;
  readonly maxRequestBytes: number;
  readonly producers: ProducerSet;
  readonly limits: TopicLimits;
  readonly logger: Logger;
}

/** Requests of at most maxRequestBytes, and at most the topic's max.message.bytes, per partition. */
export function requests(c: GroupWriteContext, items: readonly Item[]): Item[][] {
  return chunkItems(items, requestBudget(c.maxRequestBytes, c.limits.maxMessageBytes), RECORD_OVERHEAD_BYTES);
}

/**
 * Runs a write; when the broker refuses records (the topic's max.message.bytes was lowered since it
 * was read), the rows now over the limit are returned as rejected and the rest written once more.
 */
export async function withRefusals(c: GroupWriteContext, group: readonly QueuedWrite[], run: (items: readonly Item[]) => Promise<void>): Promise<Map<QueuedWrite, RowRejection[]>> {
  const refused = new Map<QueuedWrite, RowRejection[]>();
  await sendRefusingOversize(flatten(group), c.limits, run, (x, why, max) => {
    const list = refused.get(x.w) ?? [];
    list.push({ index: x.row, detail: `kafka: ${c.topic} refused the row (${why}): ${x.size} bytes (key and value) is over max.message.bytes=${max}` });
    refused.set(x.w, list);
  });
  return refused;
}

export function writeIdempotent(c: GroupWriteContext, id: string, group: readonly QueuedWrite[]): Promise<Map<QueuedWrite, RowRejection[]>> {
  const rows = group.reduce((a, w) => a + w.rows, 0);
  return withRefusals(c, group, (items) => c.producers.run(id, async (producer, slot) => {
    let sent = 0;
    try {
      for (const chunk of requests(c, items)) {
        await producer.send({ topic: c.topic, acks: -1, compression: c.codec, messages: chunk.map((x) => x.m) });
        sent += chunk.length;
      }
    } catch (err) {
      // A failed idempotent send leaves kafkajs's sequence numbers out of step: start afresh.
      void c.producers.discard(slot);
      const why = rowLevelRefusal(err);
      const failure = new StreamstatsError('STREAMSTATS_SINK', `kafka: writing ${rows} rows to ${c.topic} failed: ${(err as Error).message}`, { cause: err, canRetry: true });
      // At least once: what went out before the refusal stays written; the rest is retried.
      throw why === null ? failure : new RecordsRefused(why, failure, sent);
    }
  }));
}
