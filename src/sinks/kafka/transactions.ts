// Exactly-once writes: the queued writes of an input partition run as ONE transaction: the latest
// commit point's offset (with the same metadata the Kafka source commits: {"v":1,"wm":…,"hi":…}) via
// sendOffsets, their rows, then commit. kafkajs 2.2.4 sends TxnOffsetCommit v0/v1,
// which carry no group generation (no KIP-447 fencing), so the old pattern is used: one transactional
// producer per input partition, transactionalId `${groupId}.${topic}.${partition}`; a new owner's
// InitProducerId fences the previous one (its next transaction fails with INVALID_PRODUCER_EPOCH) and
// aborts or completes whatever transaction it left open.
import type { Message, Transaction } from 'kafkajs';
import { formatCommitMeta } from '../../commit/meta.js';
import { StreamstatsError } from '../../errors.js';
import { isFencingError, rowLevelRefusal } from '../../kafka/errors.js';
import type { ProducerSlot } from '../../kafka/producer.js';
import { RecordsRefused } from '../../kafka/refusals.js';
import { releasePrepared } from '../../kafka/produce-request.js';
import { sendOffsetWithMetadata } from '../../kafka/transactions.js';
import type { RowRejection, SinkCommit } from '../types.js';
import type { SinkWrite } from './lanes.js';
import { requests, withRefusals, type GroupWriteContext } from './writes.js';

/**
 * The transactional id for an input partition. Topic names may contain ".", so two groups could in
 * theory collide ("a.b" + "c" and "a" + "b.c"); group ids are ours to choose.
 */
export function transactionalId(groupId: string, topic: string, partition: number): string {
  return `${groupId}.${topic}.${partition}`;
}

export function writeTransaction(c: GroupWriteContext, id: string, group: readonly SinkWrite[]): Promise<Map<SinkWrite, RowRejection[]>> {
  // The latest commit point covers every earlier one of the lane (one input partition).
  let commit: SinkCommit | undefined;
  for (const w of group) if (w.commit !== undefined) commit = w.commit;
  const rows = group.reduce((a, w) => a + w.rows, 0);
  return withRefusals(c, group, (g, ids) => c.producers.run(id, async (producer, slot) => {
    let committing = false;
    let tx: Transaction | null = null;
    try {
      const txn = await producer.transaction();
      tx = txn;
      // The offset first: right after the lane's previous commit the coordinator is still writing its
      // markers and answers the transaction's first request with CONCURRENT_TRANSACTIONS. Offsets are
      // retried after a few ms (sendOffsetWithMetadata); a first send would be retried by kafkajs after
      // 300 ms with an error logged and the metadata fetched again: a third of an exactly-once lane's
      // time went there. Where a part goes within the transaction changes nothing of what commits.
      if (commit !== undefined) {
        await sendOffsetWithMetadata(txn, c.groupId, { topic: commit.topic, partition: commit.partition, offset: commit.point.position, metadata: formatCommitMeta(commit.point) });
      }
      for (const r of requests(c, g, ids)) {
        await txn.send({ topic: c.topic, acks: -1, compression: c.codec, messages: r.messages as Message[] });
        releasePrepared(r.messages);
      }
      committing = true;
      await txn.commit();
    } catch (err) {
      const why = committing ? null : rowLevelRefusal(err);
      if (why === null) throw await failed(c, err, slot, tx, committing, rows, commit);
      // The refused send broke the producer's sequence numbers: abort (or let the next producer with
      // this transactionalId abort it) and replace the producer; nothing of this transaction is visible.
      const failure = await failed(c, err, slot, tx, false, rows, commit);
      void c.producers.discard(slot);
      throw new RecordsRefused(why, failure, 0);
    }
  }));
}

/** Aborts what can be aborted, drops the producer if its state is unknown, and says what happened. */
async function failed(
  c: GroupWriteContext,
  err: unknown,
  slot: ProducerSlot,
  tx: Transaction | null,
  committing: boolean,
  rows: number,
  commit: SinkCommit | undefined,
): Promise<StreamstatsError> {
  const where = commit === undefined ? '' : ` for ${commit.topic}/${commit.partition}`;
  const fenced = isFencingError(err);
  let broken = fenced || committing || tx === null;
  if (!broken && tx !== null && tx.isActive()) {
    try {
      await tx.abort();
    } catch (abortErr) {
      broken = true;
      c.logger.warn({ producer: slot.id, err: abortErr }, 'kafka: aborting the transaction failed; the producer is replaced (its transaction is aborted when the next one starts)');
    }
  }
  // A new producer with the same transactionalId aborts a transaction left open by this one.
  if (broken) void c.producers.discard(slot);
  if (fenced) {
    c.logger.error({ producer: slot.id, err }, 'kafka: fenced: another instance took over this input partition');
    return new StreamstatsError(
      'STREAMSTATS_SINK',
      `kafka: fenced${where}: a newer producer with transactionalId ${slot.id} took over (restart or rebalance); ${rows} rows were not written (${(err as Error).message})`,
      { cause: err, canRetry: false },
    );
  }
  // A failure during commit leaves the outcome unknown: retrying could write the rows twice.
  return new StreamstatsError(
    'STREAMSTATS_SINK',
    `kafka: transaction${where} ${committing ? 'commit failed (outcome unknown)' : 'aborted'}: ${rows} rows to ${c.topic}: ${(err as Error).message}`,
    { cause: err, canRetry: !committing },
  );
}
