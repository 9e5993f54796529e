// Decode a packed batch and pre-aggregate it into (series, window) partials.
// Pure and synchronous: runs in a worker, or on the main thread when WORKER_THREADS=0.

import { extractorFor, type Extractor } from './formats/index.js';
import { ElementRejects, parseMessage } from './formats/parse.js';
import { CELL, DECODER_DEFAULTS, validateDecoderSettings, type DecodeResult, type DecoderSettings, type Reject, type WireResult } from './messages.js';
import { RecordError, eventTimeLimit, isPlainObject, safeStringify, show, type FieldLimits, type SampleRecord } from './record.js';
import { SeriesInterner, type SeriesLeaf } from './intern.js';
import { FastPath, SCAN } from './scan/index.js';
import { bucketCode, logGammaOf } from './sketch.js';
import { clearMomentsAt } from './stats.js';
import { windowStart } from './window.js';

export { MAX_ELEMENT_DEAD_LETTERS, parseMessage, type ParsedMessage } from './formats/parse.js';

/**
 * Estimated bytes of interned series a decoder keeps before it starts a new dictionary: about 200,000
 * seed-000 Monasca series (twice the default MAX_SERIES), a quarter of the default WORKER_MAX_MEMORY_MB.
 */
export const DECODER_DICTIONARY_BYTES = 128 * 1024 * 1024;

/**
 * Estimated bytes of message signatures the fast path keeps (scan/signatures.ts): about 165,000
 * seed-000 Monasca series (405 bytes each), so the default MAX_SERIES of them fits and the cache does
 * not start over (and re-learn) in a loop; half the dictionary's bound, as a signature is about half
 * a dictionary entry.
 */
export const DECODER_SIGNATURE_BYTES = 64 * 1024 * 1024;

export interface DecoderOptions {
  /** Series the dictionary holds before it starts over (default 1e6). */
  readonly maxDictionary?: number;
  /** Estimated bytes of the dictionary before it starts over (default DECODER_DICTIONARY_BYTES). */
  readonly maxDictionaryBytes?: number;
  /**
   * The byte-level fast path for plain messages of known series (src/core/scan; default on). Off,
   * every message goes through JSON.parse: the reference the fast path is tested against.
   */
  readonly scan?: boolean;
}

type OnRecord = (rec: SampleRecord, msg: number, elem: number, raw: unknown, leaf: SeriesLeaf) => void;

export class Decoder {
  readonly #settings: DecoderSettings;
  readonly #extract: Extractor;
  /** The same extractor with the text checks (NUL, unpaired surrogates) on: for messages with \u escapes. */
  readonly #extractText: Extractor;
  readonly #rec: SampleRecord = { name: '', value: 0, tsMs: 0, unit: null, dims: [] };
  /** The series dictionary shared with the main thread (decodeBatchCompact): ids below #sent are known there. */
  #dict = newDictId();
  #sent = 0;
  /** Dictionaries started over from since the last result sent (WireResult.retired). */
  #retired: number[] = [];
  readonly #interner: SeriesInterner;
  #batchNo = 0;
  readonly #maxKnown: number;
  readonly #maxKnownBytes: number;
  readonly #maxSeriesKeyBytes: number;
  readonly #fast: FastPath | null;
  /** What a fast-path record hands to #decode's aggregation: only value and tsMs are set. */
  readonly #fastRec: SampleRecord = { name: '', value: 0, tsMs: 0, unit: null, dims: [] };
  #scanned = 0;

  constructor(settings: DecoderSettings, opts: DecoderOptions = {}) {
    validateDecoderSettings(settings);
    this.#maxKnown = opts.maxDictionary ?? 1_000_000;
    this.#maxKnownBytes = opts.maxDictionaryBytes ?? settings.dictionaryBytes ?? DECODER_DICTIONARY_BYTES;
    this.#settings = settings;
    this.#maxSeriesKeyBytes = settings.maxSeriesKeyBytes ?? DECODER_DEFAULTS.maxSeriesKeyBytes;
    this.#interner = new SeriesInterner(settings.groupBy, this.#maxSeriesKeyBytes);
    const limits: FieldLimits = {
      maxDimensions: settings.maxDimensions,
      maxNameBytes: settings.maxNameBytes ?? DECODER_DEFAULTS.maxNameBytes,
      maxDimensionBytes: settings.maxDimensionBytes ?? DECODER_DEFAULTS.maxDimensionBytes,
      windowMs: settings.windowMs,
      eventTimeLimitMs: eventTimeLimit(settings.windowMs),
      text: false,
    };
    this.#extract = extractorFor(settings.format, limits);
    this.#extractText = extractorFor(settings.format, { ...limits, text: true });
    this.#fast =
      opts.scan === false
        ? null
        : FastPath.for(settings.format, {
            maxMessageBytes: settings.maxMessageBytes,
            eventTimeLimitMs: limits.eventTimeLimitMs,
            maxFutureMs: settings.maxFutureMs,
            // Half the dictionary's bound, as a signature is about half a dictionary entry.
            maxSignatureBytes: Math.min(DECODER_SIGNATURE_BYTES, Math.floor(this.#maxKnownBytes / 2)),
          });
  }

  get settings(): DecoderSettings {
    return this.#settings;
  }

  /** Records the fast path accepted so far (the rest went through JSON.parse). */
  get scanned(): number {
    return this.#scanned;
  }

  /**
   * Extract one record; returns it (the shared, reused object) or throws RecordError.
   * The returned object is only valid until the next call. `escapes` = false skips the text checks:
   * only for a value parsed from JSON text without "\u" (it cannot hold NUL or unpaired surrogates).
   */
  extract(value: unknown, nowMs: number, escapes = true): SampleRecord {
    if (!isPlainObject(value)) throw new RecordError('not_an_object', `record: expected a JSON object, got ${show(value)}`);
    const rec = this.#rec;
    (escapes ? this.#extractText : this.#extract)(value, rec);
    const maxFuture = this.#settings.maxFutureMs;
    if (maxFuture > 0 && rec.tsMs > nowMs + maxFuture) {
      throw new RecordError(
        'future_timestamp',
        `timestamp: ${new Date(rec.tsMs).toISOString()} is more than MAX_FUTURE_SECONDS=${maxFuture / 1000} ahead of now`,
      );
    }
    return rec;
  }

  /** The record's series, or RecordError too_long when its key is over MAX_SERIES_KEY_BYTES. */
  #leaf(rec: SampleRecord): SeriesLeaf {
    const leaf = this.#interner.leaf(rec);
    if (leaf.overLimitBytes !== -1) {
      throw new RecordError(
        'too_long',
        `series key: ${leaf.overLimitBytes} bytes as JSON (name, unit and group-by dimension names and values), more than MAX_SERIES_KEY_BYTES=${this.#maxSeriesKeyBytes}`,
      );
    }
    return leaf;
  }

  /** Keeps the interner bounded: a full one starts over, with a new dictionary for the main thread. */
  #beginBatch(): void {
    if (this.#interner.size >= this.#maxKnown || this.#interner.bytes >= this.#maxKnownBytes) this.#restart();
  }

  #restart(): void {
    this.#interner.clear();
    // Signatures point at the interner's leaves.
    this.#fast?.clear();
    // Batches that throw one after another retire one dictionary each: keep the newest few.
    if (this.#retired.push(this.#dict) > 64) this.#retired.shift();
    this.#dict = newDictId();
    this.#sent = 0;
  }

  /**
   * Visit every record of every message. `onRecord` gets accepted records, `onReject` the rest.
   * elem is -1 for a message that is a single record (or is rejected whole).
   */
  forEachRecord(
    buf: Buffer,
    offsets: Uint32Array,
    nowMs: number,
    onRecord: (rec: SampleRecord, msg: number, elem: number, raw: unknown, key: string) => void,
    onReject: (r: Reject) => void,
    ends?: Uint32Array,
  ): number {
    this.#beginBatch();
    return this.#each(buf, offsets, ends, nowMs, (rec, msg, elem, raw, leaf) => onRecord(rec, msg, elem, raw, leaf.key), onReject, null);
  }

  /** With `fast`, a message it accepts reaches onRecord with only rec.value and rec.tsMs set, and raw undefined. */
  #each(buf: Buffer, offsets: Uint32Array, ends: Uint32Array | undefined, nowMs: number, onRecord: OnRecord, onReject: (r: Reject) => void, fast: FastPath | null): number {
    let records = 0;
    const n = offsets.length - 1;
    for (let i = 0; i < n; i++) {
      const start = offsets[i]!;
      const end = ends === undefined ? offsets[i + 1]! : ends[i]!;
      let learn = false;
      if (fast !== null) {
        const got = fast.scan(buf, start, end, nowMs);
        if (got === SCAN.HIT) {
          records++;
          this.#scanned++;
          const rec = this.#fastRec;
          rec.value = fast.value;
          rec.tsMs = fast.tsMs;
          onRecord(rec, i, -1, undefined, fast.leaf!);
          continue;
        }
        learn = got === SCAN.MISS;
      }
      const parsed = parseMessage(buf, start, end, this.#settings.maxMessageBytes);
      if (!parsed.ok) {
        records++;
        onReject({ msg: i, elem: -1, reason: parsed.reason, detail: parsed.detail });
        continue;
      }
      const v = parsed.value;
      if (Array.isArray(v)) {
        const capped = new ElementRejects(i, onReject);
        for (let j = 0; j < v.length; j++) {
          records++;
          this.#visit(v[j], i, j, nowMs, parsed.escapes, onRecord, capped.add);
        }
        capped.finish();
      } else {
        records++;
        const leaf = this.#visit(v, i, -1, nowMs, parsed.escapes, onRecord, onReject);
        if (learn && leaf !== null) fast!.learn(buf, leaf);
      }
    }
    return records;
  }

  #visit(
    v: unknown,
    msg: number,
    elem: number,
    nowMs: number,
    escapes: boolean,
    onRecord: OnRecord,
    onReject: (r: Reject) => void,
  ): SeriesLeaf | null {
    let rec: SampleRecord;
    let leaf: SeriesLeaf;
    try {
      rec = this.extract(v, nowMs, escapes);
      leaf = this.#leaf(rec);
    } catch (err) {
      if (!(err instanceof RecordError)) throw err;
      const where = elem >= 0 ? `[${elem}].` : '';
      const r: Reject = { msg, elem, reason: err.reason, detail: where + err.detail };
      // An element nested too deep to re-serialise is dead-lettered as its whole message instead.
      const raw = elem >= 0 ? safeStringify(v) : undefined;
      onReject(raw === undefined ? r : { ...r, raw });
      return null;
    }
    onRecord(rec, msg, elem, v, leaf);
    return leaf;
  }

  /**
   * decodeBatch for the wire: series keys become dictionary ids, and only keys the main thread has not
   * seen from this decoder travel. A batch that throws starts a new dictionary, so the two sides never
   * get out of step over ids handed out in a batch whose result was never sent.
   */
  decodeBatchCompact(buffer: ArrayBuffer | SharedArrayBuffer, offsets: Uint32Array, nowMs: number, ends?: Uint32Array): WireResult {
    this.#beginBatch();
    let decoded: { result: DecodeResult; leaves: SeriesLeaf[] };
    try {
      decoded = this.#decode(Buffer.from(buffer), offsets, ends, nowMs);
    } catch (err) {
      this.#restart();
      throw err;
    }
    const { result, leaves } = decoded;
    const { series: _series, ...rest } = result;
    const seriesIds = new Int32Array(leaves.length);
    for (let i = 0; i < leaves.length; i++) seriesIds[i] = leaves[i]!.id;
    const newBase = this.#sent;
    const newKeys = this.#interner.keys(newBase);
    this.#sent = this.#interner.nextId;
    const retired = this.#retired.length === 0 ? NONE_RETIRED : this.#retired;
    if (retired.length > 0) this.#retired = [];
    return { ...rest, dict: this.#dict, seriesIds, newKeys, newBase, retired };
  }

  /** Decode and pre-aggregate a packed batch. */
  decodeBatch(buffer: ArrayBuffer | SharedArrayBuffer, offsets: Uint32Array, nowMs: number, ends?: Uint32Array): DecodeResult {
    return this.decodeBytes(Buffer.from(buffer), offsets, nowMs, ends);
  }

  /** decodeBatch of bytes already in a Buffer (in-thread: the batch's own, read in place). */
  decodeBytes(buf: Buffer, offsets: Uint32Array, nowMs: number, ends?: Uint32Array): DecodeResult {
    this.#beginBatch();
    return this.#decode(buf, offsets, ends, nowMs).result;
  }

  #decode(buf: Buffer, offsets: Uint32Array, ends: Uint32Array | undefined, nowMs: number): { result: DecodeResult; leaves: SeriesLeaf[] } {
    const t0 = performance.now();
    const windowMs = this.#settings.windowMs;
    const stamp = ++this.#batchNo;
    const leaves: SeriesLeaf[] = [];
    const series: string[] = [];
    // A series rarely spans two windows in a batch: its leaf holds the cell of its current window, and
    // only a series that moves to another window puts the cell it leaves here (most batches never build a key).
    const otherCells = new Map<string, number>();
    let cells = new Float64Array(CELL.STRIDE * 64);
    const messageCells = new Int32Array(offsets.length - 1).fill(-1);
    let nCells = 0;
    let ok = 0;
    let maxEventMs = -Infinity;
    const rejects: Reject[] = [];
    // Per cell: bucket code -> count (only with PERCENTILES).
    const logGamma = this.#settings.sketchAccuracy > 0 ? logGammaOf(this.#settings.sketchAccuracy) : 0;
    const sketches: Array<Map<number, number>> | null = logGamma > 0 ? [] : null;

    const records = this.#each(
      buf,
      offsets,
      ends,
      nowMs,
      (rec, msg, _elem, _raw, leaf) => {
        if (leaf.stamp !== stamp) {
          leaf.stamp = stamp;
          leaf.local = series.length;
          leaf.lastWindow = NaN;
          leaf.lastCell = -1;
          series.push(leaf.key);
          leaves.push(leaf);
        }
        const s = leaf.local;
        const ws = windowStart(rec.tsMs, windowMs);
        let c: number;
        if (leaf.lastWindow === ws) {
          c = leaf.lastCell;
        } else {
          let found: number | undefined;
          if (leaf.lastCell !== -1) {
            otherCells.set(`${s}:${leaf.lastWindow}`, leaf.lastCell);
            found = otherCells.get(`${s}:${ws}`);
          }
          if (found !== undefined) {
            c = found;
          } else {
            if ((nCells + 1) * CELL.STRIDE > cells.length) {
              const grown = new Float64Array(cells.length * 2);
              grown.set(cells);
              cells = grown;
            }
            c = nCells++;
            const o = c * CELL.STRIDE;
            cells[o + CELL.SERIES] = s;
            cells[o + CELL.WINDOW_START] = ws;
            clearMomentsAt(cells, o + CELL.COUNT);
            sketches?.push(new Map());
          }
          leaf.lastWindow = ws;
          leaf.lastCell = c;
        }
        const had = messageCells[msg]!;
        if (had !== c) messageCells[msg] = had === -1 ? c : -2;
        // Welford update, inlined on the typed array (this is the hot loop).
        const o = c * CELL.STRIDE;
        const x = rec.value;
        const n = cells[o + CELL.COUNT]! + 1;
        cells[o + CELL.COUNT] = n;
        const mean = cells[o + CELL.MEAN]!;
        const delta = x - mean;
        const newMean = mean + delta / n;
        cells[o + CELL.MEAN] = newMean;
        cells[o + CELL.M2] = cells[o + CELL.M2]! + delta * (x - newMean);
        if (x < cells[o + CELL.MIN]!) cells[o + CELL.MIN] = x;
        if (x > cells[o + CELL.MAX]!) cells[o + CELL.MAX] = x;
        cells[o + CELL.SUM] = cells[o + CELL.SUM]! + x;
        const ts = rec.tsMs;
        if (ts < cells[o + CELL.TS_MIN]!) cells[o + CELL.TS_MIN] = ts;
        if (ts > cells[o + CELL.TS_MAX]!) cells[o + CELL.TS_MAX] = ts;
        if (ts > maxEventMs) maxEventMs = ts;
        if (sketches !== null) {
          const sk = sketches[c]!;
          const code = bucketCode(x, logGamma);
          sk.set(code, (sk.get(code) ?? 0) + 1);
        }
        ok++;
      },
      (r) => rejects.push(r),
      this.#fast,
    );

    const packed = sketches === null ? {} : packSketches(sketches);
    const result: DecodeResult = {
      kind: 'partials',
      records,
      ok,
      series,
      cells: cells.slice(0, nCells * CELL.STRIDE),
      messageCells,
      rejects,
      maxEventMs,
      ...packed,
      decodeSeconds: (performance.now() - t0) / 1000,
    };
    return { result, leaves };
  }
}

function packSketches(sketches: ReadonlyArray<Map<number, number>>): { sketchOffsets: Uint32Array; sketchPairs: Float64Array } {
  const sketchOffsets = new Uint32Array(sketches.length + 1);
  let n = 0;
  for (let i = 0; i < sketches.length; i++) {
    sketchOffsets[i] = n;
    n += sketches[i]!.size;
  }
  sketchOffsets[sketches.length] = n;
  const sketchPairs = new Float64Array(2 * n);
  let j = 0;
  for (const m of sketches) {
    for (const [code, count] of m) {
      sketchPairs[j++] = code;
      sketchPairs[j++] = count;
    }
  }
  return { sketchOffsets, sketchPairs };
}

const NONE_RETIRED: readonly number[] = Object.freeze([]);

/**
 * The dictionary bound for decoders under a worker heap limit: a quarter of it (today's 128 MiB at
 * the default 512 MiB), so a small WORKER_MAX_MEMORY_MB does not let a dictionary outgrow the worker,
 * and the main thread's copy of each worker's dictionary (at most half of this: a key's bytes and its
 * slot against the interner's estimate of key, parts and leaf) scales with it.
 */
export function dictionaryBytesFor(workerMaxMemoryMb: number): number {
  return Math.min(DECODER_DICTIONARY_BYTES, Math.floor((workerMaxMemoryMb * 1024 * 1024) / 4));
}

function newDictId(): number {
  return Math.floor(Math.random() * 2 ** 48);
}
