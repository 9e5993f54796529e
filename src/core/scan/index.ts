// The decoder's fast path: most messages of a stream are one plain JSON object of a known series.
// For those, toString + isUtf8 + JSON.parse + extraction + interning were most of a worker's time;
// here one pass over the bytes validates the message, converts its value and event time, and finds
// its series by the text of the fields that decide it (signatures.ts). Whatever it is not sure of
// (escapes, other shapes, a failing check, a series not seen yet) it leaves to the slow path, which
// writes the exact error or learns the new signature: results and rejects are the slow path's.
import { isUtf8 } from 'node:buffer';
import type { FormatSpec } from '../formats/spec.js';
import type { SeriesLeaf } from '../intern.js';
import { MAX_ABS_VALUE } from '../record.js';
import { CEILOMETER_FIELDS, MONASCA_FIELDS, MONASCA_HINT_FIELD, readCeilometer, readMonasca, type FormatReader, type ScanOut } from './formats.js';
import { JsonScanner } from './json.js';
import { mappedReader } from './mapped.js';
import { SignatureCache } from './signatures.js';

/** Outcome of FastPath.scan. */
export const SCAN = {
  /** Not in the plain subset, or a check failed: the slow path decides. */
  DEFER: 0,
  /** Accepted: value, tsMs and leaf are set. */
  HIT: 1,
  /** Plain and passing, but its signature is unknown: the slow path decides, then learn() it if accepted. */
  MISS: 2,
} as const;

/**
 * Every WINDOW plain messages the share of hits is looked at: under 1 in SPARSE_BELOW, after at least
 * SPARSE_AFTER misses since the last better window, only every SPARSE_EVERY-th message is scanned
 * until a window does better. A stream of ever new series (hostile input, or a very large first
 * round) otherwise pays scanning and learning on top of the slow path for every message (+35-40 %
 * for an all-new Monasca stream); a first round of up to SPARSE_AFTER series is learnt whole, and a
 * sparse scan still learns, so a stream whose series do come back gets enough known to leave it.
 */
const WINDOW = 1024;
const SPARSE_BELOW = 8;
const SPARSE_AFTER = 16_384;
const SPARSE_EVERY = 8;

export interface FastPathLimits {
  readonly maxMessageBytes: number;
  /** Event times must be below this (eventTimeLimit of the window). */
  readonly eventTimeLimitMs: number;
  /** 0 = no check. */
  readonly maxFutureMs: number;
  /** Bytes of signatures kept (see SignatureCache). */
  readonly maxSignatureBytes: number;
}

export class FastPath implements ScanOut {
  readonly spans: Int32Array;
  value = 0;
  tsMs = 0;
  leaf: SeriesLeaf | null = null;
  hint: DataView = new DataView(new ArrayBuffer(0));
  hintAt = 0;
  hintBytes = -1;
  hinted = false;
  #hintGeneration = -1;
  readonly #hintField: number;
  readonly #read: FormatReader;
  readonly #lim: FastPathLimits;
  readonly #scanner = new JsonScanner();
  readonly #sigs: SignatureCache;
  #plain = 0;
  #hits = 0;
  #misses = 0;
  #sparse = false;
  #skipped = 0;

  /** The fast path for a format, or null where the signature cannot decide the series. */
  static for(format: FormatSpec, lim: FastPathLimits): FastPath | null {
    switch (format.kind) {
      case 'json': {
        const r = mappedReader(format.mapping);
        return r === null ? null : new FastPath(r.read, r.fields, -1, lim);
      }
      case 'monasca':
        return new FastPath(readMonasca, MONASCA_FIELDS, MONASCA_HINT_FIELD, lim);
      case 'ceilometer':
        // Kept metadata keys decide the series too, and the signature does not read resource_metadata.
        return (format.metadata ?? []).length > 0 ? null : new FastPath(readCeilometer, CEILOMETER_FIELDS, -1, lim);
    }
  }

  private constructor(read: FormatReader, fields: number, hintField: number, lim: FastPathLimits) {
    this.#read = read;
    this.#hintField = hintField;
    this.#lim = lim;
    this.spans = new Int32Array(2 * fields);
    this.#sigs = new SignatureCache(lim.maxSignatureBytes);
  }

  get signatures(): SignatureCache {
    return this.#sigs;
  }

  scan(buf: Uint8Array, start: number, end: number, nowMs: number): number {
    const lim = this.#lim;
    if (end === start || end - start > lim.maxMessageBytes) return SCAN.DEFER;
    if (this.#sparse && ++this.#skipped % SPARSE_EVERY !== 0) return SCAN.DEFER;
    const s = this.#scanner;
    s.reset(buf, end);
    this.spans.fill(-1);
    this.hinted = false;
    // A hint from before the cache last started over may point at overwritten bytes.
    if (this.#hintGeneration !== this.#sigs.generation) this.hintBytes = -1;
    const p = this.#read(s, s.ws(start), this);
    if (p < 0 || s.ws(p) !== end) return SCAN.DEFER;
    if (s.high && !isUtf8(buf.subarray(start, end))) return SCAN.DEFER;
    // The extractors' checks of value and event time (NaN and infinities fail them too).
    if (!(Math.abs(this.value) <= MAX_ABS_VALUE)) return SCAN.DEFER;
    const ts = this.tsMs;
    if (!(ts >= 0 && ts < lim.eventTimeLimitMs)) return SCAN.DEFER;
    if (lim.maxFutureMs > 0 && ts > nowMs + lim.maxFutureMs) return SCAN.DEFER;
    const leaf = this.#sigs.find(buf, this.spans);
    if (leaf === undefined) this.#misses++;
    else this.#hits++;
    if (++this.#plain === WINDOW) {
      const poor = this.#hits * SPARSE_BELOW < WINDOW;
      if (!poor) this.#misses = 0;
      this.#sparse = poor && this.#misses >= SPARSE_AFTER;
      this.#plain = 0;
      this.#hits = 0;
    }
    if (leaf === undefined) return SCAN.MISS;
    this.leaf = leaf;
    if (!this.hinted && this.#hintField >= 0) {
      // The stored copy of this message's long field (not the message's bytes: the batch is reused).
      // Chunks are never rewritten, so it stays valid; the generation check drops it with the cache.
      this.hintAt = this.#sigs.fieldAt(this.#hintField);
      this.hintBytes = this.#sigs.fieldBytes;
      this.hint = this.#sigs.foundView;
      this.#hintGeneration = this.#sigs.generation;
    }
    return SCAN.HIT;
  }

  /** After a MISS the slow path accepted with this leaf: the next message of these fields is a HIT. */
  learn(buf: Uint8Array, leaf: SeriesLeaf): void {
    this.#sigs.learn(buf, this.spans, leaf);
  }

  clear(): void {
    this.#sigs.clear();
  }
}
