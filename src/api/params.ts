// The statistics API's parameters, in the query syntax of the OpenStack Ceilometer v2 API, parsed and
// checked before any SQL is built. Every rejection is an ApiError (HTTP 400) whose message names the
// parameter, the value and what is allowed.
import { parseIsoTimestamp } from '../core/record.js';

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
  q?: readonly QueryFilter[];
  /** Seconds; a multiple of the stored window period. Absent: one statistics per group over the whole range. */
  period?: number;
  groupby?: readonly string[];
  aggregate?: readonly Aggregate[];
}

export interface MetersParams {
  q?: readonly QueryFilter[];
}

const STATISTICS_PARAMS = new Set(['q.field', 'q.op', 'q.value', 'q.type', 'period', 'groupby', 'aggregate.func', 'aggregate.param']);
const METERS_PARAMS = new Set(['q.field', 'q.op', 'q.value', 'q.type']);

function checkKnown(sp: URLSearchParams, allowed: ReadonlySet<string>): void {
  for (const k of new Set(sp.keys())) {
    if (!allowed.has(k)) throw new ApiError(400, `unknown parameter ${JSON.stringify(k)}: allowed are ${[...allowed].join(', ')}`);
  }
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
  return { q: parseQ(sp) };
}

export function parseStatisticsQuery(meter: string, sp: URLSearchParams): StatisticsParams {
  checkKnown(sp, STATISTICS_PARAMS);
  const params: StatisticsParams = { meter, q: parseQ(sp), groupby: sp.getAll('groupby') };
  const periods = sp.getAll('period');
  if (periods.length > 1) throw new ApiError(400, `period is given ${periods.length} times: give it once`);
  if (periods.length === 1) {
    const text = periods[0]!;
    const n = /^\s*\d+(?:\.0*)?\s*$/.test(text) ? Number(text) : NaN;
    if (!(n > 0)) throw new ApiError(400, `period=${JSON.stringify(text)} is not valid: a positive whole number of seconds, a multiple of the stored window period`);
    params.period = n;
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

export function checkFilters(q: readonly QueryFilter[] | undefined): CheckedFilter[] {
  return (q ?? []).map((f, i) => {
    const where = `q.field[${i}]=${JSON.stringify(f.field)}`;
    if (f.field === '') throw new ApiError(400, `q.field[${i}] is empty: timestamp, topic, partition or a dimension name (project_id, resource_id, user_id, …) is allowed`);
    const op = (f.op ?? 'eq') as Op;
    if (!OPS.includes(op)) throw new ApiError(400, `q.op[${i}]=${JSON.stringify(f.op)} is not valid: one of ${OPS.join(', ')}`);
    const type = (f.type ?? '') as QType;
    if (!Q_TYPES.includes(type)) throw new ApiError(400, `q.type[${i}]=${JSON.stringify(f.type)} is not valid: one of string, integer, float (or empty)`);
    if (f.field === 'timestamp') {
      if (!TIMESTAMP_OPS.includes(op)) throw new ApiError(400, `q.op[${i}]=${JSON.stringify(op)} is not valid for ${where}: one of ${TIMESTAMP_OPS.join(', ')}`);
      let ms: number;
      try {
        ms = parseIsoTimestamp(f.value, `q.value[${i}]`);
      } catch (err) {
        throw new ApiError(400, `q.value[${i}]=${JSON.stringify(f.value)} is not valid for ${where}: an ISO 8601 timestamp (UTC when it has no offset) is allowed (${(err as Error).message})`);
      }
      return { field: f.field, op, value: ms, numeric: true };
    }
    if (f.field === 'partition' || type === 'integer' || type === 'float') {
      const n = /^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/.test(f.value) ? Number(f.value) : NaN;
      const integer = f.field === 'partition' || type === 'integer';
      if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) {
        throw new ApiError(400, `q.value[${i}]=${JSON.stringify(f.value)} is not valid for ${where}: ${integer ? 'an integer' : 'a number'} is allowed`);
      }
      return { field: f.field, op, value: n, numeric: true };
    }
    return { field: f.field, op, value: f.value, numeric: false };
  });
}

export function checkGroupby(groupby: readonly string[] | undefined): string[] {
  const out = [...(groupby ?? [])];
  out.forEach((g, i) => {
    if (g === '') throw new ApiError(400, `groupby[${i}] is empty: a dimension name (project_id, resource_id, user_id, …), topic or partition is allowed`);
    if (g === 'timestamp') throw new ApiError(400, `groupby[${i}]="timestamp" is not valid: group by time with period; a dimension name, topic or partition is allowed`);
    if (out.indexOf(g) !== i) throw new ApiError(400, `groupby[${i}]=${JSON.stringify(g)} is given twice`);
  });
  return out;
}

export function checkAggregates(aggregate: readonly Aggregate[] | undefined): CheckedAggregate[] {
  const seen = new Set<string>();
  const out: CheckedAggregate[] = [];
  (aggregate ?? []).forEach((a, i) => {
    const func = a.func as AggregateFunc;
    if (!AGGREGATE_FUNCS.includes(func)) throw new ApiError(400, `aggregate.func[${i}]=${JSON.stringify(a.func)} is not valid: one of ${AGGREGATE_FUNCS.join(', ')}`);
    let c: CheckedAggregate;
    if (func === 'cardinality') {
      if (a.param === undefined || a.param === '') throw new ApiError(400, `aggregate.func[${i}]=cardinality needs an aggregate.param: a dimension name (resource_id, project_id, user_id, …), topic or partition`);
      c = { func, param: a.param, key: `cardinality/${a.param}` };
    } else if (func === 'percentile') {
      if (a.param === undefined || a.param === '') throw new ApiError(400, `aggregate.func[${i}]=percentile needs an aggregate.param: a number from 0 to 100 (95 for the 95th percentile)`);
      const p = /^\s*(?:\d+\.?\d*|\.\d+)\s*$/.test(a.param) ? Number(a.param) : NaN;
      if (!(p >= 0 && p <= 100)) throw new ApiError(400, `aggregate.param=${JSON.stringify(a.param)} is not valid for aggregate.func[${i}]=percentile: a number from 0 to 100 is allowed`);
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
