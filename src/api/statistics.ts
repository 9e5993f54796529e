// Ceilometer-style statistics computed from the PostgreSQL store (streamstats_statistics).
//
// The stored rows are partials: one per (series, topic, partition, window). A statistics query merges
// every partial that falls in one result group (period bucket x unit x groupby values) exactly, and
// does it in PostgreSQL so that only the result groups cross the wire:
//   count, sum, min, max, duration_start/end, period_start/end: plain aggregates;
//   avg = sum(sum) / sum(count);
//   m2  = sum(m2) + sum(count * (avg - group_mean)^2)   (Chan's parallel formula over k partials),
//         group_mean coming from a window function over the same group, so the rows are read once
//         and the sum of squares is never formed around zero (no catastrophic cancellation);
//   cardinality/X = count(DISTINCT groupby ->> X);
//   percentile/P: the windows' bucket counts are summed per group in SQL (jsonb_each_text), the
//         rollups' binary sketches are concatenated per group and added in Node, and the merged
//         buckets are read into a Sketch; a summary query adds, per group, the partials without a
//         sketch, the relative accuracies and the zero counts.
// The rows merged are those of rollups.ts: for whole hours of a series, one hourly rollup (schema
// version 3) standing for its windows, and the windows themselves for the rest. The series of the
// meter are found through the hash index on streamstats_series.name (name = $1), then their rollups
// and windows through the rollups' index and the primary key of streamstats_windows, (series,
// period_start, ...): every timestamp bound is turned into a bound on period_start or the hour.
import { ApiError, METADATA_REFUSED, metadataField, shown, type StatisticsParams } from './params.js';
import { percentile, queryWithSketches, sketchSql, sketchesByGroup } from './sketches.js';
import { Binds, DEFAULT_MAX_RESULTS, DEFAULT_MAX_SKETCH_BUCKETS, checkFieldsFound, fieldExpr, groupKey, groupedRows, plan, whereSql, type Plan, type QueryOptions, type Queryable } from './sql.js';
import { TABLES } from '../sinks/postgres/schema.js';

/**
 * One result, with the fields of Ceilometer's v2 Statistics (ceilometer/api/controllers/v2/meters.py):
 * the standard aggregates, and the selectable ones (stddev, cardinality/X, percentile/P) only in
 * "aggregate", present when aggregate.func was given.
 */
export interface Statistics {
  avg: number;
  count: number;
  duration: number;
  duration_end: string;
  duration_start: string;
  groupby: Record<string, string | number | null> | null;
  max: number;
  min: number;
  period: number;
  period_end: string;
  period_start: string;
  sum: number;
  unit: string | null;
  aggregate?: Record<string, number | null>;
}

const CARDINALITY_PREFIX = 'c';

/** The merge query. Exported so that a benchmark or a test can EXPLAIN it. */
export function statisticsSql(params: StatisticsParams, opts: QueryOptions = {}): { text: string; values: unknown[] } {
  return mergeSql(plan(params, opts.scope), params.meter, opts);
}

/**
 * exact: the arithmetic in numeric instead of float8. PostgreSQL raises an error where float8 overflows
 * (stored sums near 1e300 added up, or their squared deviations), so such a query is run again in
 * numeric, which cannot overflow; results beyond float8 then read as Infinity (null in JSON).
 */
function mergeSql(p: Plan, meter: string, opts: QueryOptions, exact = false): { text: string; values: unknown[] } {
  const b = new Binds();
  const cards = p.aggregates.filter((a) => a.func === 'cardinality');
  const num = exact ? ['count::numeric AS n', 'sum::numeric AS sum', 'min', 'max', 'avg::numeric AS avg', 'm2::numeric AS m2'] : ['count::float8 AS n', 'sum', 'min', 'max', 'avg', 'm2'];
  const extra = [
    ...num, 'period AS w', 'period_start', 'period_end', 'duration_start', 'duration_end',
    ...cards.map((a, j) => `${fieldExpr(a.param!, b)} AS ${CARDINALITY_PREFIX}${j}`),
  ];
  // fieldExpr above bound its parameters first: groupedRows continues the numbering.
  const rows = groupedRows(p, meter, b, extra);
  const keys = rows.keys.join(', ');
  // Text keys sort bytewise, whatever the database's collation: the same order everywhere.
  const order = rows.keys.map((k) => (k === 'b' || (k.startsWith('g') && p.groupby[Number(k.slice(1))] === 'partition') ? k : `${k} COLLATE "C"`)).join(', ');
  const badPeriod =
    p.period === undefined ? 'NULL::float8' : `max(w) FILTER (WHERE w <> round(w) OR w < 1 OR ${b.add(p.period, '::bigint')} % w::bigint <> 0)`;
  // With limit: the first results in the answer's order. Without: one more than allowed, to say so.
  // A limit above maxResults reads one more than allowed too: the bound holds whatever the limit.
  const limit = b.add(Math.min(p.limit ?? Infinity, (opts.maxResults ?? DEFAULT_MAX_RESULTS) + 1), '::int');
  const text = `
WITH r AS (${rows.sql}),
m AS (SELECT r.*, sum(r.sum) OVER k / sum(r.n) OVER k AS gmean FROM r WINDOW k AS (PARTITION BY ${keys}))
SELECT ${keys},
  sum(n) AS n, sum(sum) AS s, min(min) AS lo, max(max) AS hi,
  greatest(sum(m2) + sum(n * (avg - gmean) * (avg - gmean)), 0) AS m2,
  date_part('epoch', min(period_start)) * 1000 AS ps, date_part('epoch', max(period_end)) * 1000 AS pe,
  date_part('epoch', min(duration_start)) * 1000 AS ds, date_part('epoch', max(duration_end)) * 1000 AS de,
  ${badPeriod} AS bad_w
  ${cards.map((_, j) => `, count(DISTINCT ${CARDINALITY_PREFIX}${j})::float8 AS ${CARDINALITY_PREFIX}${j}`).join('')}
FROM m GROUP BY ${keys} ORDER BY ${order} LIMIT ${limit}`;
  return { text, values: b.values };
}

interface MergedRow {
  [key: string]: unknown;
  n: number;
  s: number;
  lo: number;
  hi: number;
  m2: number;
  ps: number;
  pe: number;
  ds: number;
  de: number;
  bad_w: number | null;
}

/**
 * Timestamps as Ceilometer writes them: WSME renders Python's datetime.isoformat() of naive UTC times,
 * "2013-01-04T16:42:00" (no offset, no Z), with six fraction digits only when there is a fraction
 * ("2014-01-31T10:00:41.823919"). Stored times have milliseconds, so the last three digits are 0.
 */
export function ceilometerTime(ms: number): string {
  const iso = new Date(Math.round(ms)).toISOString();
  const frac = iso.slice(20, 23);
  return frac === '000' ? iso.slice(0, 19) : `${iso.slice(0, 19)}.${frac}000`;
}

/** The fields Ceilometer's Statistics type declares float: a whole number is still written 5.0 there. */
const FLOAT_FIELDS: ReadonlySet<string> = new Set(['avg', 'sum', 'min', 'max', 'duration']);
// A marker no value can hold: stored text never contains U+0000 (refused at intake and in queries).
const WHOLE = '\u0000whole:';

/**
 * The JSON of statistics with Ceilometer's number types: avg, sum, min, max, duration and every
 * "aggregate" value (a float dict in Ceilometer) as JSON floats ("5.0", not "5"), count and period as
 * integers. Typed clients and Python's json then see the types Ceilometer sends.
 */
export function statisticsJson(stats: readonly Statistics[]): string {
  const mark = (v: unknown): unknown => (typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 1e21 ? `${WHOLE}${v}` : v);
  const text = JSON.stringify(stats, (key, v: unknown) => {
    if (FLOAT_FIELDS.has(key)) return mark(v);
    if (key === 'aggregate' && typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mark(x)]));
    return v;
  });
  return text.replace(/"\\u0000whole:(-?\d+)"/g, '$1.0');
}

/**
 * Statistics of one meter, as GET /v2/meters/{name}/statistics answers them, without HTTP.
 * Throws ApiError (status 400) for a query that is not allowed.
 */
export async function queryStatistics(db: Queryable, params: StatisticsParams, opts: QueryOptions = {}): Promise<Statistics[]> {
  const p = plan(params, opts.scope);
  const maxResults = opts.maxResults ?? DEFAULT_MAX_RESULTS;
  const maxBuckets = opts.maxSketchBuckets ?? DEFAULT_MAX_SKETCH_BUCKETS;
  const tooMany = (n: number) => {
    if (n > maxResults) {
      throw new ApiError(400, `the query gives more than ${maxResults} statistics (API_MAX_RESULTS): narrow it with q (timestamp, dimensions), a longer period, fewer groupby or a limit of at most ${maxResults}`);
    }
  };
  const wantSketch = p.aggregates.some((a) => a.func === 'percentile');
  const sk = wantSketch ? sketchSql(p, params.meter) : undefined;
  const run = async (exact: boolean) => {
    const merge = mergeSql(p, params.meter, opts, exact);
    // Percentiles: the merge and the sketch queries read one snapshot, or a window written in between
    // would be in one and not the other.
    return await queryWithSketches<MergedRow>(db, merge, sk, (merged, buckets) => {
      // Before the sketches are read: a query over the bounds is refused without loading them.
      tooMany(merged.length);
      if (buckets > maxBuckets) {
        throw new ApiError(
          400,
          `aggregate.func=percentile: the query would merge ${buckets} stored sketch buckets, more than ${maxBuckets} (API_MAX_SKETCH_BUCKETS): narrow it with q (timestamp, dimensions), fewer groupby, or a period that is a multiple of an hour (hourly rollups hold merged sketches)`,
        );
      }
    });
  };
  let result: Awaited<ReturnType<typeof run>>;
  try {
    result = await run(false);
  } catch (err) {
    // 22003 numeric_value_out_of_range: a float8 sum overflowed on stored values.
    if ((err as { code?: unknown }).code !== '22003') throw err;
    result = await run(true);
    for (const r of result.merged) for (const k of ['n', 's', 'm2'] as const) r[k] = Number(r[k]);
  }
  const { merged, sketches } = result;
  const rows = merged;
  tooMany(rows.length);
  const bad = rows.find((r) => r.bad_w !== null);
  if (bad !== undefined) {
    throw new ApiError(400, `period=${p.period} is not valid: a multiple of the stored window period (${bad.bad_w} s) is allowed`);
  }
  if (rows.length === 0) await checkFieldsFound(db, p.filters, params.meter);
  await checkGroupbyFound(db, p, params.meter, rows);
  const keys = ['b', 'u', ...p.groupby.map((_, i) => `g${i}`)].filter((k) => k !== 'b' || p.period !== undefined);
  const sketch = sk === undefined || sketches === undefined ? undefined : sketchesByGroup(sketches, sk.keys);

  return rows.map((r) => {
    // Without period, Ceilometer answers period 0 and the period is the samples' own span
    // (period_start = duration_start, period_end = duration_end).
    const periodStart = p.period === undefined ? r.ds : (r['b'] as number) * p.period * 1000;
    const periodEnd = p.period === undefined ? r.de : periodStart + p.period * 1000;
    const count = r.n;
    const stat: Statistics = {
      avg: r.s / count,
      count,
      duration: (r.de - r.ds) / 1000,
      duration_end: ceilometerTime(r.de),
      duration_start: ceilometerTime(r.ds),
      groupby: p.groupby.length === 0 ? null : Object.fromEntries(p.groupby.map((g, i) => [g, (r[`g${i}`] as string | number | null) ?? null])),
      max: r.hi,
      min: r.lo,
      period: p.period ?? 0,
      period_end: ceilometerTime(periodEnd),
      period_start: ceilometerTime(periodStart),
      sum: r.s,
      unit: (r['u'] as string | null) ?? null,
    };
    if (p.aggregates.length > 0) {
      const agg: Record<string, number | null> = {};
      let card = 0;
      for (const a of p.aggregates) {
        if (a.func === 'cardinality') agg[a.key] = r[`${CARDINALITY_PREFIX}${card++}`] as number;
        else if (a.func === 'percentile') agg[a.key] = percentile(sketch!.get(groupKey(r, keys)), a, `${stat.period_start}${stat.groupby === null ? '' : ` ${JSON.stringify(stat.groupby)}`}`);
        else if (a.func === 'stddev') agg[a.key] = count > 0 ? Math.sqrt(r.m2 / count) : 0;
        else agg[a.key] = stat[a.func];
      }
      stat.aggregate = agg;
    }
    return stat;
  });
}

/**
 * Ceilometer answers 400 for a groupby field it does not know. The fields here are the stored
 * dimensions, so a field is unknown when no row the query selects has it: told apart from a field
 * that is merely null in the groups shown by one more query, run only when every group shows null.
 */
async function checkGroupbyFound(db: Queryable, p: Plan, meter: string, rows: readonly MergedRow[]): Promise<void> {
  if (rows.length === 0) return;
  for (const [i, g] of p.groupby.entries()) {
    if (g === 'topic' || g === 'partition' || rows.some((r) => r[`g${i}`] !== null)) continue;
    const b = new Binds();
    const where = whereSql(p.filters, b, meter);
    const found = await db.query<{ found: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${TABLES.statistics} ${where} AND groupby ? ${b.add(g, '::text')}) AS found`, b.values);
    if (found.rows[0]?.found !== true) {
      const why = metadataField(g) ? METADATA_REFUSED : `no stored row of meter ${shown(meter)} that the query selects has that field`;
      throw new ApiError(400, `groupby[${i}]=${shown(g)} is not valid: ${why}; topic, partition or a dimension of the stored rows (resource_id, project_id, user_id, …) is allowed`);
    }
  }
}
