// Series identity as stored (a 16-byte id) and the checks that keep a row PostgreSQL would refuse out
// of the bulk statement, so that the slow path (bisection) is only for what no check foresaw.
import { createHash } from 'node:crypto';

/** Canonical JSON of the sorted groupby pairs: the groupby part of a series' identity. */
export function groupbyKey(g: Record<string, string | null>): string {
  return JSON.stringify(Object.keys(g).sort().map((k) => [k, g[k]]));
}

/**
 * The series' identity as the engine keys it (name, unit, groupby) in 16 bytes, as 32 hex digits (uuid
 * input): md5(utf8(name) 0x00 utf8(groupby_key)) for a series without a unit (the id versions 2 and 3
 * gave every series, so those rows keep theirs), md5(utf8(name) 0x00 utf8(groupby_key) 0x00 utf8(unit))
 * for one with a unit ("" included). streamstats_series_id() computes the same in SQL. The NUL
 * separators are unambiguous because no part may hold U+0000 (the groupby key is JSON: it escapes
 * U+0000); the UTF-8 encoding maps a lone surrogate to U+FFFD exactly as the driver does when it
 * sends the text, so the id is that of what PostgreSQL stores.
 */
export function seriesId(name: string, key: string, unit: string | null = null): string {
  const h = createHash('md5').update(name, 'utf8').update(SEPARATOR).update(key, 'utf8');
  if (unit !== null) h.update(SEPARATOR).update(unit, 'utf8');
  return h.digest('hex');
}

const SEPARATOR = Buffer.from([0]);

export interface SeriesRef {
  readonly id: string;
  readonly name: string;
  readonly unit: string | null;
  readonly groupbyJson: string;
  /** Why PostgreSQL would refuse this series, or null. */
  readonly problem: string | null;
  /** Set once a transaction that inserted (or found) the series committed: later writes skip it. */
  stored: boolean;
  /**
   * rolled_until of the series (ms) as last seen by this sink; -Infinity = not known. Only a hint: a
   * series is offered to streamstats_roll() when a row starts an hour after it, and the database
   * decides from its own rolled_until.
   */
  rolledMs: number;
  /** streamstats_roll() failed on this series' stored windows: not offered again by this process. */
  rollFailed: boolean;
}

/**
 * Series refs by the row's groupby object, name and unit. The engine's RowFormatter hands out one
 * groupby object per series, so the id, the JSON and the checks are computed once per series rather
 * than once per row; a WeakMap lets the formatter's own bound decide how long they live.
 */
export class SeriesRefs {
  readonly #byGroupby = new WeakMap<object, Map<string, SeriesRef | Map<string | null, SeriesRef>>>();

  of(name: string, groupby: Record<string, string | null>, unit: string | null): SeriesRef {
    let byName = this.#byGroupby.get(groupby);
    if (byName === undefined) {
      byName = new Map();
      this.#byGroupby.set(groupby, byName);
    }
    // One unit per name and groupby is the rule: the first ref is kept as it is, and only a name seen
    // with a second unit gets a map of its units.
    const known = byName.get(name);
    if (known === undefined) {
      const ref = newRef(name, groupby, unit);
      byName.set(name, ref);
      return ref;
    }
    if (!(known instanceof Map)) {
      if (known.unit === unit) return known;
      const ref = newRef(name, groupby, unit);
      byName.set(name, new Map([[known.unit, known], [unit, ref]]));
      return ref;
    }
    let ref = known.get(unit);
    if (ref === undefined) {
      ref = newRef(name, groupby, unit);
      known.set(unit, ref);
    }
    return ref;
  }
}

/** A series' ref as this process has not stored it yet: its id, JSON and why PostgreSQL would refuse it. */
export function newRef(name: string, groupby: Record<string, string | null>, unit: string | null): SeriesRef {
  const id = seriesId(name, groupbyKey(groupby), unit);
  const problem = seriesProblem(name, groupby) ?? textProblem('unit', unit ?? '');
  return { id, name, unit, groupbyJson: JSON.stringify(groupby), problem, stored: false, rolledMs: -Infinity, rollFailed: false };
}

// U+0000: text refuses it (22021) and jsonb refuses \u0000 (22P05). A lone surrogate: jsonb refuses
// the \udXXX escape JSON.stringify writes for it (22P05); in plain text the driver sends U+FFFD instead,
// which is stored, so only the groupby (jsonb) is checked for those.
const NUL = /\u0000/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function describeChar(s: string, re: RegExp): string {
  const m = re.exec(s)!;
  return `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at offset ${m.index}`;
}

export function textProblem(what: string, s: string): string | null {
  return NUL.test(s) ? `${what} holds ${describeChar(s, NUL)}, which PostgreSQL text cannot store` : null;
}

function seriesProblem(name: string, groupby: Record<string, string | null>): string | null {
  const p = textProblem('name', name);
  if (p !== null) return p;
  for (const [k, v] of Object.entries(groupby)) {
    const dim = `dimension ${JSON.stringify(k.slice(0, 64))}`;
    if (NUL.test(k)) return `${dim}: its name holds ${describeChar(k, NUL)}, which PostgreSQL jsonb cannot store`;
    if (LONE_SURROGATE.test(k)) return `${dim}: its name holds a lone surrogate ${describeChar(k, LONE_SURROGATE)}, which PostgreSQL jsonb cannot store`;
    if (v === null) continue;
    if (NUL.test(v)) return `${dim}: its value holds ${describeChar(v, NUL)}, which PostgreSQL jsonb cannot store`;
    if (LONE_SURROGATE.test(v)) return `${dim}: its value holds a lone surrogate ${describeChar(v, LONE_SURROGATE)}, which PostgreSQL jsonb cannot store`;
  }
  return null;
}
