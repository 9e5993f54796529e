// Every message that crosses the main <-> worker boundary lives in this file.
// Results are compact (one string per series, one Float64Array of cells), never parsed records:
// a structured clone of parsed objects costs about twice the parse itself.

import type { KeyArenaRef } from './key-arena.js';
import type { FormatSpec } from './formats/spec.js';
import { MOMENT } from './stats.js';

/** Static decode settings, sent once per worker as workerData. */
export interface DecoderSettings {
  readonly format: FormatSpec;
  /** Dimension names to group by; null = all dimensions of the record. */
  readonly groupBy: readonly string[] | null;
  readonly windowMs: number;
  readonly maxMessageBytes: number;
  readonly maxDimensions: number;
  /** Records whose event time is further than this ahead of the wall clock are rejected; 0 = no check. */
  readonly maxFutureMs: number;
  /** Relative accuracy of the per-window quantile sketch; 0 = no sketches (PERCENTILES unset). */
  readonly sketchAccuracy: number;
  /** UTF-8 bytes allowed in a meter name or a unit (MAX_NAME_BYTES); default DECODER_DEFAULTS. */
  readonly maxNameBytes?: number;
  /** UTF-8 bytes allowed in a dimension name or value (MAX_DIMENSION_BYTES); default DECODER_DEFAULTS. */
  readonly maxDimensionBytes?: number;
  /** Bytes allowed in a series identity written as JSON (MAX_SERIES_KEY_BYTES); default DECODER_DEFAULTS. */
  readonly maxSeriesKeyBytes?: number;
  /**
   * Estimated bytes of interned series a decoder keeps before it starts a new dictionary (default
   * DECODER_DICTIONARY_BYTES in decode.ts); the main thread holds a copy of each worker's current one.
   */
  readonly dictionaryBytes?: number;
}

/**
 * Defaults of the optional DecoderSettings; the options table (src/config/options.ts) takes its
 * defaults from here. They keep every row storable by every sink: a series identity of at most 2048
 * bytes as JSON keeps PostgreSQL's primary-key entry (name, groupby_key, topic of up to 249 bytes,
 * partition, period_start) under its 2704-byte btree limit, and a row far under Kafka's 1 MiB default
 * message size; 1024 bytes hold any 255-character name or dimension (Monasca's API limit, and
 * Ceilometer's resource ids), whatever the script.
 */
export const DECODER_DEFAULTS = {
  maxNameBytes: 1024,
  maxDimensionBytes: 1024,
  maxSeriesKeyBytes: 2048,
} as const;

/** Checks settings built in code (the configuration has checked the user's values already). */
export function validateDecoderSettings(s: DecoderSettings): void {
  const positive = (name: string, v: number | undefined): void => {
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 1)) throw new RangeError(`${name} (${v}) must be an integer >= 1`);
  };
  positive('windowMs', s.windowMs);
  positive('maxNameBytes', s.maxNameBytes);
  positive('maxDimensionBytes', s.maxDimensionBytes);
  positive('maxSeriesKeyBytes', s.maxSeriesKeyBytes);
  positive('dictionaryBytes', s.dictionaryBytes);
  if (!(Number.isSafeInteger(s.maxDimensions) && s.maxDimensions >= 0)) {
    throw new RangeError(`maxDimensions (${s.maxDimensions}) must be an integer >= 0`);
  }
}

/** A batch of raw messages packed into one transferable buffer. */
export interface DecodeTask {
  readonly kind: 'decode';
  /**
   * All message bytes, back to back (from offset 0): moved (transferred) to the worker, or shared
   * memory the worker reads in place; never copied on the way.
   */
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  /** offsets[i]..offsets[i+1] is message i; length = messages + 1. Transferred too. */
  readonly offsets: Uint32Array;
  /** Where given, message i ends at ends[i] (Batch.ends: the rest up to offsets[i+1] separates it from the next). Transferred too. */
  readonly ends?: Uint32Array;
}

/** Where a cell's moments start: they follow its series and window start. */
const CELL_MOMENTS = 2;

/**
 * Cell layout in DecodeResult.cells: one cell = one (series, window) partial. Its moments are a
 * MOMENT layout from CELL.COUNT on, by construction, so the decoder and the window store handle them
 * with core/stats.ts's functions where they lie.
 */
export const CELL = {
  SERIES: 0,
  WINDOW_START: 1,
  COUNT: CELL_MOMENTS + MOMENT.COUNT,
  MEAN: CELL_MOMENTS + MOMENT.MEAN,
  M2: CELL_MOMENTS + MOMENT.M2,
  MIN: CELL_MOMENTS + MOMENT.MIN,
  MAX: CELL_MOMENTS + MOMENT.MAX,
  SUM: CELL_MOMENTS + MOMENT.SUM,
  TS_MIN: CELL_MOMENTS + MOMENT.TS_MIN,
  TS_MAX: CELL_MOMENTS + MOMENT.TS_MAX,
  STRIDE: CELL_MOMENTS + MOMENT.STRIDE,
} as const;

export type RejectReason =
  | 'malformed_json'
  | 'invalid_utf8'
  | 'empty_message'
  | 'too_large'
  | 'not_an_object'
  | 'missing_field'
  | 'wrong_type'
  | 'non_finite_value'
  | 'bad_timestamp'
  /** NUL or an unpaired surrogate in a name, unit, dimension name or value: no sink can store it. */
  | 'invalid_text'
  /** A name, unit, dimension or series key longer than its byte limit (MAX_*_BYTES). */
  | 'too_long'
  | 'future_timestamp'
  | 'too_many_dimensions'
  | 'late'
  | 'series_limit'
  | 'poisoned_batch'
  /** A statistics row the sink refused for a reason of the row itself; its records are counted here. */
  | 'sink_rejected';

export const REJECT_REASONS: readonly RejectReason[] = [
  'malformed_json', 'invalid_utf8', 'empty_message', 'too_large', 'not_an_object', 'missing_field',
  'wrong_type', 'non_finite_value', 'bad_timestamp', 'invalid_text', 'too_long', 'future_timestamp', 'too_many_dimensions',
  'late', 'series_limit', 'poisoned_batch', 'sink_rejected',
];

export interface Reject {
  /** Index of the message in its batch. */
  readonly msg: number;
  /** Index of the record inside a JSON-array message; -1 when the whole message is meant. */
  readonly elem: number;
  readonly reason: RejectReason;
  /** What was wrong, where: e.g. "metric.value: expected a finite number, got \"abc\"". */
  readonly detail: string;
  /** The rejected array element re-serialised (only for elem >= 0; the main thread keeps whole messages). */
  readonly raw?: string;
  /**
   * A summary of the elements of one message rejected beyond MAX_ELEMENT_DEAD_LETTERS: how many per
   * reason (reason above is the most frequent). One dead letter stands for all of them.
   */
  readonly counts?: Partial<Record<RejectReason, number>>;
}

export interface DecodeResult {
  readonly kind: 'partials';
  /** Records seen (array elements count one each). */
  readonly records: number;
  readonly ok: number;
  /** Series identities, indexed by CELL.SERIES; see core/series.ts for the encoding. */
  readonly series: string[];
  /** CELL.STRIDE numbers per (series, window) partial. */
  readonly cells: Float64Array;
  readonly rejects: Reject[];
  /**
   * With sketches on: cell i's buckets are the (code, count) pairs sketchPairs[2*j], sketchPairs[2*j+1]
   * for j in [sketchOffsets[i], sketchOffsets[i+1]) (codes from core/sketch.ts bucketCode).
   */
  readonly sketchOffsets?: Uint32Array;
  readonly sketchPairs?: Float64Array;
  /**
   * Per message, the cell its accepted records went to: -1 none (rejected), -2 several (an array
   * spanning series or windows). A late or over-limit cell's records are found again by re-reading
   * the messages of that cell (and the mixed ones), not the whole batch. Absent: the whole batch.
   */
  readonly messageCells?: Int32Array;
  /** Largest event time (ms) among accepted records; -Infinity when none. */
  readonly maxEventMs: number;
  /** Time spent parsing + aggregating inside the decoder, in seconds (measured where it ran). */
  readonly decodeSeconds: number;
}

/**
 * What a worker actually sends: DecodeResult with the series keys replaced by ids of the worker's
 * dictionary. A key (about 300 characters for a Monasca series) crosses the thread boundary once per
 * worker, not once per batch; cloning those strings was the worker's largest cost.
 */
export interface WireResult extends Omit<DecodeResult, 'series'> {
  /** The sending decoder's dictionary; a replaced worker starts a new one. */
  readonly dict: number;
  /** Local series index (CELL.SERIES) -> dictionary id. */
  readonly seriesIds: Int32Array;
  /** Keys this batch adds to the dictionary, with ids newBase, newBase + 1, ... */
  readonly newKeys: string[];
  readonly newBase: number;
  /**
   * Dictionaries this decoder started over from since its last result: no later result names them,
   * so the main thread drops its copies (a full dictionary's keys, kept for nothing, were most of what
   * endless new series grew the main thread by).
   */
  readonly retired: readonly number[];
}

/** What a worker needs to format rows as the main thread's RowFormatter would (windows/row.ts). */
export interface RowSettings {
  readonly windowMs: number;
  /** Series whose row prefix a formatter keeps (MAX_SERIES). */
  readonly maxEntries: number;
}

/**
 * Closed cells (windows/cells.ts ClosedCells, without sketches) to format as NDJSON rows in a worker:
 * the statistics sink's encoding is per-row work the main thread need not do. The columns are moved.
 */
export interface RowsTask {
  readonly kind: 'rows';
  readonly settings: RowSettings;
  /** The rows' series keys: as strings, or as indexes into the shared key arena (./key-arena.ts). */
  readonly keys: readonly string[] | { readonly arena: KeyArenaRef; readonly ids: Int32Array };
  readonly starts: Float64Array;
  readonly stats: Float64Array;
  /** The lane's topic and partition, on every row of a partitioned source. */
  readonly where: { readonly topic: string; readonly partition: number } | undefined;
  /** Also each row's identity key (the Kafka sink's message keys). */
  readonly identityKeys: boolean;
  /** LATE_RECORDS=amend: each row's revision, how it closed (windows/cells.ts CLOSED_BY) and late records. */
  readonly quality?: { readonly revision: Float64Array; readonly closedBy: Uint8Array; readonly lateRecords: Float64Array };
}

/** A RowsTask's rows: NDJSON bytes with each line's end (its newline), and the identity keys if asked. */
export interface RowsWire {
  readonly kind: 'rows';
  readonly ndjson: Uint8Array;
  /** lineEnds[i]: offset of row i's newline in ndjson. */
  readonly lineEnds: Int32Array;
  /** Identity key i is keys[keyEnds[i - 1] (0 for i = 0), keyEnds[i]). */
  readonly keys: Uint8Array | null;
  readonly keyEnds: Int32Array | null;
  readonly seconds: number;
  /** The rows as PostgreSQL COPY tuples too, when the sink stores them so (LANE_STATE=worker, SINK=postgres). */
  readonly copy?: CopyTuples;
  /**
   * The rows as Kafka records instead of NDJSON and keys (LANE_STATE=worker, SINK=kafka, the output
   * topic's partitions known): then ndjson and lineEnds are empty and keys null.
   */
  readonly records?: RowRecords;
}

/** Ints a section of RowRecords takes: its partition, first message, messages, first byte, end byte, and its bytes' CRC32C. */
export const SECTION_STRIDE = 6;

/**
 * Rows as the Kafka sink sends them (src/sinks/kafka/row-records.ts): one record per row (key the
 * row's identity, value its JSON line, timestamp delta 0, no headers), grouped by the partition the
 * Java-compatible partitioner gives the key, in sections of at most `budget` bytes per partition
 * (each message's key and value plus RECORD_OVERHEAD_BYTES, as the sink cuts requests). A section's
 * records are numbered 0.. (their offset deltas): it is a record batch's body as it stands.
 */
export interface RowRecords {
  /** The output topic's partitions and the per-partition budget the sections were cut for. */
  readonly partitions: number;
  readonly budget: number;
  readonly bytes: Uint8Array;
  /** Per message (in the order of bytes): the row it is, its partition, and its key and value in bytes. */
  readonly rowIndex: Int32Array;
  readonly partition: Int32Array;
  readonly keyStart: Int32Array;
  readonly keyEnd: Int32Array;
  readonly valueStart: Int32Array;
  readonly valueEnd: Int32Array;
  /** SECTION_STRIDE ints per section, in the order of bytes. */
  readonly sections: Int32Array;
}

/**
 * Rows as binary COPY tuples (src/sinks/postgres/tuples.ts makes them where the rows are formatted),
 * with what the PostgreSQL sink would otherwise read of each row object: which rows it refuses
 * before sending, and each tuple's series as stored (its name, groupby and unit, for a series the
 * main thread has not stored yet). The series id and the window start are read from the tuple.
 */
export interface CopyTuples {
  /** The tuples back to back (no COPY header or trailer), in series id order; tuple i ends at ends[i]. */
  readonly data: Uint8Array;
  readonly ends: Int32Array;
  /** The row (line of the NDJSON) each tuple is. */
  readonly rows: Int32Array;
  /** Per tuple: utf8(name) 0x00 utf8(groupby JSON) 0x00 (0x00 | 0x01 utf8(unit)); tuple i's ends at metaEnds[i]. */
  readonly meta: Uint8Array;
  readonly metaEnds: Int32Array;
  /** Rows that are not tuples, by row index, and why the sink refuses them. */
  readonly refused: ReadonlyArray<{ readonly index: number; readonly detail: string }>;
  /** The tuples carry the quality columns (LATE_RECORDS=amend). */
  readonly quality: boolean;
  /** Some tuple has a revision above 0 (an amendment: stored already). */
  readonly amends: boolean;
}
