// What a lane host does when a source submits a batch, the same whether the main thread holds the
// lanes (index.ts) or their owning workers do (owned.ts): wait for room (batches pending in the
// engine, then the in-flight bound of the pool or the owners), stamp the batch with its lane's next
// sequence number and count it. One piece, so the two hosts' backpressure and metrics cannot drift.
import type { Gate } from '../async/index.js';
import { messageCount, type Batch } from '../core/batch.js';
import type { Metrics } from '../metrics/index.js';
import type { SourceBatch } from '../sources/types.js';
import type { EngineTotals } from './types.js';

/** The bookkeeping of a lane that admission stamps. */
export interface AdmittedLane {
  nextSeq: number;
  /** Wall-clock time of the last batch submitted, for idle flushing. */
  lastActivityMs: number;
  /** Source timestamp of the oldest submitted batch not yet applied (lag in seconds). */
  readonly unappliedTimestamps: number[];
}

/** The in-flight bound of whoever runs the batches (the decode pool, the lane owners). */
export interface Capacity {
  readonly full: boolean;
  acquire(): Promise<void>;
  release(): void;
}

export interface Admission<S extends AdmittedLane> {
  /** The host's fatal error, if it has one: nothing more is admitted. */
  readonly fatal: () => Error | null;
  readonly pending: Gate;
  readonly capacity: Capacity;
  readonly metrics: Pick<Metrics, 'poolBackpressure' | 'messages' | 'batchMessages' | 'batchBytes'>;
  readonly totals: Pick<EngineTotals, 'messages' | 'batches'>;
  /** The lane's state (opened if the host opens lanes on first sight); null when it is not open. */
  readonly lane: (id: number) => S | null;
}

/**
 * Waits for room and stamps the batch; the caller then holds one permit of `pending` and one of
 * `capacity`, to release when the batch is applied. Null when the lane was revoked while the batch
 * waited (both permits released: nothing to apply it to). Throws once the host has failed.
 */
export async function admit<S extends AdmittedLane>(b: SourceBatch, a: Admission<S>): Promise<{ state: S; batch: Batch } | null> {
  const state = await room(b.lane, a);
  if (state === null) return null;
  const batch: Batch = { ...b, seq: state.nextSeq++ };
  state.lastActivityMs = Date.now();
  if (batch.firstTimestampMs !== undefined) state.unappliedTimestamps.push(batch.firstTimestampMs);
  const n = messageCount(batch);
  a.metrics.messages.inc(n);
  a.metrics.batchMessages.observe(n);
  a.metrics.batchBytes.observe(batch.data.length);
  a.totals.messages += n;
  a.totals.batches++;
  return { state, batch };
}

/**
 * admit() for a batch its lane's owner makes itself (a generated lane): the same permits, a
 * sequence number and the count of its `messages`; its bytes are counted when the owner says how many.
 */
export async function admitGenerated<S extends AdmittedLane>(lane: number, messages: number, a: Admission<S>): Promise<{ state: S; seq: number } | null> {
  const state = await room(lane, a);
  if (state === null) return null;
  state.lastActivityMs = Date.now();
  a.metrics.messages.inc(messages);
  a.metrics.batchMessages.observe(messages);
  a.totals.messages += messages;
  a.totals.batches++;
  return { state, seq: state.nextSeq++ };
}

/** Waits for both permits; the lane's state, or null (permits released) when it was revoked meanwhile. */
async function room<S extends AdmittedLane>(lane: number, a: Admission<S>): Promise<S | null> {
  const fatal = a.fatal();
  if (fatal !== null) throw fatal;
  if (a.capacity.full || !a.pending.free) a.metrics.poolBackpressure.inc();
  await a.pending.acquire();
  const after = a.fatal();
  if (after !== null) {
    a.pending.release();
    throw after;
  }
  try {
    await a.capacity.acquire();
  } catch (err) {
    a.pending.release();
    throw err;
  }
  const state = a.lane(lane);
  if (state === null) {
    a.capacity.release();
    a.pending.release();
    return null;
  }
  return state;
}
