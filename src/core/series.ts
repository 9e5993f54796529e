// A series is a meter name + unit + the group-by dimensions. Its identity is one string, so that a
// batch result carries one string per series and the main thread can key a Map with it.
// Encoding: every part is length-prefixed ("4:host"), null is "-". Unambiguous for any character in
// names and values without escaping anything, which matters: this runs once per record.

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

export function seriesKey(
  name: string,
  unit: string | null,
  dims: ReadonlyArray<readonly [string, string]>,
  groupBy: readonly string[] | null,
): string {
  // Array join builds a flat string; += would leave a rope that the main thread then keeps for the
  // life of the series at several times the size.
  const parts = [part(name), part(unit)];
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
      parts.push(part(d[0]), part(d[1]));
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
      parts.push(part(g), part(v));
    }
  }
  return parts.join('');
}

export function parseSeriesKey(key: string): SeriesIdentity {
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
