// A series is a meter name + unit + the group-by dimensions. Its identity is one string, so that a
// batch result carries one string per series and the main thread can key a Map with it. It is built
// once per series (the interner finds a record's series without it), so it may cost a little.
// Two encodings, told apart by the first character:
// - JSON form, `{"name":…,"unit":…,"groupby":{…},`: exactly the head of the series' statistics row
//   (JSON.stringify of name, unit and the groupby object, up to its last member), so a row is the key
//   plus a tail and the row formatter keeps no second copy of each series' identity. Used when the
//   text is ASCII (its UTF-8 size is its length) and no dimension name is an array index (which
//   JSON.stringify would move to the front of the groupby object).
// - length-prefixed, for every other series: every part is length-prefixed ("4:host"), null is "-".
//   Unambiguous for any character without escaping anything.
export interface SeriesIdentity {
  readonly name: string;
  readonly unit: string | null;
  /** Group-by dimensions, sorted by name (or in GROUP_BY order); null = dimension absent. */
  readonly groupby: ReadonlyArray<readonly [string, string | null]>;
}

function part(s: string | null): string {
  return s === null ? '-' : `${s.length}:${s}`;
}

// Reused between calls: the sort order of the current record's dimensions.
let order = new Int32Array(64);

/** The series' group-by pairs in key order: sorted by name (first of a repeated name kept) or in GROUP_BY order. */
function groupPairs(dims: ReadonlyArray<readonly [string, string]>, groupBy: readonly string[] | null): Array<string | null> {
  const out: Array<string | null> = [];
  const n = dims.length;
  if (groupBy === null) {
    if (order.length < n) order = new Int32Array(n * 2);
    // Insertion sort of indices: dimension lists are short and usually nearly sorted.
    for (let i = 0; i < n; i++) {
      const k = dims[i]![0];
      let j = i - 1;
      while (j >= 0 && dims[order[j]!]![0] > k) {
        order[j + 1] = order[j]!;
        j--;
      }
      order[j + 1] = i;
    }
    let prev: string | undefined;
    for (let i = 0; i < n; i++) {
      const d = dims[order[i]!]!;
      // A repeated name (possible in mapped JSON) keeps its first value.
      if (d[0] === prev) continue;
      prev = d[0];
      out.push(d[0], d[1]);
    }
  } else {
    for (const g of groupBy) {
      let v: string | null = null;
      for (let i = 0; i < n; i++) {
        if (dims[i]![0] === g) {
          v = dims[i]![1];
          break;
        }
      }
      out.push(g, v);
    }
  }
  return out;
}

const JSON_KEY_HEAD = '{"name":';
/** A canonical array index ("0" … "4294967294"): JSON.stringify writes such members first. */
const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,9})$/;
const ASCII = /^[\x00-\x7f]*$/;

function jsonValue(s: string | null): string {
  return s === null ? 'null' : JSON.stringify(s);
}

export function seriesKey(
  name: string,
  unit: string | null,
  dims: ReadonlyArray<readonly [string, string]>,
  groupBy: readonly string[] | null,
): string {
  const pairs = groupPairs(dims, groupBy);
  // Array join builds a flat string; += would leave a rope that the main thread then keeps for the
  // life of the series at several times the size.
  const json = [JSON_KEY_HEAD, JSON.stringify(name), ',"unit":', jsonValue(unit), ',"groupby":{'];
  let jsonForm = true;
  for (let i = 0; i < pairs.length; i += 2) {
    const k = pairs[i]!;
    if (ARRAY_INDEX.test(k) && Number(k) < 4294967295) {
      jsonForm = false;
      break;
    }
    json.push(i === 0 ? '' : ',', JSON.stringify(k), ':', jsonValue(pairs[i + 1]!));
  }
  if (jsonForm) {
    json.push('},');
    const key = json.join('');
    if (ASCII.test(key)) return key;
  }
  const parts = [part(name), part(unit)];
  for (const p of pairs) parts.push(part(p));
  return parts.join('');
}

/** True for a key in JSON form: the key is its row's head, byte for byte (ASCII). */
export function isJsonKey(key: string): boolean {
  return key.charCodeAt(0) === 0x7b;
}

/**
 * Bytes of the identity written as JSON, `[name, unit, [[dimension, value], ...]]` in UTF-8 with
 * JSON's escapes: what MAX_SERIES_KEY_BYTES limits, because the sinks store the identity as JSON
 * (PostgreSQL's groupby_key next to the name, the Kafka row key).
 */
export function identityJsonBytes(key: string): number {
  // `{"name":N,"unit":U,"groupby":{"k":V,…},` against `[N,U,[["k",V],…]]`: 24 characters more of
  // frame, 2 fewer per pair; the strings are the same JSON, and the key is ASCII.
  if (isJsonKey(key)) return key.length - 24 + 2 * (parseSeriesKey(key).groupby.length);
  // Walk the length prefixes: the strings' UTF-8 bytes are the key's minus the prefixes' (digits, ':', '-').
  let prefixChars = 0;
  let strings = 0;
  let nulls = 0;
  let i = 0;
  while (i < key.length) {
    if (key.charCodeAt(i) === 0x2d) {
      nulls++;
      prefixChars++;
      i++;
      continue;
    }
    const colon = key.indexOf(':', i);
    const len = Number(key.slice(i, colon));
    prefixChars += colon + 1 - i;
    strings++;
    i = colon + 1 + len;
  }
  const parts = strings + nulls;
  const pairs = Math.max(0, (parts - 2) / 2);
  // [ name , unit , [ [k,v] , ... ] ]
  const structure = 6 + 3 * pairs + Math.max(0, pairs - 1) + 2 * strings + 4 * nulls;
  const text = ESCAPED.test(key) ? escapedUtf8Bytes(key) : Buffer.byteLength(key, 'utf8');
  return text - prefixChars + structure;
}

/** identityJsonBytes(key) when that is more than maxBytes, else -1. Keys of up to maxBytes / 6 characters are decided by length alone. */
export function identityOverLimit(key: string, maxBytes: number): number {
  // JSON form: a pair is at least 6 characters (`"":"",`), so its identity is under 1.5 x its length.
  if (isJsonKey(key)) {
    if (key.length * 1.5 <= maxBytes) return -1;
    const bytes = identityJsonBytes(key);
    return bytes > maxBytes ? bytes : -1;
  }
  // A code unit is at most 6 bytes of JSON (a control character as \u001f); the prefix characters
  // ("12:", at least 2 per string, "-" per null) outweigh the quotes, commas and brackets.
  if (key.length * 6 + 4 <= maxBytes) return -1;
  const bytes = identityJsonBytes(key);
  return bytes > maxBytes ? bytes : -1;
}

// Characters JSON.stringify writes as escapes: '"', '\\' and the C0 controls.
const ESCAPED = /["\\\u0000-\u001f]/;

/** UTF-8 bytes of s as JSON string content (escapes included), prefix characters counted as 1 each. */
function escapedUtf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d) n += 2;
      else n += c < 0x20 ? 6 : 1;
    } else if (c < 0x800) {
      n += 2;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // Half of a pair (4 bytes); unpaired surrogates never get this far (invalid_text).
      n += 2;
    } else {
      n += 3;
    }
  }
  return n;
}

function notAKey(key: string): Error {
  return new Error(`not a series key: ${JSON.stringify(key.slice(0, 80))}`);
}

/**
 * The JSON form, closed and parsed. No dimension name is an array index, so the groupby object's
 * members come back in key order (sorted, or GROUP_BY's).
 */
function parseJsonKey(key: string): SeriesIdentity {
  let o: { name?: unknown; unit?: unknown; groupby?: unknown };
  try {
    o = JSON.parse(`${key.slice(0, -1)}}`) as typeof o;
  } catch {
    throw notAKey(key);
  }
  const g = o.groupby;
  if (typeof o.name !== 'string' || (o.unit !== null && typeof o.unit !== 'string') || typeof g !== 'object' || g === null) throw notAKey(key);
  const groupby = Object.entries(g as Record<string, unknown>).map(([k, v]): [string, string | null] => {
    if (v !== null && typeof v !== 'string') throw notAKey(key);
    return [k, v];
  });
  return { name: o.name, unit: o.unit, groupby };
}

export function parseSeriesKey(key: string): SeriesIdentity {
  if (isJsonKey(key)) return parseJsonKey(key);
  const parts: Array<string | null> = [];
  let i = 0;
  while (i < key.length) {
    if (key[i] === '-') {
      parts.push(null);
      i++;
      continue;
    }
    const colon = key.indexOf(':', i);
    const len = Number(key.slice(i, colon));
    if (colon === -1 || !Number.isInteger(len)) throw new Error(`not a series key: ${JSON.stringify(key.slice(0, 80))}`);
    parts.push(key.slice(colon + 1, colon + 1 + len));
    i = colon + 1 + len;
  }
  const groupby: Array<[string, string | null]> = [];
  for (let j = 2; j + 1 < parts.length; j += 2) groupby.push([parts[j] as string, parts[j + 1] ?? null]);
  return { name: parts[0] as string, unit: parts[1] ?? null, groupby };
}

/** Ceilometer's groupby object. Null prototype: a dimension called "__proto__" is data, not a setter. */
export function groupbyObject(id: SeriesIdentity): Record<string, string | null> {
  const o = Object.create(null) as Record<string, string | null>;
  for (const [k, v] of id.groupby) o[k] = v;
  return o;
}
