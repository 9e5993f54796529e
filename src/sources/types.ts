import type { CommitPoint, LaneInit } from '../commit/types.js';
import type { Batch } from '../core/batch.js';
import type { GeneratedLane } from '../core/generator.js';

/** What a source hands the engine: a packed batch of raw messages (the engine numbers it). */
export type SourceBatch = Omit<Batch, 'seq'>;

export interface Progress {
  /** Units done and expected (messages or bytes); total null when unknown (stdin). */
  readonly done: number;
  readonly total: number | null;
  readonly unit: 'messages' | 'bytes';
}

/** A finite or endless source read by pulling. Kafka pushes instead and has its own driver. */
export interface PullSource {
  readonly describe: string;
  batches(): AsyncIterable<SourceBatch>;
  progress(): Progress;
  /** Stop after the current batch (SIGTERM); idempotent. */
  stop(): void;
}

/**
 * A lane's figures as its host last knew them: a copy, never the host's own state, so a source may
 * keep it and the host may later hold it as the last report of the worker that owns the lane.
 */
export interface LaneStatus {
  /** What a commit may name for the lane now (its rows are written); null before the first. */
  readonly commitPoint: CommitPoint | null;
  /** Position after the last applied batch; null before a positioned batch was applied. */
  readonly appliedEnd: number | null;
  /** Source timestamp (ms) of the oldest record submitted and not yet applied; null when none is pending. */
  readonly oldestPendingMs: number | null;
  /** Source timestamp (ms) of the last record applied. */
  readonly lastAppliedTimestampMs: number | null;
  /** Wall-clock ms of the last batch submitted (or of the open): idle flushing waits on it. */
  readonly lastActivityMs: number;
}

/**
 * What a source calls to run its lanes: the engine implements it. A lane is named by the number the
 * source gives it (never reused in a process, so a late answer for an old lane cannot be taken for a
 * new one); its batches carry that number.
 *
 * Every call takes and returns plain data (numbers, a LaneInit, a batch whose bytes are a shared
 * buffer nobody writes to once handed over, a LaneStatus copy) and no object either side keeps
 * changing, so each call can become a message to a worker that owns the lane's state, and status()
 * the copy of what that worker last reported, without the sources changing. For the same reason
 * nothing here hands out a lane object.
 */
export interface LaneHost {
  /** Opens (or reopens, closing the old one dirty) a lane at its restored point. */
  open(lane: number, init: LaneInit): void;
  /** Hands a batch of `batch.partition`'s lane over; resolves once dispatched (not applied), waiting for room. */
  submit(batch: SourceBatch): Promise<void>;
  /** A caught-up, quiet lane's watermark follows the wall clock, so its windows close; after what was submitted before. */
  advanceIdle(lane: number, wallMs: number): Promise<void>;
  /**
   * Revoked (or replaced): batches in flight for it are not applied, its open windows are discarded
   * (the next owner rebuilds them from the commit point). Resolves once an apply under way and every
   * write it started have finished, so a restore after it reads the points those writes stored.
   */
  closeDirty(lane: number): Promise<void>;
  /** The lane's figures now; null for a lane not open. */
  status(lane: number): LaneStatus | null;
  /** Resolves when every submitted batch has been applied and its rows written. */
  drain(): Promise<void>;
  /**
   * Hosts whose lanes can lose their state (LANE_STATE=worker: the worker holding it died) rebuild a
   * lane by asking its source to replay it; a source that can registers here. Without one such a
   * loss stops the host.
   */
  replayWith?(rewinder: LaneRewinder): void;
}

/** What a source that can replay a lane offers its host. */
export interface LaneRewinder {
  /**
   * The lane's state is gone, `point` its last commit point (null before its first): open a fresh
   * lane at it (host.open, a new number) and read the input again from there. The old lane is
   * already closed. False when this source cannot (then the host stops).
   */
  rewind(lane: number, point: CommitPoint | null): boolean;
}

/**
 * A lane host whose lane owners generate a lane's input themselves (SOURCE=generator with
 * LANE_STATE=worker): the source sends how many points of the lane's share, never their bytes.
 */
export interface GeneratingLaneHost {
  /** Opens a lane (from nothing) whose owner generates `lane.share` of the workload. */
  openGenerated(lane: number, generated: GeneratedLane): void;
  /**
   * The owner generates points from..from+count of the lane's share and applies them as one batch,
   * after the lane's earlier ones; resolves once dispatched (not applied), waiting for room.
   */
  generate(lane: number, from: number, count: number): Promise<void>;
}

/** Age in seconds of the oldest record submitted and not yet applied; null when nothing is pending. */
export function pendingAgeSeconds(s: LaneStatus | null, nowMs: number): number | null {
  const ts = s?.oldestPendingMs ?? null;
  return ts === null ? null : Math.max(0, (nowMs - ts) / 1000);
}
