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

/** Largest |value| accepted: beyond it sums and squared deviations overflow to Infinity. */
export const MAX_ABS_VALUE = 1e150;
/** 9999-12-31T23:59:59.999Z, the largest timestamp ISO 8601 (and Ceilometer) can name. */
export const MAX_TIMESTAMP_MS = 253402300799999;

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

export function requireName(v: unknown, where: string): string {
  if (v === undefined || v === null) throw new RecordError('missing_field', `${where}: missing (a non-empty string is required)`);
  if (typeof v !== 'string') throw new RecordError('wrong_type', `${where}: expected a non-empty string, got ${show(v)}`);
  if (v.length === 0) throw new RecordError('missing_field', `${where}: empty (a non-empty string is required)`);
  return v;
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

export function dimValue(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new RecordError('wrong_type', `${where}: expected a string, got ${show(v)}`);
}
