// GET /v2/resources and /v2/resources/{id}: Ceilometer's Resources, derived from the stored series.
// A resource is a resource_id among the stored rows that match q; its project_id, user_id and source
// are those of its most recent row (Ceilometer keeps the latest sample's), its first and last sample
// times the earliest duration_start and the latest duration_end of its windows, and its links point
// at itself and at the statistics of each of its meters. resource_metadata is not stored: {}.
import { ApiError, LIMITS, checkFilters, type QueryFilter } from './params.js';
import { rowSource } from './rollups.js';
import { ceilometerTime } from './statistics.js';
import { Binds, TENANT_DIMENSION, checkFieldsFound, checkLimit, scoped, whereSql, type QueryOptions, type Queryable } from './sql.js';

/** Ceilometer's v2 Resource (ceilometer/api/controllers/v2/resources.py). */
export interface Resource {
  resource_id: string;
  project_id: string | null;
  user_id: string | null;
  source: string | null;
  first_sample_timestamp: string;
  last_sample_timestamp: string;
  metadata: Record<string, string>;
  links: Array<{ href: string; rel: string }>;
}

export interface ResourcesParams {
  q?: readonly QueryFilter[];
  /** At most this many resources; Ceilometer's default_api_return_limit (100) when absent. */
  limit?: number;
  /** Links to the resource's meters (Ceilometer's meter_links, default on). */
  meterLinks?: boolean;
}

interface ResourceRow {
  resource_id: string;
  project_id: string | null;
  user_id: string | null;
  source: string | null;
  first: number;
  last: number;
  meters: string[];
}

/** The latest row's value of a dimension (ties: bytewise last, so the answer never depends on the plan). */
const latest = (expr: string): string => `(array_agg(${expr} ORDER BY duration_end DESC, ${expr} COLLATE "C" DESC NULLS LAST))[1]`;

export async function listResources(db: Queryable, params: ResourcesParams, baseUrl: string, opts: QueryOptions = {}, checkFields = true): Promise<Resource[]> {
  const filters = scoped(checkFilters(params.q), opts.scope);
  checkLimit(params.limit);
  const b = new Binds();
  const where = whereSql(filters, b);
  const limit = b.add(params.limit ?? LIMITS.defaultMetersLimit, '::int');
  const src = rowSource(undefined, filters, where, b);
  const { rows } = await db.query<ResourceRow>(
    `SELECT groupby ->> 'resource_id' AS resource_id,
      ${latest(`coalesce(groupby ->> '${TENANT_DIMENSION}', groupby ->> 'project_id')`)} AS project_id,
      ${latest("groupby ->> 'user_id'")} AS user_id, ${latest("groupby ->> 'source'")} AS source,
      date_part('epoch', min(duration_start)) * 1000 AS first, date_part('epoch', max(duration_end)) * 1000 AS last,
      array_agg(DISTINCT name COLLATE "C" ORDER BY name COLLATE "C") AS meters
    FROM ${src} WHERE groupby ? 'resource_id' GROUP BY 1 ORDER BY (groupby ->> 'resource_id') COLLATE "C" LIMIT ${limit}`,
    b.values,
  );
  if (rows.length === 0 && checkFields) await checkFieldsFound(db, filters, undefined);
  return rows.map((r) => {
    const id = encodeURIComponent(r.resource_id);
    const links = [{ href: `${baseUrl}/v2/resources/${id}`, rel: 'self' }];
    if (params.meterLinks !== false) {
      for (const m of r.meters) links.push({ href: `${baseUrl}/v2/meters/${encodeURIComponent(m)}?q.field=resource_id&q.value=${id}`, rel: m });
    }
    return {
      resource_id: r.resource_id,
      project_id: r.project_id,
      user_id: r.user_id,
      source: r.source,
      first_sample_timestamp: ceilometerTime(r.first),
      last_sample_timestamp: ceilometerTime(r.last),
      metadata: {},
      links,
    };
  });
}

/** One resource, or a 404 as Ceilometer answers an unknown (or, for a project token, foreign) one. */
export async function getResource(db: Queryable, id: string, baseUrl: string, opts: QueryOptions = {}): Promise<Resource> {
  const [r] = await listResources(db, { q: [{ field: 'resource_id', op: 'eq', value: id }], limit: 1 }, baseUrl, opts, false);
  if (r === undefined) throw new ApiError(404, `Resource ${JSON.stringify(id.slice(0, 200))} Not Found`);
  return r;
}
