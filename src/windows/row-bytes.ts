// A row's tail (`"count":…}` after the cached identity prefix) written straight into the output
// buffer as bytes: integers digit by digit, other numbers through String() (the same text as
// JSON.stringify), times and window fields from cached text. Building a tail string per row and
// handing it to Buffer.write (a rope to flatten, a native call) was most of the cost of a row.
import { STAT, type ClosedCells } from './cells.js';
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

/** `${x}` as ASCII bytes (what JSON.stringify writes for a finite number). */
function putNumber(out: Uint8Array, o: number, x: number): number {
  // Below 1e15 an integer's shortest form is its digits (no exponent, exact in a double).
  if (Number.isInteger(x) && x < 1e15 && x > -1e15) {
    if (x < 0) {
      out[o++] = 0x2d;
      x = -x;
    }
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
  return putText(out, o, String(x));
}

/** What the writer needs of the formatter: event times and window fields as text. */
export interface RowText {
  isoMs(t: number): string;
  windowText(ws: number): string;
}

/**
 * NDJSON of rows without sketches: prefix, tail, newline per row, into one buffer. whereTail is the
 * UTF-8 of `,"topic":…,"partition":…` (or empty).
 */
export function rowsBytes(text: RowText, c: ClosedCells, prefixes: readonly string[], prefixBytes: number, whereTail: Uint8Array): Buffer {
  const n = c.length;
  const perRow = FIXED_MAX + whereTail.length + (n > 0 ? text.windowText(c.starts[0]!).length : 0) + 1;
  let out = Buffer.allocUnsafe(prefixBytes + n * perRow);
  const s = c.stats;
  let windowStart = Number.NaN;
  let windowBytes: Uint8Array = new Uint8Array(0);
  let o = 0;
  let chars = 0;
  for (let i = 0; i < n; i++) chars += prefixes[i]!.length;
  const latin1 = chars === prefixBytes;
  for (let i = 0; i < n; i++) {
    if (o + perRow + 3 * prefixes[i]!.length > out.length) {
      // Only a window field longer than the first's could get here; keep going in a larger buffer.
      const bigger = Buffer.allocUnsafe(2 * out.length + perRow + 3 * prefixes[i]!.length);
      out.copy(bigger, 0, 0, o);
      out = bigger;
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
    o = putText(out, o, text.isoMs(tsMin));
    o = put(out, o, K_END);
    o = putText(out, o, text.isoMs(tsMax));
    o = put(out, o, K_DURATION);
    o = putNumber(out, o, (tsMax - tsMin) / 1000);
    out[o++] = 0x2c;
    const ws = c.starts[i]!;
    if (ws !== windowStart) {
      windowStart = ws;
      windowBytes = ascii(text.windowText(ws));
    }
    o = put(out, o, windowBytes);
    o = put(out, o, whereTail);
    out[o++] = 0x7d;
    out[o++] = 0x0a;
  }
  return out.subarray(0, o);
}
