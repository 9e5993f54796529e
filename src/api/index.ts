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
//   (the stored columns), `search_offset` (minutes that widen the timestamp bounds, as Ceilometer),
//   Ceilometer's aliases `resource`, `user`, `project` (= resource_id, user_id, project_id); any
//   other name is a dimension (groupby ->> name). When an answer is empty, a dimension that no stored
//   row of the meter has is a 400 (Ceilometer: "unrecognized field in query"), not []. metadata.KEY
//   is the dimension resource_metadata.KEY, stored for the keys CEILOMETER_METADATA names; another
//   key (filter or groupby) is a 400 that says so.
// - timestamp selects whole stored windows [period_start, period_end): ge T: period_start >= T;
//   gt T: period_start > T; lt T and le T: period_end <= T (the window lies within the bound).
//   eq and ne are refused on timestamp. ISO 8601; no offset means UTC; q.type is ignored there
//   (datetime and boolean included, as Ceilometer ignores it). Every statistics answer says so in
//   x-streamstats-timestamp-bounds: whole-windows.
// - Dimensions compare as text, bytewise (q.type integer/float compares numerically). A row without
//   the dimension: ne includes it, every other op excludes it. partition compares as an integer.
// - period: seconds, a positive multiple of the stored window, at most 100 years; 0 is no period (as
//   Ceilometer). Buckets are aligned to the epoch (not to the query's start as in Ceilometer; stated in
//   x-streamstats-period-alignment: epoch): every stored window falls in exactly one
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
// - Numbers as Ceilometer types them: avg, sum, min, max, duration and aggregate values are JSON
//   floats (5.0 for a whole number), count and period integers.
// - GET /v2/resources[/{id}]: one Resource per stored resource_id (its latest row's project, user and
//   source, first and last sample times, links to itself and its meters; metadata {}); an unknown or
//   foreign id is a 404. GET /v2/capabilities: Ceilometer's capability names, true where answered.
// - Raw samples (GET /v2/meters/{name}, /v2/samples[/{id}], /v2/query/samples) are not stored: 501
//   with the reason, never a 404 (openstack4j reads a 404 as an empty list).
// - Unknown meter: 200 with [] (as Ceilometer). Other paths under /v2: 404. Not GET/HEAD: 405.
//   A query that is not allowed: 400 {"error_message": {"faultcode": "Client", "faultstring": "...", "debuginfo": null}, "error": "..."}
//   naming the parameter and what is allowed. The store down or a query past its timeout: 503.
// - Load: answers are admitted per token (fair.ts: a share of the connections each, bounded waiters;
//   over them a 503 with Retry-After for that token only), bounded per query (maxResults, the sketch
//   buckets it reads: 400 beyond) and streamed with backpressure (routes.ts: a client that takes no
//   byte for API_SEND_TIMEOUT_SECONDS is disconnected).
// - Timestamps in responses as Ceilometer (WSME) writes them: naive UTC ISO 8601, six fraction
//   digits only when there is a fraction ("2020-02-11T12:00:00", "2020-02-11T12:00:00.250000").
export { createStatisticsApi, type Routes, type StatisticsApiOptions } from './routes.js';
export { loadTokens, parseTokens, requestToken, TokenFileError, TokenTable, type Scope } from './tokens.js';
export { API_DEFAULTS, parseApiConfig, type ApiConfig, type ApiLimits } from './config.js';
export { ceilometerTime, queryStatistics, statisticsJson, statisticsSql, type Statistics } from './statistics.js';
export { listMeters, type Meter } from './meters.js';
export { getResource, listResources, type Resource, type ResourcesParams } from './resources.js';
export { CAPABILITIES, DIFFERENCE_HEADERS } from './routes.js';
export { DEFAULT_MAX_RESULTS, TENANT_DIMENSION, type Queryable, type QueryOptions } from './sql.js';
export { ApiError, parseMetersQuery, parseResourcesQuery, parseStatisticsQuery, type Aggregate, type MetersParams, type QueryFilter, type StatisticsParams } from './params.js';
