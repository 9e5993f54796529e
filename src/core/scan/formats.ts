// What the fast path reads of each format: the value and event time (converted here, checked by the
// caller), and the spans of the fields that decide the series (their text is the signature, see
// signatures.ts). The rest of the message is scanned only to know it is valid JSON.
// Outside the subset (-1): the message is not one object; an envelope field is repeated (JSON.parse
// keeps the last, the slow path decides); metric or meta is not an object; the value or the
// timestamp is not of the common type (numbers; Ceilometer's ISO text in its plain form).
import { CLOSED, JsonScanner, bytes, keyIs } from './json.js';

/** What a format reader fills in. */
export interface ScanOut {
  /** Start and end of each signature field's JSON text; start -1 = absent. */
  readonly spans: Int32Array;
  value: number;
  tsMs: number;
  /**
   * The text the format's long signature field had in the last accepted message (hint[hintAt..
   * hintAt+hintBytes), hintBytes < 4 = none): streams repeat it (one agent's metrics share their
   * dimensions), and a match is taken without scanning it. hinted: it matched this time.
   */
  readonly hint: DataView;
  readonly hintAt: number;
  readonly hintBytes: number;
  hinted: boolean;
}

/** Reads the message's one object from p; returns the position after it, or -1. */
export type FormatReader = (s: JsonScanner, p: number, out: ScanOut) => number;

const METRIC = bytes('metric');
const META = bytes('meta');
const NAME = bytes('name');
const VALUE = bytes('value');
const TIMESTAMP = bytes('timestamp');
const DIMENSIONS = bytes('dimensions');
const TENANT = bytes('tenantId');
const REGION = bytes('region');

/** Monasca signature fields: metric.name, metric.dimensions, meta.tenantId, meta.region. */
export const MONASCA_FIELDS = 4;
/** The long one, which the hint may spare scanning. */
export const MONASCA_HINT_FIELD = 1;

export const readMonasca: FormatReader = (s, p, out) => {
  const buf = s.buf;
  let k = s.open(p, 1);
  let seen = 0;
  while (k !== CLOSED) {
    let v = s.member(k);
    if (v < 0) return -1;
    const ke = s.keyEnd;
    if (keyIs(buf, k, ke, METRIC)) {
      if ((seen & 1) !== 0) return -1;
      seen |= 1;
      v = readMetric(s, v, out);
    } else if (keyIs(buf, k, ke, META)) {
      if ((seen & 2) !== 0) return -1;
      seen |= 2;
      v = readMeta(s, v, out.spans);
    } else {
      v = s.value(v, 1);
    }
    if (v < 0) return -1;
    k = s.next(v);
  }
  if ((seen & 1) === 0) return -1;
  return s.closedAt;
};

function readMetric(s: JsonScanner, p: number, out: ScanOut): number {
  const buf = s.buf;
  const spans = out.spans;
  let k = s.open(p, 2);
  let seen = 0;
  while (k !== CLOSED) {
    const v = s.member(k);
    if (v < 0) return -1;
    const ke = s.keyEnd;
    let e: number;
    let bit = 0;
    if (keyIs(buf, k, ke, NAME)) {
      bit = 1;
      e = s.value(v, 2);
      spans[0] = v;
      spans[1] = e;
    } else if (keyIs(buf, k, ke, VALUE)) {
      bit = 2;
      e = isNumberStart(buf[v]) ? s.number(v) : -1;
      out.value = s.num;
    } else if (keyIs(buf, k, ke, TIMESTAMP)) {
      bit = 4;
      e = isNumberStart(buf[v]) ? s.number(v) : -1;
      out.tsMs = s.num;
    } else if (keyIs(buf, k, ke, DIMENSIONS)) {
      bit = 8;
      e = out.hintBytes >= 4 ? s.known(v, out.hint, out.hintAt, out.hintBytes) : -1;
      out.hinted = e >= 0;
      if (e < 0) e = s.value(v, 2);
      spans[2] = v;
      spans[3] = e;
    } else {
      e = s.value(v, 2);
    }
    if (e < 0 || (seen & bit) !== 0) return -1;
    seen |= bit;
    k = s.next(e);
  }
  // value and timestamp must be there (numbers); a missing name or dimensions is a signature of its own.
  if ((seen & 6) !== 6) return -1;
  return s.closedAt;
}

function readMeta(s: JsonScanner, p: number, spans: Int32Array): number {
  const buf = s.buf;
  let k = s.open(p, 2);
  let seen = 0;
  while (k !== CLOSED) {
    const v = s.member(k);
    if (v < 0) return -1;
    const ke = s.keyEnd;
    const e = s.value(v, 2);
    if (e < 0) return -1;
    if (keyIs(buf, k, ke, TENANT)) {
      if ((seen & 1) !== 0) return -1;
      seen |= 1;
      spans[4] = v;
      spans[5] = e;
    } else if (keyIs(buf, k, ke, REGION)) {
      if ((seen & 2) !== 0) return -1;
      seen |= 2;
      spans[6] = v;
      spans[7] = e;
    }
    k = s.next(e);
  }
  return s.closedAt;
}

const COUNTER_NAME = bytes('counter_name');
const COUNTER_VOLUME = bytes('counter_volume');
const COUNTER_UNIT = bytes('counter_unit');
const COUNTER_TYPE = bytes('counter_type');
const RESOURCE_ID = bytes('resource_id');
const PROJECT_ID = bytes('project_id');
const USER_ID = bytes('user_id');
const SOURCE = bytes('source');

/**
 * Ceilometer signature fields: counter_name, counter_unit, resource_id, project_id, user_id, source,
 * counter_type (all short: no hint). The _tenant_id the slow path adds is project_id's text again.
 */
export const CEILOMETER_FIELDS = 7;

/** What ceilometerKey returns besides a signature field's index (0..6). */
const KEY_VOLUME = -2;
const KEY_TIMESTAMP = -3;
const KEY_OTHER = -1;

/**
 * The Ceilometer key buf[k..ke) (quotes included) as a signature field's index, KEY_VOLUME,
 * KEY_TIMESTAMP or KEY_OTHER. The keys a sample has differ in length or, for the three counter_*
 * keys of 12 letters, in their ninth letter: one candidate is compared, not every key in turn (a key
 * such as counter_type was compared with five others, and keys were a tenth of a message's scan).
 */
function ceilometerKey(buf: Uint8Array, k: number, ke: number): number {
  switch (ke - k - 2) {
    case 12: {
      const c = buf[k + 9];
      if (c === 0x6e) return keyIs(buf, k, ke, COUNTER_NAME) ? 0 : KEY_OTHER;
      if (c === 0x75) return keyIs(buf, k, ke, COUNTER_UNIT) ? 1 : KEY_OTHER;
      if (c === 0x74) return keyIs(buf, k, ke, COUNTER_TYPE) ? 6 : KEY_OTHER;
      return KEY_OTHER;
    }
    case 14:
      return keyIs(buf, k, ke, COUNTER_VOLUME) ? KEY_VOLUME : KEY_OTHER;
    case 9:
      return keyIs(buf, k, ke, TIMESTAMP) ? KEY_TIMESTAMP : KEY_OTHER;
    case 11:
      return keyIs(buf, k, ke, RESOURCE_ID) ? 2 : KEY_OTHER;
    case 10:
      return keyIs(buf, k, ke, PROJECT_ID) ? 3 : KEY_OTHER;
    case 7:
      return keyIs(buf, k, ke, USER_ID) ? 4 : KEY_OTHER;
    case 6:
      return keyIs(buf, k, ke, SOURCE) ? 5 : KEY_OTHER;
    default:
      return KEY_OTHER;
  }
}

export const readCeilometer: FormatReader = (s, p, out) => {
  const buf = s.buf;
  const spans = out.spans;
  let k = s.open(p, 1);
  let seen = 0;
  while (k !== CLOSED) {
    const v = s.member(k);
    if (v < 0) return -1;
    const field = ceilometerKey(buf, k, s.keyEnd);
    let e: number;
    let bit = 0;
    if (field === KEY_VOLUME) {
      bit = 1;
      e = isNumberStart(buf[v]) ? s.number(v) : -1;
      out.value = s.num;
    } else if (field === KEY_TIMESTAMP) {
      bit = 2;
      e = buf[v] === 0x22 ? s.string(v) : -1;
      if (e >= 0) {
        out.tsMs = isoMs(buf, v + 1, e - 1);
        if (Number.isNaN(out.tsMs)) return -1;
      }
    } else {
      e = s.value(v, 1);
      if (field >= 0) {
        bit = 4 << field;
        spans[2 * field] = v;
        spans[2 * field + 1] = e;
      }
    }
    if (e < 0 || (seen & bit) !== 0) return -1;
    seen |= bit;
    k = s.next(e);
  }
  if ((seen & 3) !== 3) return -1;
  return s.closedAt;
};

/** Whether a JSON number starts with this byte. */
export function isNumberStart(c: number | undefined): boolean {
  return c !== undefined && (c === 0x2d || (c >= 0x30 && c <= 0x39));
}

/**
 * The ms of an ISO 8601 text in the form Ceilometer writes, "YYYY-MM-DDTHH:MM:SS" with an optional
 * fraction of 1 to 9 digits and an optional "Z" (no offset is UTC), as parseIsoTimestamp reads it;
 * NaN for any other form (the slow path reads those, or explains why not): also for years before
 * 1970 and impossible dates and times.
 */
export function isoMs(buf: Uint8Array, s: number, e: number): number {
  if (e - s < 19) return NaN;
  if (buf[s + 4] !== 0x2d || buf[s + 7] !== 0x2d || buf[s + 10] !== 0x54 || buf[s + 13] !== 0x3a || buf[s + 16] !== 0x3a) return NaN;
  const y = digits(buf, s, 4);
  const mo = digits(buf, s + 5, 2);
  const d = digits(buf, s + 8, 2);
  const h = digits(buf, s + 11, 2);
  const mi = digits(buf, s + 14, 2);
  const sec = digits(buf, s + 17, 2);
  // NaN (a non-digit) fails every comparison.
  if (!(y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(y, mo) && h <= 23 && mi <= 59 && sec <= 59)) return NaN;
  let p = s + 19;
  let ms = 0;
  if (p < e && buf[p] === 0x2e) {
    p++;
    const first = p;
    while (p < e && buf[p]! >= 0x30 && buf[p]! <= 0x39) {
      // Milliseconds: the first three digits (".5" is 500); finer ones are dropped, as parseIsoTimestamp does.
      const n = p - first;
      if (n < 3) ms += (buf[p]! - 0x30) * (n === 0 ? 100 : n === 1 ? 10 : 1);
      p++;
    }
    if (p === first || p - first > 9) return NaN;
  }
  if (p < e && buf[p] === 0x5a) p++;
  if (p !== e) return NaN;
  const day = (y * 100 + mo) * 100 + d;
  if (day !== lastDay) {
    lastDayMs = Date.UTC(y, mo - 1, d);
    lastDay = day;
  }
  return lastDayMs + ((h * 60 + mi) * 60 + sec) * 1000 + ms;
}

// The day of the last event time read (YYYYMMDD) and its start: samples of a stream share a day, and
// Date.UTC per record was a fifth of reading a timestamp.
let lastDay = -1;
let lastDayMs = 0;

function digits(buf: Uint8Array, s: number, n: number): number {
  let v = 0;
  for (let i = s; i < s + n; i++) {
    const c = buf[i]! - 0x30;
    if (!(c >= 0 && c <= 9)) return NaN;
    v = v * 10 + c;
  }
  return v;
}

function daysIn(y: number, mo: number): number {
  if (mo === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return mo === 4 || mo === 6 || mo === 9 || mo === 11 ? 30 : 31;
}
