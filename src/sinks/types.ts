// The contracts of the output side, in a file of their own so that sources and the engine depend on
// types, never on the sink implementations (no import circle through the factory).
import type { CommitPoint } from '../commit/types.js';
import type { RowBatch } from '../windows/row.js';

/** For a Kafka source: the partition's commit point, written in the same transaction as the rows. */
export interface SinkCommit {
  readonly topic: string;
  readonly partition: number;
  readonly point: CommitPoint;
}

export interface PartitionPositions {
  readonly position: number;
  readonly watermarkMs: number;
  readonly appliedEnd: number;
}

/**
 * A row the sink refused for a reason of the row itself (a data error, a value the store cannot hold, a
 * message over the topic's size limit). The engine dead-letters it as `sink_rejected` and moves on.
 */
export interface RowRejection {
  /** Index of the row in batch.rows. */
  readonly index: number;
  /** What the store said, without secrets: e.g. `postgres 54000: index row size 3016 exceeds btree maximum 2704`. */
  readonly detail: string;
}

/**
 * What a write did. Every row not listed in `rejected` was written, and the commit (if any) was stored
 * with them: a rejection never holds the partition back.
 */
export interface SinkWriteResult {
  readonly rejected: readonly RowRejection[];
}

export const WRITTEN_ALL: SinkWriteResult = Object.freeze({ rejected: Object.freeze([]) as readonly RowRejection[] });

export interface Sink {
  readonly describe: string;
  /**
   * True when the sink stores partition positions with its rows (exactly-once on its own): the Kafka
   * source then resumes from readPositions() rather than from the group's committed offsets.
   */
  readonly ownsPositions?: boolean;
  /**
   * True when write() may be called again before earlier calls resolved: the sink keeps the call order
   * per partition itself (and may batch several emissions into one request or transaction). The engine
   * then goes on applying batches while rows are in flight; otherwise it awaits each write.
   */
  readonly pipelined?: boolean;
  /**
   * Writes one emission. Resolves with the rows refused for row-level reasons (the rest, and the
   * commit, are written). Rejects only when the sink itself cannot go on (connection lost past its
   * retries, fenced, outcome unknown): the engine then stops and the process exits non-zero.
   */
  write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult>;
  readPositions?(topic: string, partitions: readonly number[]): Promise<Map<number, PartitionPositions>>;
  close(): Promise<void>;
}
