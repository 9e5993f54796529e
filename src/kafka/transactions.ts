// Transactional producer helpers: claiming a transactionalId (which fences its previous owner), and
// sending consumer offsets with metadata inside a transaction.
import type { PartitionOffset, Producer, Transaction } from 'kafkajs';
import { retry, Signal } from '../async/index.js';
import { isConcurrentTransactions } from './errors.js';

/**
 * InitProducerId with the transactionalId happens on the first transaction(): doing it at once makes
 * creating the producer what fences a previous owner (whose open transaction the coordinator then
 * aborts or completes). Nothing was added, so abort() sends no EndTxn.
 */
export async function claimTransactionalId(producer: Producer): Promise<void> {
  const tx = await producer.transaction();
  await tx.abort();
}

/**
 * The first retry's delay (then doubling, with jitter: 2.5-5 ms, 5-10 ms, ...). The coordinator writes
 * a commit's markers in a few ms and the lane waits out every retry in full: over one 1 M-record
 * exactly-once run (4 lanes, ~400 transactions) the lanes waited 153-198 ms in all from 5 ms against
 * 456-660 ms from 20 ms, one or two retries a wait either way.
 */
const CONCURRENT_RETRY_MS = 5;

/**
 * Right after a commit the coordinator is still writing the previous transaction's markers and answers
 * AddOffsetsToTxn with CONCURRENT_TRANSACTIONS (retriable). kafkajs retries that for AddPartitionsToTxn
 * (inside send) but not in sendOffsets (tulios/kafkajs#430), so a transaction with offsets that follows
 * another one closely would fail. Retrying is safe: the request changed nothing.
 */
export async function retryConcurrentTransactions<T>(fn: () => Promise<T>, deadlineMs = 10_000): Promise<T> {
  const deadline = new Signal();
  const timer = setTimeout(() => deadline.raise(), deadlineMs);
  try {
    return await retry(fn, { attempts: Infinity, baseDelayMs: CONCURRENT_RETRY_MS, maxDelayMs: 500, retriable: isConcurrentTransactions, signal: deadline });
  } finally {
    clearTimeout(timer);
  }
}

interface OffsetWithMetadata {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly metadata: string;
}

/** Adds a consumer group's offset, with its metadata, to the transaction (retrying CONCURRENT_TRANSACTIONS). */
export function sendOffsetWithMetadata(txn: Transaction, consumerGroupId: string, o: OffsetWithMetadata): Promise<void> {
  // kafkajs's types leave metadata out, but it passes each partition object as is to
  // TxnOffsetCommit, whose v0/v1 encoder writes `metadata` (NULLABLE_STRING).
  const partitions: Array<PartitionOffset & { metadata: string }> = [{ partition: o.partition, offset: String(o.offset), metadata: o.metadata }];
  return retryConcurrentTransactions(() => txn.sendOffsets({ consumerGroupId, topics: [{ topic: o.topic, partitions }] }));
}
