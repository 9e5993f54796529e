// The engine's options and counters.
import type { Logger } from 'pino';
import type { Decoder } from '../core/decode.js';
import type { RejectReason } from '../core/messages.js';
import type { Metrics } from '../metrics/index.js';
import type { RowPlacementMode } from './placement.js';
import type { DecodePool } from '../pool/index.js';
import type { DeadLetter, Sink } from '../sinks/types.js';
import type { ChunkLimits } from './emission.js';

export interface EngineOptions {
  readonly pool: DecodePool;
  readonly sink: Sink;
  readonly deadLetter: DeadLetter;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly sourceName: string;
  readonly windowSeconds: number;
  readonly allowedLatenessSeconds: number;
  /**
   * What a record whose window was already emitted becomes (LATE_RECORDS): dead-lettered as late
   * (default), or merged into its kept window, which is emitted again as a new revision, up to
   * amendHorizonSeconds after the window closed.
   */
  readonly lateRecords?: 'dead-letter' | 'amend';
  readonly amendHorizonSeconds?: number;
  /** Records that must confirm a forward jump of event time beyond the lateness (WATERMARK_CONFIRM_RECORDS). */
  readonly watermarkConfirmRecords?: number;
  readonly maxSeries: number;
  /** Estimated bytes of open series (MAX_STATE_MB); new series beyond it are series_limit. Default: no byte bound. */
  readonly maxStateMb?: number;
  readonly decoder: Decoder;
  /** Percentiles (0..100) per window, from sketches of this relative accuracy; empty = none. */
  readonly percentiles?: readonly number[];
  readonly percentileAccuracy?: number;
  /**
   * Pull sources (file, generator) get their one lane opened on its first batch; a source with lanes
   * of its own (Kafka, Redis) opens them itself, with their identity and restored commit point, and
   * batches for a lane it closed (revoked) are ignored.
   */
  readonly autoOpenLanes: boolean;
  /** Called once, when the engine cannot go on (an output failed): the pipeline stops and exits non-zero. */
  readonly onFatal?: (err: Error) => void;
  /** Rows and estimated bytes per sink write of an emission (default EMIT_CHUNK_DEFAULTS). */
  readonly emitChunk?: ChunkLimits;
  /** Where chunks' rows are formatted: `auto` (default) follows the load (./placement.ts); tests and benches pin it. */
  readonly rowPlacement?: RowPlacementMode;
  /** Emissions of one lane that a pipelined sink may hold at once (default 16). */
  readonly maxWritesInFlight?: number;
}

export interface EngineTotals {
  messages: number;
  records: number;
  ok: number;
  rejected: Partial<Record<RejectReason, number>>;
  rows: number;
  batches: number;
  decodeSeconds: number;
  poisonedBatches: number;
  /** Records skipped on a replay because their window was already emitted (or they were already dead-lettered). */
  replayed: number;
}
