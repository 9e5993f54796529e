// The statistics API's parameters, in the query syntax of the OpenStack Ceilometer v2 API, parsed and
// checked before any SQL is built. Every rejection is an ApiError (HTTP 400) whose message names the
// parameter, the value and what is allowed.
import { MAX_TIMESTAMP_MS, parseIsoTimestamp } from '../core/record.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const OPS = ['lt', 'le', 'eq', 'ne', 'ge', 'gt'] as const;
export type Op = (typeof OPS)[number];

/** q.type: how a dimension value compares. '' (what python-ceilometerclient sends) is string. */
export const Q_TYPES = ['', 'string', 'integer', 'float'] as const;
export type QType = (typeof Q_TYPES)[number];
/** Ceilometer's other q.types: on timestamp (and search_offset) the type is ignored, as Ceilometer ignores it. */
const TIME_Q_TYPES: readonly string[] = [...Q_TYPES, 'datetime', 'boolean'];

/**
 * Ceilometer's names of the sample fields (SampleFilter's arguments), taken as the stored dimensions:
 * q.field=resource is resource_id, as in Ceilometer's v2 query_to_kwargs.
 */
export const FIELD_ALIASES: Readonly<Record<string, string>> = { resource: 'resource_id', user: 'user_id', project: 'project_id' };

/** Ceilometer's widening of the timestamp bounds, in minutes (q.field=search_offset). */
export const SEARCH_OFFSET = 'search_offset';

/**
 * resource_metadata is stored only for the keys CEILOMETER_METADATA names, as the dimensions
 * resource_metadata.KEY; Ceilometer's metadata.KEY filter names the same field. A key not kept is
 * a 400 that says so (sql.ts, statistics.ts: when no stored row has it), never an empty answer.
 */
export function metadataField(field: string): boolean {
  return field.startsWith('metadata.') || field.startsWith('resource_metadata.');
}
export const METADATA_REFUSED = 'resource_metadata is stored only for the keys CEILOMETER_METADATA names (as the dimensions resource_metadata.KEY), and no stored row has this one';

export const AGGREGATE_FUNCS = ['avg', 'sum', 'min', 'max', 'count', 'stddev', 'cardinality', 'percentile'] as const;
export type AggregateFunc = (typeof AGGREGATE_FUNCS)[number];
/** The functions that take an aggregate.param. */
export const PARAM_FUNCS: ReadonlySet<AggregateFunc> = new Set(['cardinality', 'percentile']);

export interface QueryFilter {
  field: string;
  op?: Op | string;
  value: string;
  type?: QType | string;
}

export interface Aggregate {
  func: AggregateFunc | string;
  param?: string;
}

/** What a statistics query asks for; queryStatistics() checks it the same way the HTTP API does. */
export interface StatisticsParams {
  meter: string;
  /** At most this many statistics, the first in the answer's order. */
  limit?: number;
  q?: readonly QueryFilter[];
  /** Seconds; a multiple of the stored window period. Absent: one statistics per group over the whole range. */
  period?: number;
  groupby?: readonly string[];
  aggregate?: readonly Aggregate[];
}

export interface MetersParams {
  q?: readonly QueryFilter[];
  /** At most this many meters; Ceilometer's default_api_return_limit (100) when absent. */
  limit?: number;
}

/**
 * Bounds checked before any SQL, so that no value can overflow a cast or a Date: whatever the query,
 * the answer is a 200 or a 4xx that says what is allowed.
 */
export const LIMITS = {
  /** 100 years: one bucket can hold all of the stored past, and bucket bounds stay valid dates. */
  maxPeriodSeconds: 3_155_760_000,
  /** The stored partition column is an int4. */
  minPartition: -2_147_483_648,
  maxPartition: 2_147_483_647,
  /** limit: the most results one answer may hold (the statistics API's maxResults default). */
  maxLimit: 100_000,
  /** Ceilometer's default_api_return_limit: /v2/meters without limit. */
  defaultMetersLimit: 100,
  /** Each is a bind parameter and a clause: a bound keeps the SQL (and its planning) small. */
  maxFilters: 64,
  maxGroupby: 16,
  maxAggregates: 32,
} as const;

const STATISTICS_PARAMS = new Set(['q.field', 'q.op', 'q.value', 'q.type', 'period', 'groupby', 'aggregate.func', 'aggregate.param', 'limit']);
const METERS_PARAMS = new Set(['q.field', 'q.op', 'q.value', 'q.type', 'limit', 'unique']);
const RESOURCES_PARAMS = new Set(['q.field', 'q.op', 'q.value', 'q.type', 'limit', 'meter_links']);

/** A parameter's value shown in an error: JSON-quoted, cut, so an answer never echoes a huge value. */
export function shown(v: string): string {
  return JSON.stringify(v.length > 80 ? `${v.slice(0, 77)}...` : v);
}

/** PostgreSQL text cannot hold U+0000: refused here, or the query would fail in the database. */
export function checkText(v: string, where: string): void {
  if (v.includes('\u0000')) throw new ApiError(400, `${where} contains U+0000 (NUL): text without NUL is allowed`);
}

function checkKnown(sp: URLSearchParams, allowed: ReadonlySet<string>): void {
  for (const k of new Set(sp.keys())) {
    if (!allowed.has(k)) throw new ApiError(400, `unknown parameter ${shown(k)}: allowed are ${[...allowed].join(', ')}`);
  }
  for (const [k, v] of sp) checkText(v, `parameter ${k}`);
}

function parseLimit(sp: URLSearchParams): number | undefined {
  const limits = sp.getAll('limit');
  if (limits.length > 1) throw new ApiError(400, `limit is given ${limits.length} times: give it once`);
  if (limits.length === 0) return undefined;
  const text = limits[0]!;
  const n = /^\s*\d{1,15}\s*$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= LIMITS.maxLimit)) throw new ApiError(400, `limit=${shown(text)} is not valid: a whole number from 1 to ${LIMITS.maxLimit} is allowed`);
  return n;
}

/**
 * q.field, q.op, q.value (and q.type) are parallel lists, paired by position as Ceilometer (WSME) pairs
 * them. q.op may be left out altogether (every op is eq), and so may q.type (every type is string).
 */
function parseQ(sp: URLSearchParams): QueryFilter[] {
  const fields = sp.getAll('q.field');
  const values = sp.getAll('q.value');
  const ops = sp.getAll('q.op');
  const types = sp.getAll('q.type');
  if (values.length !== fields.length) {
    throw new ApiError(400, `q.value is given ${values.length} times but q.field ${fields.length} times: each q.field needs one q.value`);
  }
  if (ops.length !== 0 && ops.length !== fields.length) {
    throw new ApiError(400, `q.op is given ${ops.length} times but q.field ${fields.length} times: give one q.op per q.field, or none (all eq)`);
  }
  if (types.length !== 0 && types.length !== fields.length) {
    throw new ApiError(400, `q.type is given ${types.length} times but q.field ${fields.length} times: give one q.type per q.field, or none (all string)`);
  }
  return fields.map((field, i) => ({ field, value: values[i]!, op: ops[i] ?? 'eq', type: types[i] ?? '' }));
}

export function parseMetersQuery(sp: URLSearchParams): MetersParams {
  checkKnown(sp, METERS_PARAMS);
  // unique: Ceilometer's flag for one entry per meter and resource, which is what every answer here is.
  for (const u of sp.getAll('unique')) {
    if (!/^(true|false|1|0|yes|no|on|off|)$/i.test(u)) throw new ApiError(400, `unique=${shown(u)} is not valid: true or false is allowed`);
  }
  const limit = parseLimit(sp);
  return limit === undefined ? { q: parseQ(sp) } : { q: parseQ(sp), limit };
}

export interface ResourcesQuery {
  q: QueryFilter[];
  limit?: number;
  meterLinks: boolean;
}

export function parseResourcesQuery(sp: URLSearchParams): ResourcesQuery {
  checkKnown(sp, RESOURCES_PARAMS);
  const links = sp.getAll('meter_links');
  if (links.length > 1) throw new ApiError(400, `meter_links is given ${links.length} times: give it once`);
  // Ceilometer's meter_links is an integer flag: 0 leaves the links to the meters out.
  if (links.length === 1 && !/^\s*\d{1,9}\s*$/.test(links[0]!)) throw new ApiError(400, `meter_links=${shown(links[0]!)} is not valid: 0 (no links to meters) or 1 is allowed`);
  const out: ResourcesQuery = { q: parseQ(sp), meterLinks: links.length === 0 || Number(links[0]) !== 0 };
  const limit = parseLimit(sp);
  if (limit !== undefined) out.limit = limit;
  return out;
}

export function parseStatisticsQuery(meter: string, sp: URLSearchParams): StatisticsParams {
  checkKnown(sp, STATISTICS_PARAMS);
  const params: StatisticsParams = { meter, q: parseQ(sp), groupby: sp.getAll('groupby') };
  const limit = parseLimit(sp);
  if (limit !== undefined) params.limit = limit;
  const periods = sp.getAll('period');
  if (periods.length > 1) throw new ApiError(400, `period is given ${periods.length} times: give it once`);
  if (periods.length === 1) {
    const text = periods[0]!;
    const n = /^\s*\d{1,15}(?:\.0*)?\s*$/.test(text) ? Number(text) : NaN;
    if (!(n >= 0 && n <= LIMITS.maxPeriodSeconds)) throw new ApiError(400, periodMessage(shown(text)));
    // period=0 is Ceilometer's "no period": one result per group over the whole range.
    if (n > 0) params.period = n;
  }
  const funcs = sp.getAll('aggregate.func');
  const fparams = sp.getAll('aggregate.param');
  // aggregate.param values go, in order, to the functions that take one (cardinality, percentile), so
  // aggregate.func=sum&aggregate.func=cardinality&aggregate.param=resource_id means what it says.
  const takers = funcs.filter((f) => PARAM_FUNCS.has(f as AggregateFunc)).length;
  if (fparams.length > takers) {
    throw new ApiError(400, `aggregate.param is given ${fparams.length} times but only ${takers} aggregate.func take one: only cardinality and percentile take an aggregate.param`);
  }
  let next = 0;
  params.aggregate = funcs.map((func) => (PARAM_FUNCS.has(func as AggregateFunc) && next < fparams.length ? { func, param: fparams[next++]! } : { func }));
  return params;
}

/** A checked filter, ready to be compiled to SQL. */
export interface CheckedFilter {
  field: string;
  op: Op;
  /** 'timestamp': ms since the epoch; 'partition' and numeric q.type: a number; else the text. */
  value: string | number;
  numeric: boolean;
  /** The q.field as given, when an alias named it (resource for resource_id): errors say what was asked. */
  asked?: string;
}

export interface CheckedAggregate {
  func: AggregateFunc;
  param?: string;
  /** percentile: the quantile in [0, 1] */
  quantile?: number;
  /** The key in the result's "aggregate" object, as Ceilometer names it: "stddev", "cardinality/resource_id". */
  key: string;
}

const TIMESTAMP_OPS: readonly Op[] = ['lt', 'le', 'ge', 'gt'];

export function periodMessage(shownValue: string): string {
  return `period=${shownValue} is not valid: a whole number of seconds up to ${LIMITS.maxPeriodSeconds} (100 years), a multiple of the stored window period (0 or none: no period)`;
}

export function checkFilters(q: readonly QueryFilter[] | undefined): CheckedFilter[] {
  if ((q ?? []).length > LIMITS.maxFilters) throw new ApiError(400, `q.field is given ${q!.length} times: at most ${LIMITS.maxFilters} filters are allowed`);
  let offsetMs = 0;
  const out = (q ?? []).map((f, i): CheckedFilter | null => {
    checkText(f.field, `q.field[${i}]`);
    checkText(f.value, `q.value[${i}]`);
    const field = f.field.startsWith('metadata.') ? `resource_${f.field}` : (FIELD_ALIASES[f.field] ?? f.field);
    const where = `q.field[${i}]=${shown(f.field)}`;
    if (field === '') throw new ApiError(400, `q.field[${i}] is empty: timestamp, topic, partition or a dimension name (project_id, resource_id, user_id, …) is allowed`);
    // An empty q.op is eq, as in Ceilometer: python-ceilometerclient sends q.op= for a filter without one.
    const op = (f.op === undefined || f.op === '' ? 'eq' : f.op) as Op;
    if (!OPS.includes(op)) throw new ApiError(400, `q.op[${i}]=${shown(String(f.op))} is not valid: one of ${OPS.join(', ')} (empty: eq)`);
    const type = (f.type ?? '') as QType;
    const timeField = field === 'timestamp' || field === SEARCH_OFFSET;
    if (!(timeField ? TIME_Q_TYPES : Q_TYPES).includes(type)) {
      throw new ApiError(400, `q.type[${i}]=${shown(String(f.type))} is not valid for ${where}: one of string, integer, float (or empty)${timeField ? ', datetime, boolean' : '; datetime and boolean only on timestamp, which is compared as a time whatever its type'}`);
    }
    if (field === SEARCH_OFFSET) {
      // Ceilometer widens the timestamp bounds by this many minutes (ge/gt earlier, lt/le later).
      const n = /^\s*\d{1,9}\s*$/.test(f.value) ? Number(f.value) : NaN;
      if (op !== 'eq' || !(n >= 0 && n <= LIMITS.maxPeriodSeconds / 60)) {
        throw new ApiError(400, `${where} with q.op=${JSON.stringify(op)} and q.value=${shown(f.value)} is not valid: q.op eq and a whole number of minutes from 0 to ${LIMITS.maxPeriodSeconds / 60} is allowed`);
      }
      offsetMs += n * 60_000;
      return null;
    }
    if (field === 'timestamp') {
      if (!TIMESTAMP_OPS.includes(op)) throw new ApiError(400, `q.op[${i}]=${JSON.stringify(op)} is not valid for ${where}: one of ${TIMESTAMP_OPS.join(', ')}`);
      let ms: number;
      try {
        ms = parseIsoTimestamp(f.value, `q.value[${i}]`);
      } catch (err) {
        throw new ApiError(400, `q.value[${i}]=${shown(f.value)} is not valid for ${where}: an ISO 8601 timestamp (UTC when it has no offset) is allowed (${(err as Error).message})`);
      }
      return { field, op, value: ms, numeric: true };
    }
    if (field === 'partition' || type === 'integer' || type === 'float') {
      const n = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/.test(f.value) ? Number(f.value) : NaN;
      const integer = field === 'partition' || type === 'integer';
      // partition is an int4 column; other integers are compared exactly only within 2^53.
      const [lo, hi] = field === 'partition' ? [LIMITS.minPartition, LIMITS.maxPartition] : [-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
      if (!Number.isFinite(n) || (integer && !(Number.isInteger(n) && n >= lo && n <= hi))) {
        const allowed = integer ? `an integer from ${lo} to ${hi}` : 'a finite number (at most about 1.8e308)';
        throw new ApiError(400, `q.value[${i}]=${shown(f.value)} is not valid for ${where}: ${allowed} is allowed`);
      }
      return { field, op, value: n, numeric: true };
    }
    return field === f.field ? { field, op, value: f.value, numeric: false } : { field, op, value: f.value, numeric: false, asked: f.field };
  });
  const filters = out.filter((f): f is CheckedFilter => f !== null);
  if (offsetMs === 0) return filters;
  // Bounds move within the stored range (1970..9999): a wider bound than that selects the same windows.
  return filters.map((f) => {
    if (f.field !== 'timestamp') return f;
    const ms = f.value as number;
    return { ...f, value: f.op === 'ge' || f.op === 'gt' ? Math.max(0, ms - offsetMs) : Math.min(MAX_TIMESTAMP_MS, ms + offsetMs) };
  });
}

export function checkGroupby(groupby: readonly string[] | undefined): string[] {
  const out = [...(groupby ?? [])];
  if (out.length > LIMITS.maxGroupby) throw new ApiError(400, `groupby is given ${out.length} times: at most ${LIMITS.maxGroupby} fields are allowed`);
  out.forEach((g, i) => {
    checkText(g, `groupby[${i}]`);
    if (g === '') throw new ApiError(400, `groupby[${i}] is empty: a dimension name (project_id, resource_id, user_id, …), topic or partition is allowed`);
    if (g === 'timestamp') throw new ApiError(400, `groupby[${i}]="timestamp" is not valid: group by time with period; a dimension name, topic or partition is allowed`);
    if (out.indexOf(g) !== i) throw new ApiError(400, `groupby[${i}]=${shown(g)} is given twice`);
  });
  return out;
}

export function checkAggregates(aggregate: readonly Aggregate[] | undefined): CheckedAggregate[] {
  const seen = new Set<string>();
  const out: CheckedAggregate[] = [];
  if ((aggregate ?? []).length > LIMITS.maxAggregates) throw new ApiError(400, `aggregate.func is given ${aggregate!.length} times: at most ${LIMITS.maxAggregates} are allowed`);
  (aggregate ?? []).forEach((a, i) => {
    if (a.param !== undefined) checkText(a.param, `aggregate.param of aggregate.func[${i}]`);
    const func = a.func as AggregateFunc;
    if (!AGGREGATE_FUNCS.includes(func)) throw new ApiError(400, `aggregate.func[${i}]=${shown(a.func)} is not valid: one of ${AGGREGATE_FUNCS.join(', ')}`);
    let c: CheckedAggregate;
    if (func === 'cardinality') {
      if (a.param === undefined || a.param === '') throw new ApiError(400, `aggregate.func[${i}]=cardinality needs an aggregate.param: a dimension name (resource_id, project_id, user_id, …), topic or partition`);
      c = { func, param: a.param, key: `cardinality/${a.param}` };
    } else if (func === 'percentile') {
      if (a.param === undefined || a.param === '') throw new ApiError(400, `aggregate.func[${i}]=percentile needs an aggregate.param: a number from 0 to 100 (95 for the 95th percentile)`);
      const p = /^\s*(?:\d+\.?\d*|\.\d+)\s*$/.test(a.param) ? Number(a.param) : NaN;
      if (!(p >= 0 && p <= 100)) throw new ApiError(400, `aggregate.param=${shown(a.param)} is not valid for aggregate.func[${i}]=percentile: a number from 0 to 100 is allowed`);
      c = { func, param: a.param.trim(), quantile: p / 100, key: `percentile/${a.param.trim()}` };
    } else {
      if (a.param !== undefined) throw new ApiError(400, `aggregate.func[${i}]=${func} takes no aggregate.param (only cardinality and percentile do)`);
      c = { func, key: func };
    }
    if (!seen.has(c.key)) out.push(c);
    seen.add(c.key);
  });
  return out;
}
