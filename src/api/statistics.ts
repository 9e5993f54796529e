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
//   percentile/P: the sketches' bucket counts are summed per group in SQL (jsonb_each_text), and
//         only the merged buckets are read back into a Sketch; the merge query adds, per group, the
//         partials without a sketch, the relative accuracies and the zero counts.
// streamstats_statistics is a view (schema version 2): the series of the meter are found through the
// hash index on streamstats_series.name (name = $1), then their windows through the primary key of
// streamstats_windows, (series, period_start, ...): every timestamp bound is turned into a bound on
// period_start.
import type pg from 'pg';
import { Sketch, type SketchData } from '../core/sketch.js';
import { TABLES } from '../sinks/postgres/schema.js';
import type { Scope } from './tokens.js';
import {
  ApiError,
  LIMITS,
  checkAggregates,
  checkText,
  periodMessage,
  shown,
  checkFilters,
  checkGroupby,
  type CheckedAggregate,
  type CheckedFilter,
  type MetersParams,
  type StatisticsParams,
} from './params.js';

/** A pool, not a client: the sketch query takes a connection of its own for transaction-local settings. */
export type Queryable = pg.Pool;

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

/** Ceilometer's v2 Meter: one per meter name and resource, with what the stored dimensions hold. */
export interface Meter {
  name: string;
  /** gauge, delta or cumulative when a counter_type dimension says so; null otherwise (not stored). */
  type: string | null;
  unit: string | null;
  resource_id: string | null;
  project_id: string | null;
  user_id: string | null;
  source: string | null;
  /** base64 of "resource_id+name", as Ceilometer makes it. */
  meter_id: string;
}

export interface QueryOptions {
  /** Result groups above this are refused (400), so one query cannot build an unbounded response. */
  maxResults?: number;
  /** What the caller's token may read; absent = everything (admin). */
  scope?: Scope;
}

/**
 * The dimension that names a row's project. Monasca's _tenant_id comes from the envelope's meta (the
 * tenant the Monasca API authenticated), never from the sender's dimensions, so it can be trusted.
 */
export const TENANT_DIMENSION = '_tenant_id';
/** Filters on these ask for a project: a project token may name only its own (Ceilometer's rule). */
const PROJECT_FIELDS: ReadonlySet<string> = new Set([TENANT_DIMENSION, 'project_id', 'project']);

/**
 * A project-scoped token reads only rows of its project, as Ceilometer scopes a non-admin query: a
 * filter naming another project is a 403, and the project's own filter is added to every query.
 */
function scoped(filters: CheckedFilter[], scope: Scope | undefined): CheckedFilter[] {
  if (scope === undefined || scope.admin) return filters;
  for (const [i, f] of filters.entries()) {
    if (PROJECT_FIELDS.has(f.field) && String(f.value) !== scope.project) {
      throw new ApiError(403, `q.field[${i}]=${JSON.stringify(f.field)}: this token may read project ${JSON.stringify(scope.project)} only`);
    }
  }
  return [...filters, { field: TENANT_DIMENSION, op: 'eq', value: scope.project, numeric: false }];
}

export const DEFAULT_MAX_RESULTS = 100_000;

const SQL_OPS = { lt: '<', le: '<=', eq: '=', ne: '<>', ge: '>=', gt: '>' } as const;
// ASCII only: in a UTF-8 database \d and \s may match characters that numeric's input rejects, and then
// the cast would fail the query. Exponents of up to 3 digits fit numeric (up to 1e131071, down to 1e-16383).
const NUMBER_RE = String.raw`^ *[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})? *$`;

/** Bind parameters collected while the SQL text is built. */
class Binds {
  readonly values: unknown[] = [];
  add(v: unknown, cast = ''): string {
    this.values.push(v);
    return `$${this.values.length}${cast}`;
  }
}

/** `topic` and `partition` are the stored columns; any other name is a dimension of the stored groupby. */
function fieldExpr(field: string, b: Binds): string {
  if (field === 'topic') return 'topic';
  if (field === 'partition') return 'partition';
  return `(groupby ->> ${b.add(field, '::text')})`;
}

/**
 * Timestamp bounds select whole windows: a window [period_start, period_end) is included when all of
 * it lies within the bound. ge T: period_start >= T; gt T: period_start > T; lt T and le T:
 * period_end <= T (a half-open window lies before T, or at or before T, exactly when it ends by T).
 */
function filterSql(f: CheckedFilter, b: Binds): string {
  if (f.field === 'timestamp') {
    const t = b.add(new Date(f.value as number).toISOString(), '::timestamptz');
    if (f.op === 'ge' || f.op === 'gt') return `period_start ${SQL_OPS[f.op]} ${t}`;
    // The period_start bound is implied (period_start < period_end); it lets the index bound the scan.
    return `period_end <= ${t} AND period_start < ${t}`;
  }
  if (f.field === 'partition') return `partition ${SQL_OPS[f.op]} ${b.add(f.value, '::int')}`;
  if (f.field === 'topic') return `topic COLLATE "C" ${SQL_OPS[f.op]} ${b.add(f.value, '::text')}`;
  const dim = fieldExpr(f.field, b);
  // Numeric q.type compares as numeric, not float8: a stored "1e999" is a number numeric holds, where
  // a float8 cast would fail the whole query; text that is not a number (the regex) is no value at all.
  const lhs = f.numeric ? `(CASE WHEN ${dim} ~ '${NUMBER_RE}' THEN ${dim}::numeric END)` : f.op === 'eq' || f.op === 'ne' ? dim : `${dim} COLLATE "C"`;
  const rhs = f.numeric ? b.add(String(f.value), '::numeric') : b.add(f.value, '::text');
  // A row without the dimension is not equal to any value: ne includes it, every other op excludes it.
  if (f.op === 'ne') return `${lhs} IS DISTINCT FROM ${rhs}`;
  return `${lhs} ${SQL_OPS[f.op]} ${rhs}`;
}

function checkLimit(limit: number | undefined): void {
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= LIMITS.maxLimit)) {
    throw new ApiError(400, `limit=${limit} is not valid: a whole number from 1 to ${LIMITS.maxLimit} is allowed`);
  }
}

function whereSql(filters: readonly CheckedFilter[], b: Binds, meter?: string): string {
  const parts = filters.map((f) => filterSql(f, b));
  if (meter !== undefined) parts.unshift(`name = ${b.add(meter, '::text')}`);
  return parts.length === 0 ? '' : `WHERE ${parts.join(' AND ')}`;
}

interface Plan {
  filters: CheckedFilter[];
  groupby: string[];
  aggregates: CheckedAggregate[];
  period: number | undefined;
  limit: number | undefined;
}

function plan(params: StatisticsParams, scope?: Scope): Plan {
  if (typeof params.meter !== 'string' || params.meter === '') throw new ApiError(400, 'meter name is empty: /v2/meters/{name}/statistics');
  checkText(params.meter, 'the meter name');
  const period = params.period;
  if (period !== undefined && !(Number.isInteger(period) && period > 0 && period <= LIMITS.maxPeriodSeconds)) throw new ApiError(400, periodMessage(String(period)));
  checkLimit(params.limit);
  return { filters: scoped(checkFilters(params.q), scope), groupby: checkGroupby(params.groupby), aggregates: checkAggregates(params.aggregate), period, limit: params.limit };
}

/**
 * The matching rows of one meter with their result-group columns (b = period bucket, u = unit,
 * g0.. = groupby values) and any extra columns: the common part of the merge and sketch queries.
 */
function groupedRows(p: Plan, meter: string, b: Binds, extra: readonly string[]): { sql: string; keys: string[] } {
  const cols: string[] = [];
  const keys: string[] = [];
  if (p.period !== undefined) {
    // Buckets are aligned to the epoch, like the stored windows, so each window lies in one bucket.
    cols.push(`floor(date_part('epoch', period_start) / ${b.add(p.period, '::float8')}) AS b`);
    keys.push('b');
  }
  cols.push('unit AS u');
  keys.push('u');
  p.groupby.forEach((g, i) => {
    cols.push(`${fieldExpr(g, b)} AS g${i}`);
    keys.push(`g${i}`);
  });
  const where = whereSql(p.filters, b, meter);
  return { sql: `SELECT ${[...cols, ...extra].join(', ')} FROM ${TABLES.statistics} ${where}`, keys };
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
  const limit = b.add(p.limit ?? (opts.maxResults ?? DEFAULT_MAX_RESULTS) + 1, '::int');
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

/**
 * Two queries over the same rows: the sketches' bucket counts summed per result group and sign
 * (jsonb_each_text of pos and neg only: 2-3x cheaper than one wider lateral), and a summary per group.
 */
function sketchSql(p: Plan, meter: string): { buckets: { text: string; values: unknown[] }; summary: { text: string; values: unknown[] }; keys: string[] } {
  const b1 = new Binds();
  const rows = groupedRows(p, meter, b1, ['sketch']);
  const keys = rows.keys.join(', ');
  const buckets = `
WITH r AS (${rows.sql})
SELECT ${keys}, e.neg, e.key, sum(e.value::float8) AS v
FROM r CROSS JOIN LATERAL (
  SELECT false AS neg, key, value FROM jsonb_each_text(r.sketch -> 'pos')
  UNION ALL SELECT true, key, value FROM jsonb_each_text(r.sketch -> 'neg')
) e
GROUP BY ${keys}, e.neg, e.key`;
  const b2 = new Binds();
  const srows = groupedRows(p, meter, b2, ["sketch IS NULL AS none", "(sketch ->> 'a')::float8 AS a", "(sketch ->> 'zero')::float8 AS z"]);
  const summary = `
WITH r AS (${srows.sql})
SELECT ${keys}, count(*) FILTER (WHERE none)::float8 AS sk_none, min(a) AS sk_a_lo, max(a) AS sk_a_hi, coalesce(sum(z), 0) AS sk_z
FROM r GROUP BY ${keys}`;
  return { buckets: { text: buckets, values: b1.values }, summary: { text: summary, values: b2.values }, keys: rows.keys };
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

/** Per result group: partials stored without a sketch, the sketches' relative accuracies, their zero counts. */
interface SketchSummary {
  sk_none: number;
  sk_a_lo: number | null;
  sk_a_hi: number | null;
  sk_z: number;
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

function groupKey(row: Record<string, unknown>, keys: readonly string[]): string {
  return JSON.stringify(keys.map((k) => row[k] ?? null));
}

/**
 * Statistics of one meter, as GET /v2/meters/{name}/statistics answers them, without HTTP.
 * Throws ApiError (status 400) for a query that is not allowed.
 */
export async function queryStatistics(db: Queryable, params: StatisticsParams, opts: QueryOptions = {}): Promise<Statistics[]> {
  const p = plan(params, opts.scope);
  const maxResults = opts.maxResults ?? DEFAULT_MAX_RESULTS;
  const wantSketch = p.aggregates.some((a) => a.func === 'percentile');
  const sk = wantSketch ? sketchSql(p, params.meter) : undefined;
  const run = async (exact: boolean) => {
    const merge = mergeSql(p, params.meter, opts, exact);
    // Percentiles: the merge and the sketch queries read one snapshot, or a window written in between
    // would be in one and not the other.
    return sk === undefined ? { merged: (await db.query<MergedRow>(merge.text, merge.values)).rows, sketches: undefined } : await queryWithSketches(db, merge, sk);
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
  if (rows.length > maxResults) {
    throw new ApiError(400, `the query gives more than ${maxResults} statistics: narrow it with q (timestamp, dimensions), a longer period or fewer groupby`);
  }
  const bad = rows.find((r) => r.bad_w !== null);
  if (bad !== undefined) {
    throw new ApiError(400, `period=${p.period} is not valid: a multiple of the stored window period (${bad.bad_w} s) is allowed`);
  }
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
        else if (a.func === 'percentile') agg[a.key] = percentile(sketch!.get(groupKey(r, keys)), a, stat);
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
      throw new ApiError(400, `groupby[${i}]=${shown(g)} is not valid: no stored row of meter ${shown(meter)} that the query selects has that field; topic, partition or a dimension of the stored rows (resource_id, project_id, user_id, …) is allowed`);
    }
  }
}

/**
 * One read-only transaction (one snapshot) with local settings for the sketch query: the planner
 * cannot estimate how many rows jsonb_each_text yields (it assumes 100 a call, and 200 values an
 * expression), so it would sort millions of (group, bucket) rows where a hash table of a few thousand
 * groups does, 2-3x faster; and JIT compilation costs more than it saves there.
 */
async function queryWithSketches(
  db: Queryable,
  merge: { text: string; values: unknown[] },
  sk: ReturnType<typeof sketchSql>,
): Promise<{ merged: MergedRow[]; sketches: { buckets: Record<string, unknown>[]; summary: Record<string, unknown>[] } }> {
  const client = await db.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const merged = (await client.query<MergedRow>(merge.text, merge.values)).rows;
    const summary = (await client.query<Record<string, unknown>>(sk.summary.text, sk.summary.values)).rows;
    await client.query('SET LOCAL enable_sort = off');
    await client.query('SET LOCAL jit = off');
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

function sketchesByGroup(res: { buckets: Record<string, unknown>[]; summary: Record<string, unknown>[] }, keys: readonly string[]): Map<string, GroupSketch> {
  const out = new Map<string, GroupSketch>();
  for (const r of res.summary) {
    out.set(groupKey(r, keys), { sk_none: r['sk_none'] as number, sk_a_lo: r['sk_a_lo'] as number | null, sk_a_hi: r['sk_a_hi'] as number | null, sk_z: r['sk_z'] as number, pos: {}, neg: {} });
  }
  for (const r of res.buckets) {
    const m = out.get(groupKey(r, keys));
    if (m !== undefined) (r['neg'] === true ? m.neg : m.pos)[r['key'] as string] = r['v'] as number;
  }
  return out;
}

function percentile(g: GroupSketch | undefined, a: CheckedAggregate, stat: Statistics): number {
  const where = `${stat.period_start}${stat.groupby === null ? '' : ` ${JSON.stringify(stat.groupby)}`}`;
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

/** The dimension expressions of a Meter's fields; project_id prefers the trusted _tenant_id. */
const METER_FIELDS = {
  resource_id: "groupby ->> 'resource_id'",
  project_id: `coalesce(groupby ->> '${TENANT_DIMENSION}', groupby ->> 'project_id')`,
  user_id: "groupby ->> 'user_id'",
  source: "groupby ->> 'source'",
  type: "CASE WHEN groupby ->> 'counter_type' IN ('gauge', 'delta', 'cumulative') THEN groupby ->> 'counter_type' END",
} as const;

/**
 * GET /v2/meters: like Ceilometer, one Meter per meter name and resource (and unit, project, user,
 * source, type) among the stored rows that match q, sorted bytewise; at most limit of them (100 when
 * absent, Ceilometer's default_api_return_limit).
 */
export async function listMeters(db: Queryable, params: MetersParams = {}, opts: QueryOptions = {}): Promise<Meter[]> {
  const filters = scoped(checkFilters(params.q), opts.scope);
  checkLimit(params.limit);
  const b = new Binds();
  const where = whereSql(filters, b);
  const cols = Object.entries(METER_FIELDS).map(([k, e]) => `${e} AS ${k}`).join(', ');
  const order = ['name', 'resource_id', 'unit', 'project_id', 'user_id', 'source', 'type'].map((k) => `${k} COLLATE "C"`).join(', ');
  const limit = b.add(params.limit ?? LIMITS.defaultMetersLimit, '::int');
  const { rows } = await db.query<Omit<Meter, 'meter_id'>>(
    `SELECT * FROM (SELECT DISTINCT name, unit, ${cols} FROM ${TABLES.statistics} ${where}) m ORDER BY ${order} LIMIT ${limit}`,
    b.values,
  );
  return rows.map((r) => ({
    name: r.name,
    type: r.type,
    unit: r.unit,
    resource_id: r.resource_id,
    project_id: r.project_id,
    user_id: r.user_id,
    source: r.source,
    meter_id: Buffer.from(`${r.resource_id ?? ''}+${r.name}`, 'utf8').toString('base64'),
  }));
}
