// GET /v2/meters: Ceilometer's Meter objects from the stored rows' dimensions.
import { TABLES } from '../sinks/postgres/schema.js';
import { LIMITS, checkFilters, type MetersParams } from './params.js';
import { Binds, TENANT_DIMENSION, checkFieldsFound, checkLimit, scoped, whereSql, type QueryOptions, type Queryable } from './sql.js';

/** Ceilometer's v2 Meter: one per meter name and resource, with what the stored dimensions hold. */
export interface Meter {
  name: string;
  /** gauge, delta or cumulative: the counter_type dimension (FORMAT=ceilometer keeps it); null without one. */
  type: string | null;
  unit: string | null;
  resource_id: string | null;
  project_id: string | null;
  user_id: string | null;
  source: string | null;
  /** base64 of "resource_id+name", as Ceilometer makes it. */
  meter_id: string;
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
  if (rows.length === 0) await checkFieldsFound(db, filters, undefined);
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
