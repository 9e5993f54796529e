// Percentiles from the stored sketches: their bucket counts summed per result group in SQL, and only
// the merged buckets read back into a Sketch.
import { Sketch } from '../core/sketch.js';
import { ApiError, type CheckedAggregate } from './params.js';
import { Binds, groupKey, groupedRows, type Plan, type Queryable } from './sql.js';

/**
 * Two queries over the same rows: the sketches' bucket counts summed per result group and sign
 * (jsonb_each_text of pos and neg only: 2-3x cheaper than one wider lateral), and a summary per group.
 */
export function sketchSql(p: Plan, meter: string): { buckets: { text: string; values: unknown[] }; summary: { text: string; values: unknown[] }; keys: string[] } {
  const b1 = new Binds();
  const rows = groupedRows(p, meter, b1, ['sketch', 'sk_packed']);
  const keys = rows.keys.join(', ');
  // Binary sketches (rollups', and windows' sketch_bin) concatenated per group and added up in Node;
  // the buckets of windows stored with JSON only (before schema version 3) summed in SQL.
  const buckets = `
WITH r AS (${rows.sql})
SELECT ${keys}, e.neg, e.key, sum(e.value::float8) AS v, NULL::bytea AS packed
FROM r CROSS JOIN LATERAL (
  SELECT false AS neg, key, value FROM jsonb_each_text(r.sketch -> 'pos')
  UNION ALL SELECT true, key, value FROM jsonb_each_text(r.sketch -> 'neg')
) e
WHERE r.sketch IS NOT NULL
GROUP BY ${keys}, e.neg, e.key
UNION ALL
SELECT ${keys}, NULL, NULL, NULL, string_agg(r.sk_packed, ''::bytea) FROM r WHERE r.sk_packed IS NOT NULL GROUP BY ${keys}`;
  const b2 = new Binds();
  // nb: the buckets the row brings (12 bytes each in binary; a JSON sketch's keys counted only for the
  // rows stored before binary sketches), so a query's sketch memory is known before it is read.
  const nb = `coalesce(octet_length(sk_packed) / 12, 0) + CASE WHEN sketch IS NULL THEN 0 ELSE
    (SELECT count(*) FROM jsonb_object_keys(coalesce(sketch -> 'pos', '{}'::jsonb))) + (SELECT count(*) FROM jsonb_object_keys(coalesce(sketch -> 'neg', '{}'::jsonb))) END AS nb`;
  const srows = groupedRows(p, meter, b2, ['sk_none AS none', 'sk_a_lo AS a_lo', 'sk_a_hi AS a_hi', 'sk_zero AS z', nb]);
  const summary = `
WITH r AS (${srows.sql})
SELECT ${keys}, sum(none)::float8 AS sk_none, min(a_lo) AS sk_a_lo, max(a_hi) AS sk_a_hi, coalesce(sum(z), 0) AS sk_z, sum(nb)::float8 AS sk_nb
FROM r GROUP BY ${keys}`;
  return { buckets: { text: buckets, values: b1.values }, summary: { text: summary, values: b2.values }, keys: rows.keys };
}

/** Per result group: partials stored without a sketch, the sketches' relative accuracies, their zero counts. */
interface SketchSummary {
  sk_none: number;
  sk_a_lo: number | null;
  sk_a_hi: number | null;
  sk_z: number;
}

/**
 * One read-only transaction (one snapshot) for a statistics query, with JIT compilation off: the
 * queries read a few thousand rows through indexes, and compiling them cost up to 200 ms where they
 * run in 50-250 (the planner's costs put them over jit_above_cost). With percentiles, the sketch
 * queries read the same snapshot as the merge, and a hash table rather than a sort groups the
 * buckets: the planner cannot estimate how many rows jsonb_each_text yields (it assumes 100 a call,
 * and 200 values an expression), so it would sort millions of (group, bucket) rows where a hash table
 * of a few thousand groups does, 2-3x faster.
 */
export async function queryWithSketches<M extends Record<string, unknown>>(
  db: Queryable,
  merge: { text: string; values: unknown[] },
  sk: ReturnType<typeof sketchSql> | undefined,
  /** Called with the merged rows and the sketch buckets the query would read, before it reads them; may throw. */
  check: (merged: readonly M[], buckets: number) => void = () => {},
): Promise<{ merged: M[]; sketches: { buckets: Record<string, unknown>[]; summary: Record<string, unknown>[] } | undefined }> {
  const client = await db.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query('SET LOCAL jit = off');
    const merged = (await client.query<M>(merge.text, merge.values)).rows;
    if (sk === undefined) {
      check(merged, 0);
      await client.query('COMMIT');
      return { merged, sketches: undefined };
    }
    const summary = (await client.query<Record<string, unknown>>(sk.summary.text, sk.summary.values)).rows;
    check(merged, summary.reduce((n, r) => n + Number(r['sk_nb'] ?? 0), 0));
    await client.query('SET LOCAL enable_sort = off');
    const buckets = (await client.query<Record<string, unknown>>(sk.buckets.text, sk.buckets.values)).rows;
    await client.query('COMMIT');
    return { merged, sketches: { buckets, summary } };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

interface GroupSketch extends SketchSummary {
  pos: Record<string, number>;
  neg: Record<string, number>;
}

export function sketchesByGroup(res: { buckets: Record<string, unknown>[]; summary: Record<string, unknown>[] }, keys: readonly string[]): Map<string, GroupSketch> {
  const out = new Map<string, GroupSketch>();
  for (const r of res.summary) {
    out.set(groupKey(r, keys), { sk_none: r['sk_none'] as number, sk_a_lo: r['sk_a_lo'] as number | null, sk_a_hi: r['sk_a_hi'] as number | null, sk_z: r['sk_z'] as number, pos: {}, neg: {} });
  }
  for (const r of res.buckets) {
    const m = out.get(groupKey(r, keys));
    if (m === undefined) continue;
    const packed = r['packed'] as Buffer | null;
    if (packed === null) {
      const side = r['neg'] === true ? m.neg : m.pos;
      const k = r['key'] as string;
      side[k] = (side[k] ?? 0) + (r['v'] as number);
      continue;
    }
    addPacked(m, packed);
  }
  return out;
}

/** Adds binary sketches (12 bytes a bucket: int4 code, float8 count, big-endian; schema.ts) to a group's buckets. */
export function addPacked(m: { pos: Record<string, number>; neg: Record<string, number> }, packed: Buffer): void {
  if (packed.length % 12 !== 0) throw new Error(`a rollup sketch of ${packed.length} bytes is not 12-byte buckets`);
  for (let at = 0; at < packed.length; at += 12) {
    const code = packed.readInt32BE(at);
    const side = (code & 1) === 1 ? m.neg : m.pos;
    const k = String(code >> 1);
    side[k] = (side[k] ?? 0) + packed.readDoubleBE(at + 4);
  }
}

export /** where: the result group, for the messages ("2020-02-11T12:00:00 {"project_id":"p1"}"). */
function percentile(g: GroupSketch | undefined, a: CheckedAggregate, where: string): number {
  const missing = g?.sk_none ?? 0;
  if (g === undefined || missing > 0 || g.sk_a_lo === null || g.sk_a_hi === null) {
    throw new ApiError(
      400,
      `aggregate.func=percentile needs a quantile sketch in every stored row: ${missing} rows of ${where} have none (the engine stores sketches when it computes percentiles)`,
    );
  }
  if (g.sk_a_lo !== g.sk_a_hi) {
    throw new ApiError(400, `aggregate.func=percentile: the rows of ${where} hold sketches of different relative accuracy (${g.sk_a_lo}, ${g.sk_a_hi}), which cannot be merged`);
  }
  let count = g.sk_z;
  for (const v of Object.values(g.pos)) count += v;
  for (const v of Object.values(g.neg)) count += v;
  return Sketch.from({ a: g.sk_a_lo, pos: g.pos, neg: g.neg, zero: g.sk_z, count }).quantile(a.quantile!);
}
