// The normalised record every format extracts into, and the shared field checks.
// Pure: used by the worker and, for the rare re-decode of late records, by the main thread.

import type { RejectReason } from './messages.js';

/** One accepted sample. Reused between records to keep the decode loop allocation-light. */
export interface SampleRecord {
  name: string;
  value: number;
  tsMs: number;
  unit: string | null;
  /** Dimension name/value pairs, in the order found. Names are plain data: "__proto__" is just a name. */
  dims: Array<[string, string]>;
}

export class RecordError extends Error {
  constructor(readonly reason: RejectReason, readonly detail: string) {
    super(detail);
  }
}

// Node 20+ has String.prototype.isWellFormed (ES2024); the project's lib is ES2023.
declare global {
  interface String {
    isWellFormed(): boolean;
  }
}

/** Per-record limits the extractors apply (from DecoderSettings, defaults resolved). */
export interface FieldLimits {
  readonly maxDimensions: number;
  readonly maxNameBytes: number;
  readonly maxDimensionBytes: number;
  /** Event times must be below this: a later one's window would end after MAX_TIMESTAMP_MS (see eventTimeLimit). */
  readonly eventTimeLimitMs: number;
  readonly windowMs: number;
  /**
   * Whether to look for U+0000 and unpaired surrogates. JSON text can only produce them from \u
   * escapes (raw control characters are malformed JSON, and valid UTF-8 cannot encode a surrogate),
   * so the decoder turns this on only for messages that contain "\u" (see Decoder).
   */
  readonly text: boolean;
}

/** Largest |value| accepted: beyond it sums and squared deviations overflow to Infinity. */
export const MAX_ABS_VALUE = 1e150;
/** 9999-12-31T23:59:59.999Z, the largest timestamp ISO 8601 (and Ceilometer) can name. */
export const MAX_TIMESTAMP_MS = 253402300799999;

/**
 * Event times must be below this so that their window ends (period_end = start + windowMs) at
 * MAX_TIMESTAMP_MS at the latest: 10000-01-01T00:00:00.000Z is written "+010000-01-01T00:00:00.000Z"
 * by Date.prototype.toISOString, which PostgreSQL refuses ("time zone displacement out of range").
 */
export function eventTimeLimit(windowMs: number): number {
  return Math.floor(MAX_TIMESTAMP_MS / windowMs) * windowMs;
}

export function show(v: unknown): string {
  let s: string;
  try {
    s = v === undefined ? 'nothing' : JSON.stringify(v) ?? String(v);
  } catch {
    // Only nesting deep enough to overflow the stack gets here; String() would overflow again.
    s = Array.isArray(v) ? 'a deeply nested array' : 'a deeply nested object';
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** JSON text of a parsed value, or undefined when it is nested too deep to serialise. */
export function safeStringify(v: unknown): string | undefined {
  try {
    return JSON.stringify(v) ?? 'null';
  } catch {
    return undefined;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Own-property read: a path segment "constructor" must never reach Object.prototype. */
export function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** A meter name: a non-empty string the sinks can store, at most MAX_NAME_BYTES of UTF-8. */
export function requireName(v: unknown, where: string, lim: FieldLimits): string {
  if (v === undefined || v === null) throw new RecordError('missing_field', `${where}: missing (a non-empty string is required)`);
  if (typeof v !== 'string') throw new RecordError('wrong_type', `${where}: expected a non-empty string, got ${show(v)}`);
  if (v.length === 0) throw new RecordError('missing_field', `${where}: empty (a non-empty string is required)`);
  if (!lim.text && v.length * 3 <= lim.maxNameBytes) return v;
  return checkText(v, where, '', lim.maxNameBytes, 'MAX_NAME_BYTES', lim.text);
}

/** A unit: absent (null) or a string the sinks can store, at most MAX_NAME_BYTES. */
export function optionalUnit(v: unknown, where: string, lim: FieldLimits): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') throw new RecordError('wrong_type', `${where}: expected a string, got ${show(v)}`);
  if (!lim.text && v.length * 3 <= lim.maxNameBytes) return v;
  return checkText(v, where, '', lim.maxNameBytes, 'MAX_NAME_BYTES', lim.text);
}

/** A dimension name found in the record (any string, "" included), at most MAX_DIMENSION_BYTES. */
export function dimName(k: string, where: string, lim: FieldLimits): string {
  if (!lim.text && k.length * 3 <= lim.maxDimensionBytes) return k;
  return checkText(k, where, 'dimension name ', lim.maxDimensionBytes, 'MAX_DIMENSION_BYTES', lim.text);
}

/**
 * The text checks every stored string passes: no U+0000 (PostgreSQL text and jsonb cannot hold it),
 * no unpaired surrogate (UTF-8 cannot encode it: it would be stored as U+FFFD, so two names differing
 * only there would collide), at most maxBytes of UTF-8. Runs per field per record: the length is decided
 * for short strings by their length alone, the text (only when `text`) by native scans.
 */
export function checkText(s: string, where: string, what: string, maxBytes: number, option: string, text = true): string {
  if (text && (s.indexOf('\u0000') !== -1 || !s.isWellFormed())) throw invalidText(s, where, what);
  // A UTF-16 code unit is at most 3 bytes of UTF-8 (a surrogate pair, 2 units, is 4).
  if (s.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(s, 'utf8');
    if (bytes > maxBytes) {
      const subject = what === '' ? '' : `${what}${show(s)} is `;
      throw new RecordError('too_long', `${where}: ${subject}${bytes} bytes (UTF-8), more than ${option}=${maxBytes}`);
    }
  }
  return s;
}

function invalidText(s: string, where: string, what: string): RecordError {
  const subject = what === '' ? '' : `${what}${show(s)} `;
  const nul = s.indexOf('\u0000');
  let lone = -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else {
        lone = i;
        break;
      }
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      lone = i;
      break;
    }
  }
  const allowed = 'text without U+0000 and unpaired surrogates is allowed';
  if (nul !== -1 && (lone === -1 || nul < lone)) {
    return new RecordError('invalid_text', `${where}: ${subject}contains U+0000 (NUL) at character index ${nul}; ${allowed}`);
  }
  const hex = s.charCodeAt(lone).toString(16).toUpperCase();
  return new RecordError(
    'invalid_text',
    `${where}: ${subject}contains an unpaired surrogate U+${hex} at character index ${lone} (not Unicode text; stored it would become U+FFFD); ${allowed}`,
  );
}

export function requireValue(v: unknown, where: string): number {
  if (v === undefined || v === null) throw new RecordError('missing_field', `${where}: missing (a finite number is required)`);
  if (typeof v !== 'number') throw new RecordError('wrong_type', `${where}: expected a finite number, got ${show(v)}`);
  if (!Number.isFinite(v)) throw new RecordError('non_finite_value', `${where}: ${v} is not a finite number`);
  if (Math.abs(v) > MAX_ABS_VALUE) {
    throw new RecordError('non_finite_value', `${where}: ${v} is out of range (|value| <= ${MAX_ABS_VALUE} allowed)`);
  }
  return v;
}

/** A timestamp in ms since the epoch (fractional allowed). */
export function requireEpochMs(v: unknown, where: string): number {
  if (v === undefined || v === null) throw new RecordError('missing_field', `${where}: missing (ms since the epoch or ISO 8601 required)`);
  if (typeof v === 'number') return checkRange(v, where, v);
  if (typeof v === 'string') return parseIsoTimestamp(v, where);
  throw new RecordError('wrong_type', `${where}: expected ms since the epoch or an ISO 8601 string, got ${show(v)}`);
}

// Date.parse alone is too lenient ("1", "March 7") and reads an ISO string without offset as local time;
// Ceilometer writes UTC without an offset, so a missing offset means UTC here.
const ISO_RE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

export function parseIsoTimestamp(v: unknown, where: string): number {
  if (v === undefined || v === null) throw new RecordError('missing_field', `${where}: missing (an ISO 8601 timestamp is required)`);
  if (typeof v !== 'string') throw new RecordError('wrong_type', `${where}: expected an ISO 8601 string, got ${show(v)}`);
  const m = ISO_RE.exec(v);
  if (m === null) throw new RecordError('bad_timestamp', `${where}: ${show(v)} is not an ISO 8601 timestamp`);
  let s = v.replace(' ', 'T');
  // JavaScript dates keep milliseconds; trim finer fractions so Date.parse accepts them.
  s = s.replace(/(\.\d{3})\d+/, '$1');
  if (m[1] === undefined) s += s.includes('T') ? 'Z' : 'T00:00:00Z';
  const ms = Date.parse(s);
  // Date.parse rolls 2021-02-29 over into March; an impossible date is a bad timestamp.
  const y = Number(v.slice(0, 4));
  const mo = Number(v.slice(5, 7));
  const d = Number(v.slice(8, 10));
  if (mo < 1 || mo > 12 || d < 1 || d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) {
    throw new RecordError('bad_timestamp', `${where}: ${show(v)} is not a calendar date`);
  }
  return checkRange(ms, where, v);
}

function checkRange(ms: number, where: string, original: unknown): number {
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_TIMESTAMP_MS) {
    throw new RecordError('bad_timestamp', `${where}: ${show(original)} is outside 1970-01-01..9999-12-31`);
  }
  return ms;
}

/** A dimension value: a string (numbers and booleans become strings), at most MAX_DIMENSION_BYTES. */
export function dimValue(v: unknown, where: string, lim: FieldLimits): string {
  if (typeof v === 'string') {
    // The common case, decided without a call: no \u escapes in the message and short enough.
    if (!lim.text && v.length * 3 <= lim.maxDimensionBytes) return v;
    return checkText(v, where, '', lim.maxDimensionBytes, 'MAX_DIMENSION_BYTES', lim.text);
  }
  if (typeof v === 'number' || typeof v === 'boolean') return checkText(String(v), where, '', lim.maxDimensionBytes, 'MAX_DIMENSION_BYTES', false);
  throw new RecordError('wrong_type', `${where}: expected a string, got ${show(v)}`);
}

/** An event time whose window ends where every sink can store it (see eventTimeLimit). */
export function requireWindowEnd(ms: number, where: string, limits: FieldLimits): number {
  if (ms >= limits.eventTimeLimitMs) {
    const w = limits.windowMs;
    const start = Math.floor(ms / w) * w;
    throw new RecordError(
      'bad_timestamp',
      `${where}: ${new Date(ms).toISOString()} is in the window from ${new Date(start).toISOString()} (WINDOW_SECONDS=${w / 1000}), ` +
        `which ends after ${new Date(MAX_TIMESTAMP_MS).toISOString()}, the latest time every sink stores; event times before ` +
        `${new Date(limits.eventTimeLimitMs).toISOString()} are allowed`,
    );
  }
  return ms;
}
