// Never a 5xx: a fast-check property over the statistics API's query grammar (paths, q triples,
// period, groupby, aggregate, limit, tokens, broken percent-encoding) against the real PostgreSQL,
// whose stored rows hold hostile values (dimensions "1e999", "NaN", full-width digits, 255-character
// values, SQL and JSON metacharacters; extreme partitions). Then the cases that once answered 500, one by one.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import pg from 'pg';
import t from 'tap';
import type { Statistics } from '../../src/api/index.js';
import { startApi, rowsOf, type RawSample } from '../fixtures/ceilometer/store.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const ADMIN = 'admin-0123456789abcdef0123';
const P1 = 'p1-tok-0123456789abcdef0123';
const TOKENS = `${ADMIN} admin\n${P1} project:p1\n`;
const T0 = Date.parse('2020-02-11T12:00:00Z');

/** Stored dimension values a numeric or text filter must survive. */
const HOSTILE_VALUES = [
  '1e999', '-1e999', '1e-999', '1E308', '1e309', 'NaN', 'Infinity', '-Infinity', '１２', '٣', ' 5 ', '\t7', '5\n', '1e', '.', '-', '+.5', '0x10',
  '99999999999999999999999999999999', '', ' ', "'; DROP TABLE streamstats_series; --", '"\\', '%00', '%', 'é'.repeat(127), 'x'.repeat(255), '😀', '\u202e',
];
const NAMES = ['cpu', 'we/ird %name', 'é', ' ', '1e999', 'x'.repeat(255)];

function samples(): RawSample[] {
  const out: RawSample[] = [];
  HOSTILE_VALUES.forEach((v, i) => {
    for (const name of NAMES) {
      out.push({
        name,
        unit: i % 4 === 0 ? null : i % 4 === 1 ? '%' : v.slice(0, 50),
        dims: { _tenant_id: i % 2 === 0 ? 'p1' : 'p2', flavor: v, resource_id: `r${i % 3}`, [v === '' ? 'empty' : `k${v.slice(0, 30)}`]: v },
        topic: i % 3 === 0 ? 'metrics' : v.slice(0, 40),
        partition: [0, -1, 2_147_483_647, 1][i % 4]!,
        ts: T0 + (i % 7) * 60_000 + i * 1000,
        value: [0, -1e300, 1e300, 5e-324, -0, 123.456][i % 6]!,
      });
    }
  });
  return out;
}

const FIELDS = ['timestamp', 'topic', 'partition', 'flavor', 'resource_id', 'project_id', '_tenant_id', 'project', 'user_id', 'k1e999', 'nope', '', ' ', '\u0000', '%00', 'é', 'x'.repeat(300)];
const VALUES = [
  '0', '-1', '1', '1e308', '-1e308', '1e309', '99999999999', '2147483648', '-2147483649', '9007199254740993', '6e14', '600000000000000', '1.5', '.5', '5.', '+3', '1e999',
  'NaN', 'Infinity', '-0', '0x10', '', ' ', 'p1', 'p2', 'r0', '\u0000', 'a\u0000b', '%00', '%', '2020-02-11T12:00:00', '2020-02-11T12:00:00Z', '2020-02-11T12:00:00.123456+05:30',
  '2020-02-30T00:00:00', '+275760-09-13T00:00:00Z', '9999-12-31T23:59:59Z', '10000-01-01T00:00:00', '0000-01-01T00:00:00', '1969-12-31T23:59:59Z', '2020-13-01', 'now', ...HOSTILE_VALUES,
];
const OPS = ['lt', 'le', 'eq', 'ne', 'ge', 'gt', 'like', '', 'EQ', '='];
const TYPES = ['', 'string', 'integer', 'float', 'boolean', 'datetime', 'int'];
const PERIODS = ['0', '1', '60', '61', '120', '3600', '-60', '60.0', '60.5', '1e3', '6e14', '600000000000000', '3155760000', '3155760060', '99999999999999999999', 'abc', '', ' 60 ', 'NaN', 'Infinity'];
const FUNCS = ['avg', 'sum', 'min', 'max', 'count', 'stddev', 'cardinality', 'percentile', 'median', '', 'AVG'];
const PARAMS = ['resource_id', 'flavor', '_tenant_id', 'topic', 'partition', 'nope', '0', '50', '95', '100', '100.5', '-1', '1e2', 'NaN', '', '\u0000', ...HOSTILE_VALUES.slice(0, 8)];
const LIMITS = ['1', '2', '100', '100000', '100001', '0', '-1', '1e3', '99999999999999999999', 'abc', ''];

const pick = (xs: readonly string[]) => fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...xs) }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) });

/** A well-formed-looking query: q triples of equal counts, so the checks past the parser are reached too. */
const structured = fc.record({
  q: fc.array(fc.record({ field: pick(FIELDS), op: pick(OPS), value: pick(VALUES), type: pick(TYPES) }), { maxLength: 4 }),
  withOps: fc.boolean(),
  withTypes: fc.boolean(),
  period: fc.option(pick(PERIODS), { nil: undefined }),
  groupby: fc.array(pick(FIELDS), { maxLength: 3 }),
  aggregate: fc.array(fc.record({ func: pick(FUNCS), param: fc.option(pick(PARAMS), { nil: undefined }) }), { maxLength: 4 }),
  limit: fc.option(pick(LIMITS), { nil: undefined }),
}).map((r) => {
  const pairs: Array<[string, string]> = [];
  for (const q of r.q) {
    pairs.push(['q.field', q.field], ['q.value', q.value]);
    if (r.withOps) pairs.push(['q.op', q.op]);
    if (r.withTypes) pairs.push(['q.type', q.type]);
  }
  if (r.period !== undefined) pairs.push(['period', r.period]);
  for (const g of r.groupby) pairs.push(['groupby', g]);
  for (const a of r.aggregate) {
    pairs.push(['aggregate.func', a.func]);
    if (a.param !== undefined) pairs.push(['aggregate.param', a.param]);
  }
  if (r.limit !== undefined) pairs.push(['limit', r.limit]);
  return new URLSearchParams(pairs).toString();
});

/** Queries of valid parts only, so that most reach the database: the stored hostile values are met there. */
const plausible = fc.record({
  q: fc.array(fc.record({
    field: fc.constantFrom('flavor', 'resource_id', 'topic', 'partition', 'timestamp', 'k1e999', '_tenant_id'),
    op: fc.constantFrom('lt', 'le', 'eq', 'ne', 'ge', 'gt'),
    value: fc.constantFrom('0', '1', '-1', '1e308', '5', 'r0', 'p1', '2020-02-11T12:03:00', ...HOSTILE_VALUES.slice(0, 12)),
    type: fc.constantFrom('', 'string', 'integer', 'float'),
  }), { maxLength: 3 }),
  period: fc.option(fc.constantFrom('60', '120', '600', '3600', '86400', '3155760000'), { nil: undefined }),
  groupby: fc.uniqueArray(fc.constantFrom('flavor', 'resource_id', 'topic', 'partition', '_tenant_id', 'k1e999'), { maxLength: 2 }),
  aggregate: fc.array(fc.oneof(
    fc.constantFrom('avg', 'sum', 'min', 'max', 'count', 'stddev').map((func) => [func] as const),
    fc.constantFrom('flavor', 'resource_id', 'partition').map((param) => ['cardinality', param] as const),
    fc.constantFrom('0', '50', '99.9', '100').map((param) => ['percentile', param] as const),
  ), { maxLength: 3 }),
  limit: fc.option(fc.constantFrom('1', '3', '100000'), { nil: undefined }),
}).map((r) => {
  const pairs: Array<[string, string]> = [];
  for (const q of r.q) pairs.push(['q.field', q.field], ['q.op', q.field === 'timestamp' && (q.op === 'eq' || q.op === 'ne') ? 'ge' : q.op], ['q.value', q.value], ['q.type', q.type]);
  if (r.period !== undefined) pairs.push(['period', r.period]);
  for (const g of r.groupby) pairs.push(['groupby', g]);
  for (const a of r.aggregate) {
    pairs.push(['aggregate.func', a[0]]);
    if (a.length === 2) pairs.push(['aggregate.param', a[1]]);
  }
  if (r.limit !== undefined) pairs.push(['limit', r.limit]);
  return new URLSearchParams(pairs).toString();
});

/** Any pairs, in any count, and raw text with broken percent-encoding. */
const KEYS = ['q.field', 'q.op', 'q.value', 'q.type', 'period', 'groupby', 'aggregate.func', 'aggregate.param', 'limit', 'unique', 'start', ''];
const loose = fc.oneof(
  fc.array(fc.tuple(pick(KEYS), pick([...VALUES, ...PERIODS, ...FUNCS])), { maxLength: 8 }).map((pairs) => new URLSearchParams(pairs).toString()),
  fc.array(fc.constantFrom('%', '%0', '%ZZ', '%00', '%C3', '%ED%A0%80', '%FF', '&', '=', '+', 'q.field=', 'period=', '&&', ';', '#', 'a'), { maxLength: 10 }).map((xs) => xs.join('')),
);

const METERS = [...NAMES.map(encodeURIComponent), '%00', '%', '%ZZ', 'a%00b', '%ED%A0%80', '..', '.', '%2F', 'cpu%2Fx', encodeURIComponent('\u0000')];
const path = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.oneof({ weight: 3, arbitrary: fc.constantFrom('cpu', encodeURIComponent('we/ird %name')) }, fc.constantFrom(...METERS), fc.string({ maxLength: 10 }).map(encodeURIComponent)), fc.oneof({ weight: 3, arbitrary: plausible }, structured, loose)).map(([m, q]) => `/v2/meters/${m}/statistics?${q}`) },
  { weight: 2, arbitrary: fc.oneof(structured, loose).map((q) => `/v2/meters?${q}`) },
  { weight: 1, arbitrary: fc.constantFrom('/v2', '/v2/', '/v2/meters/', '/v2/meters/cpu', '/v2/meters/cpu/statistics/', '/v2/resources', '//v2/meters', '/v2/meters/%/statistics', '/', '/v2/meters/cpu/statistics?' + 'x'.repeat(6000)) },
);

t.test('no request gets a 5xx: a property over the query grammar, stored data with hostile values', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rows = rowsOf(samples());
  t.same((await sink.write({ rows, ndjson: () => '' })).rejected, [], 'every hostile row is stored');
  const api = await startApi(t, pool, TOKENS);
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(path, fc.constantFrom(ADMIN, ADMIN, P1, null), fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST'), async (p, token, method) => {
      const res = await api.get(p, token, { method });
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      // 501 is the answer for raw samples (GET /v2/meters/{name}), which are not stored: deliberate, with a reason.
      const samplesPath = res.status === 501 && (method === 'HEAD' || /raw samples are not stored/.test(String((res.body as { error?: unknown }).error)));
      if (res.status >= 500 && !samplesPath) throw new Error(`${method} ${p} (token ${token === null ? 'none' : token === ADMIN ? 'admin' : 'p1'}): ${res.status} ${JSON.stringify(res.body)}`);
      if (token === null && res.status !== 401) throw new Error(`${p}: ${res.status} without a token`);
      if (res.status === 200 && method === 'GET' && !Array.isArray(res.body)) throw new Error(`${p}: 200 without a JSON array`);
      if (res.status >= 400 && method === 'GET' && typeof (res.body as { error?: unknown }).error !== 'string') throw new Error(`${p}: ${res.status} without an error message`);
    }),
    { numRuns: Number(process.env['API_PROPERTY_RUNS'] ?? 1000), seed: Number(process.env['API_PROPERTY_SEED'] ?? 20261201) },
  );
  const statuses = Object.fromEntries([...seen].sort(([a], [b]) => a - b));
  t.comment(`statuses over the runs: ${JSON.stringify(statuses)}`);
  t.ok((seen.get(200) ?? 0) > 20, 'many queries reach the database and answer 200');
  t.ok((seen.get(400) ?? 0) > 20, 'many are refused with a 400');
  t.ok((seen.get(401) ?? 0) > 20, 'requests without a token: 401');
  t.notOk([...seen.keys()].some((s) => s >= 500 && s !== 501), 'no 5xx but the 501 of raw samples');
});

t.test('a store that cannot be reached: 503 that says so, not a 500', async (t) => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const down = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test`, max: 1 });
  down.on('error', () => {});
  t.teardown(() => down.end());
  const api = await startApi(t, down, TOKENS);
  for (const p of ['/v2/meters', '/v2/meters/cpu/statistics']) {
    const res = await api.get(p, ADMIN);
    t.equal(res.status, 503, `${p}: 503`);
    t.match(res.body, { error: /^the statistics store is unavailable or the query took too long/ });
  }
});

t.test('queries that once answered 500 are 400s or answers', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const raw = samples();
  t.same((await sink.write({ rows: rowsOf(raw), ndjson: () => '' })).rejected, [], 'every hostile row is stored');
  const api = await startApi(t, pool, TOKENS);
  const get = (p: string) => api.get(p, ADMIN);
  const cases: Array<[string, string, RegExp]> = [
    ['period 6e14 (bigint overflow, invalid time)', '/v2/meters/cpu/statistics?period=600000000000000', /^period="600000000000000" is not valid: a whole number of seconds up to 3155760000 \(100 years\)/],
    ['period 1e20', '/v2/meters/cpu/statistics?period=99999999999999999999', /^period="9999999999999999999\d*" is not valid/],
    ['partition 99999999999 (int4 cast)', '/v2/meters/cpu/statistics?q.field=partition&q.value=99999999999', /^q\.value\[0\]="99999999999" is not valid for q\.field\[0\]="partition": an integer from -2147483648 to 2147483647 is allowed$/],
    ['partition 1e308', '/v2/meters/cpu/statistics?q.field=partition&q.value=1e308', /an integer from -2147483648 to 2147483647/],
    ['integer beyond 2^53', '/v2/meters/cpu/statistics?q.field=flavor&q.type=integer&q.value=9007199254740993', /an integer from -9007199254740991 to 9007199254740991/],
    ['float 1e309', '/v2/meters/cpu/statistics?q.field=flavor&q.type=float&q.value=1e309', /a finite number/],
    ['meter name %00', '/v2/meters/%00/statistics', /^the meter name contains U\+0000 \(NUL\)/],
    ['q.value with NUL', '/v2/meters/cpu/statistics?q.field=flavor&q.value=a%00b', /^parameter q\.value contains U\+0000 \(NUL\)/],
    ['groupby with NUL', '/v2/meters/cpu/statistics?groupby=%00', /^parameter groupby contains U\+0000/],
    ['huge limit', '/v2/meters/cpu/statistics?limit=99999999999999999999', /^limit="99999999999999999999" is not valid: a whole number from 1 to 100000 is allowed$/],
    ['limit 0', '/v2/meters?limit=0', /^limit="0" is not valid/],
    ['timestamp beyond year 9999', '/v2/meters/cpu/statistics?q.field=timestamp&q.op=ge&q.value=%2B275760-09-13T00:00:00Z', /is not valid for q\.field\[0\]="timestamp"/],
    ['too many filters', `/v2/meters/cpu/statistics?${'q.field=flavor&q.value=x&'.repeat(65)}`, /^q\.field is given 65 times: at most 64 filters are allowed$/],
  ];
  for (const [label, p, message] of cases) {
    const res = await get(p);
    t.equal(res.status, 400, `${label}: 400`);
    t.match(res.body, { error: message }, `${label}: ${JSON.stringify(res.body)}`);
  }
  // A stored "1e999" no longer fails every numeric filter on its dimension: it compares as the number it is.
  const cpu = raw.filter((s) => s.name === 'cpu');
  // The stored values each filter selects, as numeric compares them (ASCII numbers only, spaces around
  // allowed; "5\n", "\t7", full-width and Arabic-Indic digits, NaN and Infinity are no numbers).
  for (const [op, value, type, want] of [
    ['gt', '1e308', 'float', ['1e309', '1e999']],
    ['lt', '-1e308', 'float', ['-1e999']],
    ['eq', '5', 'integer', [' 5 ']],
    ['ge', '0', 'float', [' 5 ', '+.5', '1E308', '1e-999', '1e309', '1e999', '99999999999999999999999999999999']],
    ['le', '1e-300', 'float', ['-1e999', '1e-999']],
  ] as const) {
    const res = await get(`/v2/meters/cpu/statistics?q.field=flavor&q.op=${op}&q.type=${type}&q.value=${value}&groupby=flavor`);
    t.equal(res.status, 200, `flavor ${op} ${value} (${type}): 200 over stored "1e999"`);
    const got = (res.body as Statistics[]).map((s) => s.groupby!['flavor']).sort();
    t.same(got, [...want].sort(), `flavor ${op} ${value} (${type}): ${JSON.stringify(got)}`);
    t.equal((res.body as Statistics[]).reduce((a, s) => a + s.count, 0), cpu.filter((s) => (want as readonly string[]).includes(s.dims['flavor']!)).length, 'counts');
  }
  // Values 1e300 and -1e300 in one group: squared deviations beyond float8, which PostgreSQL refuses
  // with an error; the merge runs again in numeric and answers.
  const extreme = await get('/v2/meters/cpu/statistics?aggregate.func=stddev&groupby=resource_id&period=3600');
  t.equal(extreme.status, 200, 'extreme stored values: 200');
  const huge = rowsOf([
    { name: 'huge', unit: 'B', dims: { _tenant_id: 'p1' }, ts: T0, value: 1.5e308 },
    { name: 'huge', unit: 'B', dims: { _tenant_id: 'p1' }, ts: T0 + 60_000, value: 1.5e308 },
    { name: 'huge', unit: 'B', dims: { _tenant_id: 'p1' }, ts: T0 + 120_000, value: -1e308 },
  ]);
  t.same((await sink.write({ rows: huge, ndjson: () => '' })).rejected, []);
  const h = await get('/v2/meters/huge/statistics?aggregate.func=stddev&aggregate.func=sum');
  t.equal(h.status, 200, 'a sum beyond float8: 200');
  const hs = (h.body as Statistics[])[0]!;
  t.equal(hs.count, 3);
  t.equal(hs.max, 1.5e308);
  t.equal(hs.min, -1e308);
  t.equal(hs.sum, null, 'a sum beyond float8 (2e308) is null: Infinity has no JSON');
  t.equal(hs.aggregate!['stddev'], null, 'so is its stddev');
});
