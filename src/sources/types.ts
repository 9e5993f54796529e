import type { Batch } from '../core/batch.js';

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
