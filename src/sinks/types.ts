// The contracts of the output side, in a file of their own so that sources and the engine depend on
// types, never on the sink implementations (no import circle through the factories).
import type { PositionStore, SinkCommit } from '../commit/types.js';
import type { RejectReason } from '../core/messages.js';
import type { RowBatch } from '../windows/row.js';

export type { SinkCommit } from '../commit/types.js';

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
   * Set when the sink stores each commit point with its rows (exactly-once on its own): the source then
   * resumes from it rather than from its own commits, and commits nothing itself.
   */
  readonly positions?: PositionStore | undefined;
  /**
   * True when write() may be called again before earlier calls resolved: the sink keeps the call order
   * per partition itself (and may batch several emissions into one request or transaction). The engine
   * then goes on applying batches while rows are in flight; otherwise it awaits each write.
   */
  readonly pipelined?: boolean;
  /**
   * True when an emission's rows must reach the sink in one write: a sink whose earlier chunks could
   * not be rewritten on a replay without duplicates (exactly-once Kafka: each write may be its own
   * transaction). Other sinks get large emissions in chunks, the commit point with the last.
   */
  readonly wholeEmissions?: boolean;
  /**
   * True when write() reads of a batch only its bytes (ndjsonBytes, lineEnds, identity keys, where),
   * and its row objects only for rows it refuses: then a worker may format the rows.
   */
  readonly readsRowBytes?: boolean;
  /** True when write() reads each row's identity key (the worker writes them with the rows). */
  readonly readsIdentityKeys?: boolean;
  /**
   * Where the sink keeps its output's record layout (src/sinks/kafka/row-records.ts SharedRecordLayout):
   * lane owners write a batch's rows as the sink's records once it says the layout.
   */
  readonly recordLayout?: SharedArrayBuffer;
  /**
   * True when write() stores a batch by its COPY tuples where it has them (copyTuples(): made by the
   * worker that formatted the rows), and reads its row objects only for rows it refuses.
   */
  readonly readsCopyTuples?: boolean;
  /**
   * Writes one emission. Resolves with the rows refused for row-level reasons (the rest, and the
   * commit, are written). Rejects only when the sink itself cannot go on (connection lost past its
   * retries, fenced, outcome unknown): the engine then stops and the process exits non-zero.
   */
  write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult>;
  close(): Promise<void>;
}

/** One rejected record (or refused row), with its reason and where it came from. */
export interface DeadLetterEntry {
  time: string;
  reason: RejectReason;
  detail: string;
  source: string;
  /** The engine's lane number. Named `partition` in the output, as it always was (files and consumers read it). */
  partition: number;
  /** Source position of the message (Kafka offset), when the source has one. */
  offset?: string;
  /** Index of the message in its batch and of the record in a JSON-array message (-1 = whole message). */
  batch_seq: number;
  message_index: number;
  element: number;
  /** The rejected bytes: UTF-8 text, or base64 when they were not valid UTF-8 (value_encoding says which). */
  value: string;
  value_encoding: 'utf8' | 'base64';
  /** Set when `value` holds only the first bytes of what was rejected; value_bytes is the whole size. */
  value_truncated?: true;
  value_bytes?: number;
  key?: string;
  /** The lane's identity (LaneIdentity): the record's topic and Kafka partition (a Redis stream and its consumer's number). */
  topic?: string;
  kafka_partition?: number;
}

/** The dead-letter output. Nothing is dropped silently: if it fails, the engine stops. */
export interface DeadLetter {
  readonly describe: string;
  write(entries: readonly DeadLetterEntry[]): Promise<void>;
  close(): Promise<void>;
}
