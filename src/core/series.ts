// A series is a meter name + unit + the group-by dimensions. Its identity is one string, so that a
// batch result carries one string per series and the main thread can key a Map with it.
// JSON encoding keeps any character in names and values unambiguous.

export interface SeriesIdentity {
  readonly name: string;
  readonly unit: string | null;
  /** Group-by dimensions, sorted by name (or in GROUP_BY order); null = dimension absent. */
  readonly groupby: ReadonlyArray<readonly [string, string | null]>;
}

export function seriesKey(
  name: string,
  unit: string | null,
  dims: ReadonlyArray<readonly [string, string]>,
  groupBy: readonly string[] | null,
): string {
  const parts: Array<string | null> = [name, unit];
  if (groupBy === null) {
    const sorted = dims.length > 1 ? [...dims].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) : dims;
    let prev: string | undefined;
    for (const [k, v] of sorted) {
      // A repeated name (possible in mapped JSON) keeps its first value.
      if (k === prev) continue;
      prev = k;
      parts.push(k, v);
    }
  } else {
    for (const g of groupBy) {
      let v: string | null = null;
      for (const [k, dv] of dims) {
        if (k === g) {
          v = dv;
          break;
        }
      }
      parts.push(g, v);
    }
  }
  return JSON.stringify(parts);
}

export function parseSeriesKey(key: string): SeriesIdentity {
  const parts = JSON.parse(key) as Array<string | null>;
  const groupby: Array<[string, string | null]> = [];
  for (let i = 2; i + 1 < parts.length; i += 2) groupby.push([parts[i] as string, parts[i + 1] ?? null]);
  return { name: parts[0] as string, unit: parts[1] ?? null, groupby };
}

/** Ceilometer's groupby object. Null prototype: a dimension called "__proto__" is data, not a setter. */
export function groupbyObject(id: SeriesIdentity): Record<string, string | null> {
  const o = Object.create(null) as Record<string, string | null>;
  for (const [k, v] of id.groupby) o[k] = v;
  return o;
}
