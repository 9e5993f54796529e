// A row's tail (`"count":…}` after the cached identity prefix) written straight into the output
// buffer as bytes: integers and short decimals digit by digit, other numbers through String() (the
// same text as JSON.stringify), event times from a cached minute plus digits, window fields from
// cached text. Building a tail string per row and
// handing it to Buffer.write (a rope to flatten, a native call) was most of the cost of a row.
import { CLOSED_BY, STAT, type ClosedCells, type CellQuality } from './cells.js';
import { stddevOf } from '../core/stats.js';

function ascii(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

const K_COUNT = ascii('"count":');
const K_SUM = ascii(',"sum":');
const K_MIN = ascii(',"min":');
const K_MAX = ascii(',"max":');
const K_AVG = ascii(',"avg":');
const K_STDDEV = ascii(',"stddev":');
const K_START = ascii(',"duration_start":"');
const K_END = ascii('","duration_end":"');
const K_DURATION = ascii('","duration":');
/** Longest String(number): "-1.7976931348623157e+308". */
const NUMBER_MAX = 24;
const FIXED_MAX = K_COUNT.length + K_SUM.length + K_MIN.length + K_MAX.length + K_AVG.length + K_STDDEV.length + K_START.length + K_END.length + K_DURATION.length + 7 * NUMBER_MAX + 2 * 24 + 3;

function put(out: Uint8Array, o: number, b: Uint8Array): number {
  for (let j = 0; j < b.length; j++) out[o + j] = b[j]!;
  return o + b.length;
}

function putText(out: Uint8Array, o: number, s: string): number {
  for (let j = 0; j < s.length; j++) out[o + j] = s.charCodeAt(j);
  return o + s.length;
}

/** Digits of a non-negative integer below 2^53, written right to left after counting them. */
function putDigits(out: Uint8Array, o: number, x: number): number {
  let digits = 1;
  for (let p = 10; p <= x; p *= 10) digits++;
  let e = o + digits;
  while (x >= 10) {
    const q = Math.floor(x / 10);
    out[--e] = 48 + (x - q * 10);
    x = q;
  }
  out[--e] = 48 + x;
  return o + digits;
}

/** Decimals written digit by digit: up to this many after the point, below DECIMAL_LIMIT. */
const DECIMAL_SCALE = 1e6;
const DECIMAL_LIMIT = 1e9;

/** `${x}` as ASCII bytes (what JSON.stringify writes for a finite number). */
function putNumber(out: Uint8Array, o: number, x: number): number {
  // Below 1e15 an integer's shortest form is its digits (no exponent, exact in a double).
  if (Number.isInteger(x) && x < 1e15 && x > -1e15) {
    if (x < 0) {
      out[o++] = 0x2d;
      x = -x;
    }
    return putDigits(out, o, x);
  }
  // x is the double nearest a decimal D with at most 6 places (k / 1e6 rounds back to x). Below 1e9
  // a double's spacing is under 1.2e-7, so every other decimal of at most 6 places (the only ones as
  // short as D) is nearer another double: D is String(x)'s shortest round-trip form, in fixed notation
  // (1e-6 <= |x| < 1e21). Means of integer values, durations in ms and most gauges take this path.
  const k = x * DECIMAL_SCALE;
  if (Number.isInteger(k) && x < DECIMAL_LIMIT && x > -DECIMAL_LIMIT && k / DECIMAL_SCALE === x) {
    let m = k;
    if (m < 0) {
      out[o++] = 0x2d;
      m = -m;
    }
    const whole = Math.floor(m / DECIMAL_SCALE);
    let frac = m - whole * DECIMAL_SCALE;
    o = putDigits(out, o, whole);
    out[o++] = 0x2e;
    let places = 6;
    while (places > 1 && frac % 10 === 0) {
      frac /= 10;
      places--;
    }
    const end = o + places;
    for (let e = end - 1; e >= o; e--) {
      const q = Math.floor(frac / 10);
      out[e] = 48 + (frac - q * 10);
      frac = q;
    }
    return end;
  }
  return putText(out, o, String(x));
}

const K_REVISION = ascii(',"revision":');
const K_LATE = ascii(',"late_records":');
/** `,"closed_by":"…"` for each CLOSED_BY index. */
const CLOSED_BY_BYTES = CLOSED_BY.map((c) => ascii(`,"closed_by":"${c}"`));
const QUALITY_MAX = K_REVISION.length + K_LATE.length + 2 * NUMBER_MAX + Math.max(...CLOSED_BY_BYTES.map((b) => b.length));

/** The quality columns of cell i (`,"revision":…,"closed_by":"…","late_records":…`), as qualityText writes them. */
function putQuality(out: Uint8Array, o: number, q: CellQuality, i: number): number {
  o = put(out, o, K_REVISION);
  o = putNumber(out, o, q.revision[i]!);
  o = put(out, o, CLOSED_BY_BYTES[q.closedBy[i]!]!);
  o = put(out, o, K_LATE);
  return putNumber(out, o, q.lateRecords[i]!);
}

/** The quality columns of cell i as text (the same bytes as putQuality). */
export function qualityText(q: CellQuality, i: number): string {
  return `,"revision":${q.revision[i]!},"closed_by":"${CLOSED_BY[q.closedBy[i]!]!}","late_records":${q.lateRecords[i]!}`;
}

/** Last ms of year 9999: up to here an event time's ISO form is `YYYY-MM-DDTHH:MM:SS.mmmZ` (24 characters). */
const ISO_FIXED_MAX_MS = 253402300799999;

/** An event time's minute (`2020-02-11T12:42:`) as bytes: rows of one window share one or two minutes. */
class Minute {
  ms = Number.NaN;
  bytes: Uint8Array = new Uint8Array(0);
}

/** text.isoMs(t) as bytes: the minute from the cache, seconds and milliseconds as digits. */
function putIso(out: Uint8Array, o: number, t: number, text: RowText, m: Minute): number {
  const ms = Math.floor(t);
  if (!(ms >= 0 && ms <= ISO_FIXED_MAX_MS)) return putText(out, o, text.isoMs(t));
  const within = ms % 60_000;
  const minuteMs = ms - within;
  if (minuteMs !== m.ms) {
    m.ms = minuteMs;
    m.bytes = ascii(text.isoMs(minuteMs).slice(0, 17));
  }
  o = put(out, o, m.bytes);
  const sec = Math.floor(within / 1000);
  const milli = within - sec * 1000;
  const tens = Math.floor(sec / 10);
  out[o] = 48 + tens;
  out[o + 1] = 48 + (sec - tens * 10);
  out[o + 2] = 0x2e;
  const h = Math.floor(milli / 100);
  const d = Math.floor((milli - h * 100) / 10);
  out[o + 3] = 48 + h;
  out[o + 4] = 48 + d;
  out[o + 5] = 48 + (milli - h * 100 - d * 10);
  out[o + 6] = 0x5a;
  return o + 7;
}

/** What the writer needs of the formatter: event times and window fields as text. */
export interface RowText {
  isoMs(t: number): string;
  windowText(ws: number): string;
}

/** A buffer a formatting thread keeps across batches and writes rows into (grown as needed). */
export interface ByteScratch {
  buf: Buffer;
}

/**
 * NDJSON of rows without sketches: prefix, tail, newline per row, into one buffer. whereTail is the
 * UTF-8 of `,"topic":…,"partition":…` (or empty). With `into`, the rows are written into its buffer
 * (grown there when short) and the result is a view of it, valid until the next write into it.
 */
export function rowsBytes(text: RowText, c: ClosedCells, prefixes: readonly string[], prefixBytes: number, whereTail: Uint8Array, into?: ByteScratch): Buffer {
  const n = c.length;
  const q = c.quality;
  const perRow = FIXED_MAX + whereTail.length + (n > 0 ? text.windowText(c.starts[0]!).length : 0) + 1 + (q === null ? 0 : QUALITY_MAX);
  const need = prefixBytes + n * perRow;
  if (into !== undefined && into.buf.length < need) into.buf = Buffer.allocUnsafeSlow(Math.max(need, 2 * into.buf.length));
  let out = into === undefined ? Buffer.allocUnsafe(need) : into.buf;
  const s = c.stats;
  let windowStart = Number.NaN;
  let windowBytes: Uint8Array = new Uint8Array(0);
  let o = 0;
  let chars = 0;
  for (let i = 0; i < n; i++) chars += prefixes[i]!.length;
  const latin1 = chars === prefixBytes;
  const minuteMin = new Minute();
  const minuteMax = new Minute();
  for (let i = 0; i < n; i++) {
    if (o + perRow + 3 * prefixes[i]!.length > out.length) {
      // Only a window field longer than the first's could get here; keep going in a larger buffer.
      const bigger = Buffer.allocUnsafeSlow(2 * out.length + perRow + 3 * prefixes[i]!.length);
      out.copy(bigger, 0, 0, o);
      out = bigger;
      if (into !== undefined) into.buf = bigger;
    }
    // All prefixes ASCII (their UTF-8 size is their length): a plain copy, no UTF-8 encoding.
    o += latin1 ? out.write(prefixes[i]!, o, 'latin1') : out.write(prefixes[i]!, o);
    const k = i * STAT.STRIDE;
    const count = s[k + STAT.COUNT]!;
    const tsMin = s[k + STAT.TS_MIN]!;
    const tsMax = s[k + STAT.TS_MAX]!;
    o = put(out, o, K_COUNT);
    o = putNumber(out, o, count);
    o = put(out, o, K_SUM);
    o = putNumber(out, o, s[k + STAT.SUM]!);
    o = put(out, o, K_MIN);
    o = putNumber(out, o, s[k + STAT.MIN]!);
    o = put(out, o, K_MAX);
    o = putNumber(out, o, s[k + STAT.MAX]!);
    o = put(out, o, K_AVG);
    o = putNumber(out, o, s[k + STAT.MEAN]!);
    o = put(out, o, K_STDDEV);
    o = putNumber(out, o, stddevOf(count, s[k + STAT.M2]!));
    o = put(out, o, K_START);
    o = putIso(out, o, tsMin, text, minuteMin);
    o = put(out, o, K_END);
    o = putIso(out, o, tsMax, text, minuteMax);
    o = put(out, o, K_DURATION);
    o = putNumber(out, o, (tsMax - tsMin) / 1000);
    out[o++] = 0x2c;
    const ws = c.starts[i]!;
    if (ws !== windowStart) {
      windowStart = ws;
      windowBytes = ascii(text.windowText(ws));
    }
    out.set(windowBytes, o);
    o += windowBytes.length;
    o = put(out, o, whereTail);
    if (q !== null) o = putQuality(out, o, q, i);
    out[o++] = 0x7d;
    out[o++] = 0x0a;
  }
  return out.subarray(0, o);
}
