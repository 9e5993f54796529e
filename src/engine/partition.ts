// One partition's bookkeeping: its window store, the order its batches apply in, and its commit point.
import { messageCount, type Batch } from '../core/batch.js';
import type { CommitPoint, LaneIdentity, PartitionInit } from '../commit/types.js';
import { WindowStore } from '../windows/store.js';

export interface PartitionState {
  readonly id: number;
  readonly store: WindowStore;
  /** Stamped on rows and dead letters; undefined for an unpartitioned input. */
  readonly identity: LaneIdentity | undefined;
  /**
   * The appliedEnd of the commit point this partition was restored from (-Infinity when none): input
   * below it was processed by an earlier run, so its rejects are not dead-lettered again.
   */
  readonly restoredEnd: number;
  nextSeq: number;
  chain: Promise<void>;
  /** Set when the partition is revoked: batches still in flight for it are not applied. */
  dropped: boolean;
  /** Wall-clock time of the last batch submitted, for idle flushing. */
  lastActivityMs: number;
  /** Source timestamp of the oldest submitted batch not yet applied (lag in seconds). */
  readonly unappliedTimestamps: number[];
  /** Timestamp of the last message applied. */
  lastAppliedTimestampMs: number | null;
  /** The commit point: moved only after the rows it implies were written by the sink. */
  point: CommitPoint | null;
  /** Writes handed to a pipelined sink and not yet settled; `writes` settles after the last of them. */
  writesInFlight: number;
  /**
   * Cells taken out of the store whose rows the sink has not yet written: still open for the
   * open_series / open_windows gauges, so that 0 there means every closed window was written.
   */
  unwrittenCells: number;
  unwrittenWindows: number;
  writes: Promise<void>;
}

export type StoreSettings = ConstructorParameters<typeof WindowStore>[0];

export function newPartition(id: number, init: PartitionInit, settings: StoreSettings): PartitionState {
  const store = new WindowStore(settings);
  if (init.watermarkMs !== undefined) store.advanceWatermark(init.watermarkMs);
  return {
    id,
    store,
    identity: init.identity,
    restoredEnd: init.appliedEnd ?? -Infinity,
    nextSeq: 0,
    chain: Promise.resolve(),
    dropped: false,
    lastActivityMs: Date.now(),
    unappliedTimestamps: [],
    lastAppliedTimestampMs: null,
    point: null,
    writesInFlight: 0,
    unwrittenCells: 0,
    unwrittenWindows: 0,
    writes: Promise.resolve(),
  };
}

/** The commit point the partition reaches once what was applied so far is written; null before any positioned batch. */
export function pointNow(s: PartitionState): CommitPoint | null {
  const position = s.store.commitPosition();
  const appliedEnd = s.store.appliedEnd;
  if (position === null || appliedEnd === null) return null;
  // After a restart, input below restoredEnd was processed by an earlier run: the point must not
  // claim less, or the next restart would dead-letter its records again (as late).
  return { position, watermarkMs: s.store.watermark, appliedEnd: Math.max(appliedEnd, s.restoredEnd) };
}

/** A message processed before the restart this partition was restored from. */
export function isReplay(s: PartitionState, batch: Batch, msg: number): boolean {
  const pos = batch.positions?.[msg];
  return pos !== undefined && Number(pos) < s.restoredEnd;
}

/** Messages lo..hi of a batch as a batch of their own (same partition and seq; positions follow). */
export function subBatch(b: Batch, lo: number, hi: number): Batch {
  const base = b.offsets[lo]!;
  const offsets = new Uint32Array(hi - lo + 1);
  for (let i = lo; i <= hi; i++) offsets[i - lo] = b.offsets[i]! - base;
  const part: Batch = {
    partition: b.partition,
    seq: b.seq,
    data: b.data.subarray(base, b.offsets[hi]!),
    offsets,
    ...(b.positions === undefined ? {} : { positions: b.positions.slice(lo, hi) }),
    ...(b.keys === undefined ? {} : { keys: b.keys.slice(lo, hi) }),
    ...(b.startPosition === undefined || b.positions === undefined ? {} : { startPosition: Number(b.positions[lo]) }),
    ...(b.endPosition === undefined || b.positions === undefined ? {} : { endPosition: hi < messageCount(b) ? Number(b.positions[hi]) : b.endPosition }),
  };
  if (b.oversized !== undefined) {
    const o = new Map<number, { bytes: number; detail?: string }>();
    for (const [i, v] of b.oversized) if (i >= lo && i < hi) o.set(i - lo, v);
    if (o.size > 0) return { ...part, oversized: o };
  }
  return part;
}
