// The statistics API, in the shape of the OpenStack Ceilometer v2 API, served from the PostgreSQL
// store (streamstats_statistics). The rules it follows, where Ceilometer leaves a choice or where
// stored windows differ from raw samples:
//
// - Authentication first (tokens.ts): X-Auth-Token or Authorization: Bearer; 401 on every path
//   without a valid token. A project token's queries get "_tenant_id = its project" added; a q filter
//   on _tenant_id, project_id or project naming another project is a 403. Admin reads everything.
// - GET /v2/meters: Ceilometer Meters (name, type, unit, resource_id, project_id, user_id, source,
//   meter_id), one per distinct (name, unit, those dimensions), sorted bytewise by name, resource_id,
//   ...; optional q filters; limit (default 100, Ceilometer's default_api_return_limit).
// - GET /v2/meters/{name}/statistics: q.field/q.op/q.value (q.type optional) triples paired by
//   position; q.op may be left out altogether (all eq). Fields: `timestamp`, `topic` and `partition`
//   (the stored columns), any other name is a dimension (groupby ->> name).
// - timestamp selects whole stored windows [period_start, period_end): ge T: period_start >= T;
//   gt T: period_start > T; lt T and le T: period_end <= T (the window lies within the bound).
//   eq and ne are refused on timestamp. ISO 8601; no offset means UTC.
// - Dimensions compare as text, bytewise (q.type integer/float compares numerically). A row without
//   the dimension: ne includes it, every other op excludes it. partition compares as an integer.
// - period: seconds, a positive multiple of the stored window, at most 100 years. Buckets are aligned
//   to the epoch (not to the query's start as in Ceilometer): every stored window falls in exactly one
//   bucket, and a bucket's numbers do not depend on the query's range. period_start/period_end are the
//   bucket's. Without period (as Ceilometer): one result per group, period 0, period_start/period_end
//   = duration_start/duration_end (the first and last sample times).
// - groupby: repeatable names; results per distinct value combination (and per unit); a stored row
//   without the dimension groups under null; a name no selected row has is a 400 (Ceilometer refuses
//   unknown groupby fields). Without groupby, "groupby" is null.
// - limit: 1..100000, the first results in the answer's order (bucket, unit, groupby values).
//   Without limit, more than maxResults results is a 400.
// - aggregate.func: avg sum min max count stddev, cardinality (aggregate.param = a dimension:
//   distinct non-null values among the stored rows), percentile (aggregate.param = 0..100: from the
//   merged DDSketches, within their relative accuracy; 400 when a row of the group has no sketch).
//   aggregate.param values go, in order, to the functions that take one. Results: "aggregate":
//   {"stddev": x, "cardinality/resource_id": n, "percentile/95": v} besides the standard fields,
//   which are always there; the selectable aggregates are only in "aggregate" (Ceilometer's shape).
// - stddev is the population standard deviation (as Ceilometer), merged exactly (Chan). A merge whose
//   float8 arithmetic overflows on stored values runs again in numeric; a sum beyond float8 is null.
// - Every parameter is range-checked before SQL (params.ts LIMITS); q.type integer/float compares the
//   stored text as numeric behind an ASCII number pattern, so no stored value can fail the cast.
// - Unknown meter: 200 with [] (as Ceilometer). Other paths under /v2: 404. Not GET/HEAD: 405.
//   A query that is not allowed: 400 {"error_message": {"faultcode": "Client", "faultstring": "...", "debuginfo": null}, "error": "..."}
//   naming the parameter and what is allowed. The store down or a query past its timeout: 503.
// - Timestamps in responses as Ceilometer (WSME) writes them: naive UTC ISO 8601, six fraction
//   digits only when there is a fraction ("2020-02-11T12:00:00", "2020-02-11T12:00:00.250000").
export { createStatisticsApi, type Routes, type StatisticsApiOptions } from './routes.js';
export { loadTokens, parseTokens, requestToken, TokenFileError, TokenTable, type Scope } from './tokens.js';
export { API_DEFAULTS, parseApiConfig, type ApiConfig } from './config.js';
export { ceilometerTime, queryStatistics, statisticsSql, type Statistics } from './statistics.js';
export { listMeters, type Meter } from './meters.js';
export { DEFAULT_MAX_RESULTS, TENANT_DIMENSION, type Queryable, type QueryOptions } from './sql.js';
export { ApiError, parseMetersQuery, parseStatisticsQuery, type Aggregate, type MetersParams, type QueryFilter, type StatisticsParams } from './params.js';
