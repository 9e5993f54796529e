// The statistics API, in the shape of the OpenStack Ceilometer v2 API, served from the PostgreSQL
// store (streamstats_statistics). The rules it follows, where Ceilometer leaves a choice or where
// stored windows differ from raw samples:
//
// - GET /v2/meters: [{"name","unit"}], distinct, sorted bytewise by name then unit; optional q filters.
// - GET /v2/meters/{name}/statistics: q.field/q.op/q.value (q.type optional) triples paired by
//   position; q.op may be left out altogether (all eq). Fields: `timestamp`, `topic` and `partition`
//   (the stored columns), any other name is a dimension (groupby ->> name).
// - timestamp selects whole stored windows [period_start, period_end): ge T: period_start >= T;
//   gt T: period_start > T; lt T and le T: period_end <= T (the window lies within the bound).
//   eq and ne are refused on timestamp. ISO 8601; no offset means UTC.
// - Dimensions compare as text, bytewise (q.type integer/float compares numerically). A row without
//   the dimension: ne includes it, every other op excludes it. partition compares as an integer.
// - period: seconds, a positive multiple of the stored window. Buckets are aligned to the epoch (not
//   to the query's start as in Ceilometer): every stored window falls in exactly one bucket, and a
//   bucket's numbers do not depend on the query's range. period_start/period_end are the bucket's.
//   Without period: one result per group, period_start/period_end = first window start/last window
//   end of its rows, period = their distance in seconds.
// - groupby: repeatable names; results per distinct value combination (and per unit); a stored row
//   without the dimension groups under null. Without groupby, "groupby" is null.
// - aggregate.func: avg sum min max count stddev, cardinality (aggregate.param = a dimension:
//   distinct non-null values among the stored rows), percentile (aggregate.param = 0..100: from the
//   merged DDSketches, within their relative accuracy; 400 when a row of the group has no sketch).
//   aggregate.param values go, in order, to the functions that take one. Results: "aggregate":
//   {"stddev": x, "cardinality/resource_id": n, "percentile/95": v} besides the standard fields.
// - stddev is the population standard deviation (as Ceilometer), merged exactly (Chan).
// - Unknown meter: 200 with [] (as Ceilometer). Other paths under /v2: 404. Not GET/HEAD: 405.
//   A query that is not allowed: 400 {"error": "..."} naming the parameter and what is allowed.
// - Timestamps in responses: ISO 8601 UTC with milliseconds ("2020-02-11T12:00:00.000Z").
export { createStatisticsApi, type Routes, type StatisticsApiOptions } from './routes.js';
export { loadTokens, parseTokens, requestToken, TokenFileError, TokenTable, type Scope } from './tokens.js';
export { API_DEFAULTS, parseApiConfig, type ApiConfig } from './config.js';
export { ceilometerTime, DEFAULT_MAX_RESULTS, listMeters, TENANT_DIMENSION, queryStatistics, statisticsSql, type Meter, type Queryable, type QueryOptions, type Statistics } from './statistics.js';
export { ApiError, parseMetersQuery, parseStatisticsQuery, type Aggregate, type MetersParams, type QueryFilter, type StatisticsParams } from './params.js';
