// The rows of a COPY as bytes, binary or text: a pure module (rows in, bytes out; no I/O, nothing
// of the main thread's), so that a worker can build a COPY as well as the main thread. Its one piece
// of state, the parsed-timestamp cache, belongs to the thread that loads it.
import type { StatsRow } from '../../windows/row.js';

/** What a row needs to be encoded: its values and its series' id (32 hex digits). */
export interface EncodeRow {
  readonly row: StatsRow;
  readonly series: { readonly id: string };
}

/** The windows table's columns, in the order the COPY data holds them. */
export const COPY_COLUMNS = 'series, period_start, duration_start, duration_end, count, sum, min, max, m2, partition, period, topic, unit, sketch, sketch_bin';
/**
 * With LATE_RECORDS=amend the rows carry quality columns (schema version 5), written after those;
 * without, the COPY data stays what it was.
 */
export const QUALITY_COLUMNS = 'revision, closed_by, late_records';

/** Whether rows carry quality columns (all of an engine's rows do, or none). */
export function hasQuality(rows: readonly EncodeRow[]): boolean {
  return rows.length > 0 && rows[0]!.row.revision !== undefined;
}

/** The columns of the COPY data encodeCopy makes of these rows. */
export function copyColumns(rows: readonly EncodeRow[]): string {
  return qualityColumns(hasQuality(rows));
}

export function qualityColumns(quality: boolean): string {
  return quality ? `${COPY_COLUMNS}, ${QUALITY_COLUMNS}` : COPY_COLUMNS;
}

/** The stored m2 (sum of squared deviations) from the row's population stddev. */
export function m2Of(r: StatsRow): number {
  return r.stddev * r.stddev * r.count;
}

export function sketchJson(r: StatsRow): string | null {
  return r.sketch === undefined ? null : JSON.stringify(r.sketch);
}

/**
 * The sketch's buckets as schema version 3 stores them beside the JSON (sketch_bin: 12 bytes a
 * bucket, int4 code 2k / 2k+1 for positive / negative bucket k, float8 count, big-endian), which
 * rolling up concatenates without parsing; null (the roll then reads the JSON) for a bucket key that
 * is not an int4 bucket number or a count that is not a finite number.
 */
export function sketchBin(r: StatsRow): Buffer | null {
  return sketchBinOf(r.sketch);
}

/** sketchBin of a sketch as a row carries it (SketchData), or of none. */
export function sketchBinOf(sk: StatsRow['sketch']): Buffer | null {
  if (sk === undefined) return null;
  const pos = Object.entries(sk.pos);
  const neg = Object.entries(sk.neg);
  const out = Buffer.allocUnsafe(12 * (pos.length + neg.length));
  let at = 0;
  for (const [entries, sign] of [[pos, 0], [neg, 1]] as const) {
    for (const [k, n] of entries) {
      const i = Number(k);
      const code = 2 * i + sign;
      if (!Number.isInteger(i) || code < -(2 ** 31) || code >= 2 ** 31 || typeof n !== 'number' || !Number.isFinite(n)) return null;
      out.writeInt32BE(code, at);
      out.writeDoubleBE(n, at + 4);
      at += 12;
    }
  }
  return out;
}

/** The rows as COPY text: one line each, columns in COPY_COLUMNS order. */
function copyData(rows: readonly EncodeRow[]): Buffer {
  let out = '';
  const quality = hasQuality(rows);
  for (const { row: r, series } of rows) {
    const sketch = sketchJson(r);
    out +=
      `${series.id}\t${copyText(r.period_start)}\t${copyText(r.duration_start)}\t${copyText(r.duration_end)}\t` +
      `${r.count}\t${r.sum}\t${r.min}\t${r.max}\t${m2Of(r)}\t${r.partition ?? -1}\t${r.period}\t${copyText(r.topic ?? '')}\t` +
      `${r.unit === null ? COPY_NULL : copyText(r.unit)}\t${sketch === null ? COPY_NULL : copyText(sketch)}\t${byteaText(sketchBin(r))}` +
      `${quality ? `\t${r.revision ?? 0}\t${r.closed_by === undefined ? COPY_NULL : r.closed_by}\t${r.late_records ?? 0}` : ''}\n`;
  }
  return Buffer.from(out, 'utf8');
}

/** A bytea in COPY text: hex format, its backslash escaped for COPY. */
function byteaText(b: Buffer | null): string {
  return b === null ? COPY_NULL : `\\\\x${b.toString('hex')}`;
}

/** How rows travel in a COPY: binary (the default: no parsing on the server) or text. */
export type CopyFormat = 'binary' | 'text';

/** Two, three or four decimal digits of `s` from `at` as a number; NaN when one is not a digit. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    v = v * 10 + d;
  }
  return v;
}

/**
 * ms since the epoch of an ISO timestamp. The engine writes every timestamp as toISOString() does
 * (YYYY-MM-DDTHH:MM:SS.sssZ), which is read here digit by digit: a row's first and last point
 * times are mostly its own, so a cache of parsed strings missed on them, and Date.parse per miss was
 * the largest cost of preparing a COPY. Anything else (another form, a day that needs the calendar
 * to check, a year below 100, which Date.UTC reads as 19xx) goes to Date.parse.
 */
export function isoMs(iso: string): number {
  if (
    iso.length === 24 && iso.charCodeAt(4) === 45 && iso.charCodeAt(7) === 45 && iso.charCodeAt(10) === 84 && iso.charCodeAt(13) === 58 &&
    iso.charCodeAt(16) === 58 && iso.charCodeAt(19) === 46 && iso.charCodeAt(23) === 90
  ) {
    const y = digits(iso, 0, 4);
    const mo = digits(iso, 5, 2);
    const d = digits(iso, 8, 2);
    const h = digits(iso, 11, 2);
    const mi = digits(iso, 14, 2);
    const sec = digits(iso, 17, 2);
    const ms = digits(iso, 20, 3);
    // NaN fails every comparison, so a non-digit falls through too.
    if (y >= 100 && mo >= 1 && mo <= 12 && d >= 1 && d <= 28 && h <= 23 && mi <= 59 && sec <= 59 && ms >= 0) return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
  }
  return Date.parse(iso);
}

/**
 * Why a row cannot go into a binary COPY as it is (binary input has no parser to refuse it later),
 * or null. Rows the server refuses for reasons of its own still fail the statement (bisection).
 */
export function binaryProblem(r: StatsRow): string | null {
  for (const [what, v] of [['period_start', r.period_start], ['duration_start', r.duration_start], ['duration_end', r.duration_end]] as const) {
    if (typeof v !== 'string' || !Number.isFinite(isoMs(v))) return `${what} ${JSON.stringify(String(v).slice(0, 40))} is not an ISO 8601 timestamp`;
  }
  if (!Number.isSafeInteger(r.count) || r.count < 0) return `count ${r.count} is not a whole number of points`;
  if (r.revision !== undefined && (!Number.isSafeInteger(r.revision) || r.revision < 0)) return `revision ${r.revision} is not a whole number`;
  if (!Number.isInteger(r.period) || r.period < 1 || r.period > 2 ** 31 - 1) return `period ${r.period} is not a whole number of seconds (1 .. 2^31-1)`;
  const p = r.partition ?? -1;
  if (!Number.isInteger(p) || p < -1 || p > 2 ** 31 - 1) return `partition ${p} is not a partition number`;
  return null;
}

/** The rows as binary COPY data, columns in COPY_COLUMNS order. Rows must pass binaryProblem(). */
function copyDataBinary(rows: readonly EncodeRow[]): Buffer {
  const w = new BinaryCopyWriter(rows.length * 200);
  const quality = hasQuality(rows);
  for (const { row: r, series } of rows) {
    w.row(quality ? 18 : 15);
    w.uuid(series.id);
    w.timestamp(isoMs(r.period_start));
    w.timestamp(isoMs(r.duration_start));
    w.timestamp(isoMs(r.duration_end));
    w.int8(r.count);
    w.float8(r.sum);
    w.float8(r.min);
    w.float8(r.max);
    w.float8(m2Of(r));
    w.int4(r.partition ?? -1);
    w.int4(r.period);
    w.text(r.topic ?? '');
    w.text(r.unit);
    w.text(sketchJson(r), true);
    w.bytes(sketchBin(r));
    if (quality) {
      w.int8(r.revision ?? 0);
      w.text(r.closed_by ?? null);
      w.int8(r.late_records ?? 0);
    }
  }
  return w.finish();
}

/** The rows as COPY data in `format`, columns in COPY_COLUMNS order. Rows must pass binaryProblem(). */
export function encodeCopy(rows: readonly EncodeRow[], format: CopyFormat): Buffer {
  return format === 'binary' ? copyDataBinary(rows) : copyData(rows);
}

// ---- COPY's text escaping and binary format.

const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES = /[\\\n\r\t]/g;
const ESCAPED: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text value as COPY's text format wants it (backslash, newline, CR and tab escaped). */
export function copyText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(ESCAPES, (c) => ESCAPED[c]!) : s;
}

export const COPY_NULL = '\\N';

// ---- COPY's binary format: no text parsing on the server (timestamps, floats, uuids arrive as bytes).

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The binary COPY header: signature, flags 0, no header extension. */
export const COPY_HEADER = Buffer.concat([SIGNATURE, Buffer.alloc(8)]);
/** The binary COPY trailer: a tuple of -1 fields. */
export const COPY_TRAILER = Buffer.from([0xff, 0xff]);
const TWO_32 = 2 ** 32;
/** 2000-01-01T00:00:00Z in ms since the Unix epoch: PostgreSQL's timestamp epoch. */
export const PG_EPOCH_MS = 946_684_800_000;

/**
 * Builds binary COPY data row by row into one buffer that grows by doubling. Integers must be exact
 * (safe integers; int4 in range): the caller checks them, this writes what it is given.
 */
export class BinaryCopyWriter {
  #buf: Buffer;
  #at = 0;

  /** `header` false: tuples only (COPY_HEADER and COPY_TRAILER go around them when they are sent). */
  constructor(sizeHint = 64 * 1024, header = true) {
    this.#buf = Buffer.allocUnsafe(Math.max(sizeHint, 64));
    if (header) {
      COPY_HEADER.copy(this.#buf, 0);
      this.#at = COPY_HEADER.length;
    }
  }

  /** Bytes written so far. */
  get length(): number {
    return this.#at;
  }

  /** What was written, without a trailer. */
  take(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#at + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, 0, 0, this.#at);
    this.#buf = next;
  }

  row(fields: number): void {
    this.#room(2);
    this.#buf.writeInt16BE(fields, this.#at);
    this.#at += 2;
  }

  uuid(hex: string): void {
    this.#room(20);
    this.#buf.writeInt32BE(16, this.#at);
    this.#buf.write(hex, this.#at + 4, 16, 'hex');
    this.#at += 20;
  }

  /** An exact integer as int8, without BigInt: high and low 32-bit halves. */
  #int64(n: number): void {
    const hi = Math.floor(n / TWO_32);
    this.#buf.writeInt32BE(hi, this.#at);
    this.#buf.writeUInt32BE(n - hi * TWO_32, this.#at + 4);
    this.#at += 8;
  }

  int8(n: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    this.#at += 4;
    this.#int64(n);
  }

  int4(n: number): void {
    this.#room(8);
    this.#buf.writeInt32BE(4, this.#at);
    this.#buf.writeInt32BE(n, this.#at + 4);
    this.#at += 8;
  }

  float8(n: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    this.#buf.writeDoubleBE(n, this.#at + 4);
    this.#at += 12;
  }

  /**
   * timestamptz: microseconds since 2000-01-01 as int8. ms * 1000 can exceed 2^53 (beyond ~2285), so
   * the product is formed on 32-bit halves to stay exact for every date a Date can hold.
   */
  timestamp(ms: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    const d = ms - PG_EPOCH_MS;
    const dHi = Math.floor(d / TWO_32);
    const lo = (d - dHi * TWO_32) * 1000; // < 2^42: exact
    const carry = Math.floor(lo / TWO_32);
    this.#buf.writeInt32BE(dHi * 1000 + carry, this.#at + 4);
    this.#buf.writeUInt32BE(lo - carry * TWO_32, this.#at + 8);
    this.#at += 12;
  }

  text(s: string | null, jsonb = false): void {
    if (s === null) {
      this.#room(4);
      this.#buf.writeInt32BE(-1, this.#at);
      this.#at += 4;
      return;
    }
    const extra = jsonb ? 1 : 0;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: reserve that, then write the length actually used.
    this.#room(5 + 3 * s.length);
    if (jsonb) this.#buf[this.#at + 4] = 1; // jsonb binary format version
    const n = this.#buf.write(s, this.#at + 4 + extra, 'utf8');
    this.#buf.writeInt32BE(n + extra, this.#at);
    this.#at += 4 + extra + n;
  }

  /** A bytea field (null: SQL NULL). */
  bytes(b: Buffer | null): void {
    if (b === null) {
      this.#room(4);
      this.#buf.writeInt32BE(-1, this.#at);
      this.#at += 4;
      return;
    }
    this.#room(4 + b.length);
    this.#buf.writeInt32BE(b.length, this.#at);
    b.copy(this.#buf, this.#at + 4);
    this.#at += 4 + b.length;
  }

  /** The data with its trailer. */
  finish(): Buffer {
    this.#room(2);
    this.#buf.writeInt16BE(-1, this.#at);
    this.#at += 2;
    return this.#buf.subarray(0, this.#at);
  }
}
