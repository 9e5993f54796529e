// The SQL the statistics API shares between its queries: bind parameters, filters (range-checked in
// params.ts, compiled here), the project scope of a token, and the grouped rows of one meter.
import type pg from 'pg';
import { TABLES } from '../sinks/postgres/schema.js';
import type { Scope } from './tokens.js';
import { rowSource } from './rollups.js';
import {
  ApiError,
  LIMITS,
  METADATA_REFUSED,
  metadataField,
  checkAggregates,
  checkFilters,
  checkGroupby,
  checkText,
  periodMessage,
  type CheckedAggregate,
  type CheckedFilter,
  type StatisticsParams,
} from './params.js';

/** A pool, not a client: a statistics query takes a connection of its own for one read-only transaction with local settings. */
export type Queryable = pg.Pool;

export interface QueryOptions {
  /** Result groups above this are refused (400), so one query cannot build an unbounded response. */
  maxResults?: number;
  /** Stored sketch buckets one percentile query may read (a 400 beyond), so its merge memory is bounded. */
  maxSketchBuckets?: number;
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
export function scoped(filters: CheckedFilter[], scope: Scope | undefined): CheckedFilter[] {
  if (scope === undefined || scope.admin) return filters;
  for (const [i, f] of filters.entries()) {
    if (PROJECT_FIELDS.has(f.field) && String(f.value) !== scope.project) {
      throw new ApiError(403, `q.field[${i}]=${JSON.stringify(f.asked ?? f.field)}: this token may read project ${JSON.stringify(scope.project)} only`);
    }
  }
  return [...filters, { field: TENANT_DIMENSION, op: 'eq', value: scope.project, numeric: false }];
}

export const DEFAULT_MAX_RESULTS = 100_000;
export const DEFAULT_MAX_SKETCH_BUCKETS = 1_000_000;

/** Fields that are columns or the scope, always known; every other field is a dimension. */
const COLUMN_FIELDS: ReadonlySet<string> = new Set(['timestamp', 'topic', 'partition', TENANT_DIMENSION]);

/**
 * Ceilometer refuses a q.field it does not know (400, "unrecognized field in query"); here the fields
 * are the stored dimensions, so a misspelled one would silently answer nothing. Run when an answer is
 * empty: a dimension that no stored row of the meter (of any meter without one) in the caller's scope
 * has is a 400. A meter without any row in scope stays [] (Ceilometer's answer for an unknown meter).
 */
export async function checkFieldsFound(db: Queryable, filters: readonly CheckedFilter[], meter: string | undefined): Promise<void> {
  const dims = [...new Set(filters.filter((f) => !COLUMN_FIELDS.has(f.field)).map((f) => f.field))];
  if (dims.length === 0) return;
  const b = new Binds();
  const where = whereSql(filters.filter((f) => f.field === TENANT_DIMENSION), b, meter);
  const base = `SELECT 1 FROM ${TABLES.statistics} ${where === '' ? 'WHERE true' : where}`;
  const cols = dims.map((d, i) => `EXISTS (${base} AND groupby ? ${b.add(d, '::text')}) AS f${i}`);
  const { rows } = await db.query<Record<string, boolean>>(`SELECT EXISTS (${base}) AS any, ${cols.join(', ')}`, b.values);
  const found = rows[0];
  if (found === undefined || found['any'] !== true) return;
  const missing = dims.findIndex((_, i) => found[`f${i}`] !== true);
  if (missing < 0) return;
  const of = meter === undefined ? 'any meter' : `meter ${JSON.stringify(meter.slice(0, 200))}`;
  const field = dims[missing]!;
  const why = metadataField(field) ? METADATA_REFUSED : `no stored row of ${of} has that field (Ceilometer: unrecognized field in query)`;
  throw new ApiError(400, `q.field=${JSON.stringify(field.slice(0, 200))} is not valid: ${why}; timestamp, search_offset, topic, partition or a dimension of the stored rows (resource_id, project_id, user_id, source, counter_type, …) is allowed`);
}

const SQL_OPS = { lt: '<', le: '<=', eq: '=', ne: '<>', ge: '>=', gt: '>' } as const;
// ASCII only: in a UTF-8 database \d and \s may match characters that numeric's input rejects, and then
// the cast would fail the query. Exponents of up to 3 digits fit numeric (up to 1e131071, down to 1e-16383).
const NUMBER_RE = String.raw`^ *[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,3})? *$`;

/** Bind parameters collected while the SQL text is built. */
export class Binds {
  readonly values: unknown[] = [];
  add(v: unknown, cast = ''): string {
    this.values.push(v);
    return `$${this.values.length}${cast}`;
  }
}

/** `topic` and `partition` are the stored columns; any other name is a dimension of the stored groupby. */
export function fieldExpr(field: string, b: Binds): string {
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

export function checkLimit(limit: number | undefined): void {
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= LIMITS.maxLimit)) {
    throw new ApiError(400, `limit=${limit} is not valid: a whole number from 1 to ${LIMITS.maxLimit} is allowed`);
  }
}

export function whereSql(filters: readonly CheckedFilter[], b: Binds, meter?: string): string {
  const parts = filters.map((f) => filterSql(f, b));
  if (meter !== undefined) parts.unshift(`name = ${b.add(meter, '::text')}`);
  return parts.length === 0 ? '' : `WHERE ${parts.join(' AND ')}`;
}

export interface Plan {
  filters: CheckedFilter[];
  groupby: string[];
  aggregates: CheckedAggregate[];
  period: number | undefined;
  limit: number | undefined;
}

export function plan(params: StatisticsParams, scope?: Scope): Plan {
  if (typeof params.meter !== 'string' || params.meter === '') throw new ApiError(400, 'meter name is empty: /v2/meters/{name}/statistics');
  checkText(params.meter, 'the meter name');
  const period = params.period;
  if (period !== undefined && !(Number.isInteger(period) && period > 0 && period <= LIMITS.maxPeriodSeconds)) throw new ApiError(400, periodMessage(String(period)));
  checkLimit(params.limit);
  return { filters: scoped(checkFilters(params.q), scope), groupby: checkGroupby(params.groupby), aggregates: checkAggregates(params.aggregate), period, limit: params.limit };
}

/**
 * The matching rows of one meter (windows, or hourly rollups standing for them: rollups.ts) with their result-group columns (b = period bucket, u = unit,
 * g0.. = groupby values) and any extra columns: the common part of the merge and sketch queries.
 */
export function groupedRows(p: Plan, meter: string, b: Binds, extra: readonly string[]): { sql: string; keys: string[] } {
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
  return { sql: `SELECT ${[...cols, ...extra].join(', ')} FROM ${rowSource(p.period, p.filters, where, b)}`, keys };
}

export function groupKey(row: Record<string, unknown>, keys: readonly string[]): string {
  return JSON.stringify(keys.map((k) => row[k] ?? null));
}
