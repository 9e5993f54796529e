// The statistics API against the real PostgreSQL: rows are written through PostgresSink from generated
// raw samples spread over partitions, topics and windows, and every answer of the HTTP API is compared
// with a straightforward computation on the raw samples (filters, period buckets, groupby, stddev,
// cardinality, percentiles within the sketch's relative accuracy). Every 400 is checked with its message.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { ceilometerTime, createStatisticsApi, parseTokens, queryStatistics, type Statistics } from '../../src/api/index.js';
import { Sketch } from '../../src/core/sketch.js';
import { ApiServer } from '../../src/http/api-server.js';
import { HttpServer } from '../../src/http/server.js';
import type { StatsRow } from '../../src/windows/row.js';
import { Rng } from '../fixtures/gen.js';
import { rowsOf } from '../fixtures/ceilometer/store.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const W = 60_000; // stored window
// 12:01, not 12:00: the first 180 s bucket (epoch-aligned, 12:00..12:03) holds only two windows.
const T0 = Date.parse('2020-02-11T12:01:00Z');
const WINDOWS = 12;
const ALPHA = 0.01;
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';

interface Sample {
  name: string;
  unit: string | null;
  dims: Record<string, string>;
  topic: string;
  partition: number;
  ts: number;
  value: number;
}

const RESOURCES: Array<Record<string, string>> = [
  { resource_id: 'r0', project_id: 'p0', user_id: 'u0' },
  { resource_id: 'r1', project_id: 'p0', user_id: 'u1' },
  { resource_id: 'r2', project_id: 'p1', user_id: 'u0' },
  { resource_id: 'r3', project_id: 'p1', user_id: 'u1' },
  { resource_id: 'r4', project_id: 'p2', user_id: 'u1' },
  // No user_id: grouping by user_id gives null, and ne keeps it.
  { resource_id: 'r5', project_id: 'p2' },
];
const PLACES: ReadonlyArray<readonly [string, number]> = [['metrics', 0], ['metrics', 1], ['metrics', 2], ['metrics', 3], ['audit', 0]];

function generate(): Sample[] {
  const rng = new Rng(7);
  const out: Sample[] = [];
  for (let w = 0; w < WINDOWS; w++) {
    for (const [i, dims] of RESOURCES.entries()) {
      // A large offset and a small spread: stddev must survive the merge without cancellation.
      for (let k = rng.int(1, 9); k > 0; k--) {
        const [topic, partition] = PLACES[rng.int(0, PLACES.length - 1)]!;
        out.push({ name: 'cpu_util', unit: '%', dims, topic, partition, ts: T0 + w * W + rng.int(0, W - 1), value: 1e6 + i * 10 + rng.range(0, 5) });
      }
      // Values over four decades, zeros and negatives: percentiles that a coarse sketch would get wrong.
      for (let k = rng.int(2, 12); k > 0; k--) {
        const [topic, partition] = PLACES[rng.int(0, PLACES.length - 1)]!;
        const r = rng.next();
        const value = r < 0.05 ? 0 : r < 0.2 ? -(10 ** rng.range(0, 2)) : 10 ** rng.range(0, 4);
        out.push({ name: 'latency', unit: 'ms', dims, topic, partition, ts: T0 + w * W + rng.int(0, W - 1), value });
      }
      if (w % 2 === 0 && i < 3) {
        out.push({ name: 'disk.read.bytes', unit: 'B', dims, topic: 'metrics', partition: i, ts: T0 + w * W + rng.int(0, W - 1), value: rng.int(0, 1 << 20) });
      }
    }
  }
  out.push({ name: 'vcpus', unit: null, dims: { resource_id: 'r9', project_id: 'p9' }, topic: 'metrics', partition: 0, ts: T0, value: 2 });
  return out;
}

/** The rows the engine would store: one per (series, topic, partition, window), m2 stored as stddev^2*count by the sink. */
function toRows(samples: readonly Sample[]): StatsRow[] {
  const rows = rowsOf(samples, W, ALPHA);
  // disk.read.bytes is stored without sketches: percentile on it is a 400.
  for (const row of rows) if (row.name === 'disk.read.bytes') delete row.sketch;
  return rows;
}

// ---- the reference: the documented rules applied to raw samples ----

type Pairs = Array<[string, string]>;

interface RefQuery {
  q?: Array<{ field: string; op: string; value: string }>;
  period?: number;
  groupby?: string[];
}

function fieldOf(s: Sample, f: string): string | number | null {
  if (f === 'topic') return s.topic;
  if (f === 'partition') return s.partition;
  return s.dims[f] ?? null;
}

function matches(s: Sample, q: { field: string; op: string; value: string }): boolean {
  if (q.field === 'timestamp') {
    const t = Date.parse(q.value);
    const ws = Math.floor(s.ts / W) * W;
    if (q.op === 'ge') return ws >= t;
    if (q.op === 'gt') return ws > t;
    return ws + W <= t; // lt and le: the window ends by t
  }
  const v = fieldOf(s, q.field);
  const x: string | number = q.field === 'partition' ? Number(q.value) : q.value;
  if (q.op === 'ne') return v !== x;
  if (v === null) return false;
  switch (q.op) {
    case 'eq': return v === x;
    case 'lt': return v < x;
    case 'le': return v <= x;
    case 'gt': return v > x;
    default: return v >= x;
  }
}

interface RefStat extends Statistics {
  /** Population stddev of the raw samples: the answer has it in aggregate.stddev when asked. */
  stddev: number;
  values: number[];
  samples: Sample[];
}

function reference(samples: readonly Sample[], meter: string, rq: RefQuery): RefStat[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    if (s.name !== meter || !(rq.q ?? []).every((q) => matches(s, q))) continue;
    const bucket = rq.period === undefined ? 0 : Math.floor(s.ts / (rq.period * 1000));
    const key = JSON.stringify([bucket, s.unit, ...(rq.groupby ?? []).map((g) => fieldOf(s, g))]);
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = []));
    g.push(s);
  }
  const out: RefStat[] = [];
  for (const g of groups.values()) {
    const values = g.map((s) => s.value);
    const n = values.length;
    const sum = values.reduce((a, b) => a + b, 0);
    const avg = sum / n;
    const ts = g.map((s) => s.ts);
    // Without period (Ceilometer): period 0, period_start/end = the first and last sample times.
    const ps = rq.period === undefined ? Math.min(...ts) : Math.floor(g[0]!.ts / (rq.period * 1000)) * rq.period * 1000;
    const pe = rq.period === undefined ? Math.max(...ts) : ps + rq.period * 1000;
    out.push({
      avg,
      count: n,
      duration: (Math.max(...ts) - Math.min(...ts)) / 1000,
      duration_end: ceilometerTime(Math.max(...ts)),
      duration_start: ceilometerTime(Math.min(...ts)),
      groupby: rq.groupby === undefined || rq.groupby.length === 0 ? null : Object.fromEntries(rq.groupby.map((f) => [f, fieldOf(g[0]!, f)])),
      max: Math.max(...values),
      min: Math.min(...values),
      period: rq.period ?? 0,
      period_end: ceilometerTime(pe),
      period_start: ceilometerTime(ps),
      sum,
      unit: g[0]!.unit,
      stddev: Math.sqrt(values.reduce((a, v) => a + (v - avg) ** 2, 0) / n),
      values,
      samples: g,
    });
  }
  return out;
}

const identity = (s: Statistics) => JSON.stringify([s.period_start, s.groupby]);

function close(a: number, b: number, rel: number): boolean {
  return Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-12);
}

function compare(t: Test, got: Statistics[], want: RefStat[], label: string): void {
  t.equal(got.length, want.length, `${label}: number of statistics`);
  const byId = new Map(want.map((w) => [identity(w), w]));
  for (const g of got) {
    const w = byId.get(identity(g));
    if (w === undefined) {
      t.fail(`${label}: unexpected statistics ${identity(g)}`);
      continue;
    }
    const where = `${label} ${identity(g)}`;
    for (const f of ['count', 'period', 'min', 'max', 'duration'] as const) t.equal(g[f], w[f], `${where}: ${f}`);
    for (const f of ['sum', 'avg'] as const) t.ok(close(g[f], w[f], 1e-12), `${where}: ${f} ${g[f]} vs ${w[f]}`);
    // Values near 1e6 with a spread of a few units: relative 1e-7 of the stddev is far below any cancellation.
    const sd = g.aggregate?.['stddev'];
    if (sd !== undefined) t.ok(close(sd!, w.stddev, 1e-7), `${where}: aggregate.stddev ${sd} vs ${w.stddev}`);
    for (const f of ['period_start', 'period_end', 'duration_start', 'duration_end', 'unit'] as const) t.equal(g[f], w[f], `${where}: ${f}`);
    t.same(g.groupby, w.groupby, `${where}: groupby`);
  }
  // Sorted by period bucket first (with period); then by unit and groupby values, bytewise. Without
  // period each group's period_start is its own first sample time, so only the group order holds.
  const starts = got.map((g) => g.period_start);
  if (got.some((g) => g.period > 0)) t.same(starts, [...starts].sort(), `${label}: ordered by period_start`);
  const groups = got.filter((g) => g.period_start === got[0]!.period_start).map((g) => JSON.stringify(Object.values(g.groupby ?? {}).map((v) => (v === null ? '\uffff' : String(v)))));
  if (got.every((g) => g.groupby === null || Object.values(g.groupby).every((v) => typeof v === 'string' || v === null))) {
    t.same(groups, [...groups].sort(), `${label}: groups in order`);
  }
}

t.test('statistics API over the PostgreSQL store', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const samples = generate();
  const rows = toRows(samples);
  // More than one partial per (series, window): the merge across partitions is exercised.
  t.ok(rows.filter((r) => r.name === 'cpu_util').length > RESOURCES.length * WINDOWS, 'series are split over partitions');
  await sink.write({ rows, ndjson: () => '' });

  const logger = pino({ level: 'silent' });
  const server = new ApiServer({ host: '127.0.0.1', port: 0, routes: createStatisticsApi({ pool, logger, auth: parseTokens(`${ADMIN_TOKEN} admin\n`, 'tokens') }) });
  const port = await server.listen();
  t.teardown(() => server.close());
  const ops = new HttpServer({ host: '127.0.0.1', port: 0, registry: new Registry(), ready: () => true });
  const opsPort = await ops.listen();
  t.teardown(() => ops.close());
  const base = `http://127.0.0.1:${port}`;
  const auth = { 'x-auth-token': ADMIN_TOKEN };

  async function get(path: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${base}${path}`, { ...init, headers: { ...auth, ...init?.headers } });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body };
  }

  function statsPath(meter: string, pairs: Pairs): string {
    return `/v2/meters/${encodeURIComponent(meter)}/statistics?${new URLSearchParams(pairs).toString()}`;
  }

  function qPairs(rq: RefQuery): Pairs {
    const p: Pairs = [];
    for (const q of rq.q ?? []) p.push(['q.field', q.field], ['q.op', q.op], ['q.value', q.value]);
    if (rq.period !== undefined) p.push(['period', String(rq.period)]);
    for (const g of rq.groupby ?? []) p.push(['groupby', g]);
    // Every comparison checks the merged stddev too (a selectable aggregate, as in Ceilometer).
    p.push(['aggregate.func', 'stddev']);
    return p;
  }

  async function check(t: Test, label: string, rq: RefQuery, meter = 'cpu_util'): Promise<Statistics[]> {
    const res = await get(statsPath(meter, qPairs(rq)));
    t.equal(res.status, 200, `${label}: status`);
    const got = res.body as Statistics[];
    const want = reference(samples, meter, rq);
    t.ok(want.length > 0, `${label}: the reference is not empty`);
    compare(t, got, want, label);
    return got;
  }

  await t.test('GET /v2/meters: Ceilometer Meters, one per meter and resource, sorted; q filters; limit', async (t) => {
    // The reference: one Meter per distinct (name, unit, dimensions) of the matching samples.
    const meters = (pick: (s: Sample) => boolean) => {
      const seen = new Map<string, Record<string, unknown>>();
      for (const s of samples.filter(pick)) {
        const m = {
          name: s.name,
          type: null,
          unit: s.unit,
          resource_id: s.dims['resource_id'] ?? null,
          project_id: s.dims['project_id'] ?? null,
          user_id: s.dims['user_id'] ?? null,
          source: null,
          meter_id: Buffer.from(`${s.dims['resource_id']}+${s.name}`).toString('base64'),
        };
        seen.set(JSON.stringify(m), m);
      }
      const key = (m: Record<string, unknown>) => `${String(m['name'])}\u0000${String(m['resource_id'])}`;
      return [...seen.values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    };
    const all = await get('/v2/meters');
    t.equal(all.status, 200);
    t.same(all.body, meters(() => true));
    t.equal((all.body as unknown[]).length, 16, '6 + 6 + 3 resources of three meters, and vcpus');
    t.same((all.body as Array<{ meter_id: string }>)[0]!.meter_id, Buffer.from('r0+cpu_util').toString('base64'), 'meter_id = base64(resource_id+name)');
    const p9 = await get('/v2/meters?q.field=project_id&q.op=eq&q.value=p9');
    t.same(p9.body, meters((s) => s.dims['project_id'] === 'p9'));
    const r4 = await get('/v2/meters?q.field=resource_id&q.value=r4');
    t.same(r4.body, meters((s) => s.dims['resource_id'] === 'r4'), 'q.op left out means eq');
    const late = await get(`/v2/meters?q.field=timestamp&q.op=ge&q.value=${new Date(T0 + W).toISOString()}`);
    t.same(late.body, meters((s) => s.ts >= T0 + W));
    const two = await get('/v2/meters?limit=2');
    t.same(two.body, meters(() => true).slice(0, 2), 'limit: the first ones');
    t.same((await get('/v2/meters?unique=true')).body, all.body, 'unique: every answer is unique already');
  });

  await t.test('whole range of one meter: partials of all partitions and windows merged exactly', async (t) => {
    const [s] = await check(t, 'whole range', {});
    t.equal(s!.count, samples.filter((x) => x.name === 'cpu_util').length, 'every sample counted once');
    t.equal(s!.groupby, null, 'groupby is null without groupby');
    t.ok(s!.aggregate!['stddev']! > 0, 'stddev in aggregate when asked');
    const plain = ((await get('/v2/meters/cpu_util/statistics')).body as Statistics[])[0]!;
    // Ceilometer's Statistics fields; stddev only inside aggregate, and aggregate only when asked.
    t.same(Object.keys(plain).sort(), ['avg', 'count', 'duration', 'duration_end', 'duration_start', 'groupby', 'max', 'min', 'period', 'period_end', 'period_start', 'sum', 'unit']);
    const times = samples.filter((x) => x.name === 'cpu_util').map((x) => x.ts);
    t.equal(plain.period, 0, 'period 0 without period');
    t.equal(plain.period_start, ceilometerTime(Math.min(...times)), 'period_start: the first sample time');
    t.equal(plain.period_end, ceilometerTime(Math.max(...times)), 'period_end: the last sample time');
    t.equal(plain.period_start, plain.duration_start);
    t.match(plain.duration_start, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?$/, 'naive UTC ISO 8601: no Z, six fraction digits when there is a fraction');
    await check(t, 'small meter', {}, 'disk.read.bytes');
  });

  await t.test('timestamp bounds select whole windows (ge/gt on period_start, lt/le on period_end)', async (t) => {
    const onEdge = new Date(T0 + 3 * W).toISOString();
    const inside = new Date(T0 + 3 * W + 30_000).toISOString();
    for (const op of ['ge', 'gt', 'lt', 'le']) {
      for (const at of [onEdge, inside]) await check(t, `timestamp ${op} ${at}`, { q: [{ field: 'timestamp', op, value: at }] });
    }
    // Without an offset a timestamp is UTC, as Ceilometer writes it.
    await check(t, 'range without offsets', {
      q: [
        { field: 'timestamp', op: 'ge', value: '2020-02-11T12:03:00' },
        { field: 'timestamp', op: 'lt', value: '2020-02-11T12:08:00' },
      ],
    });
    const none = await get(statsPath('cpu_util', [['q.field', 'timestamp'], ['q.op', 'ge'], ['q.value', '2030-01-01T00:00:00Z']]));
    t.same(none, { status: 200, body: [] }, 'nothing in range: []');
  });

  await t.test('dimension, partition and topic filters with every op', async (t) => {
    for (const op of ['eq', 'ne', 'lt', 'le', 'gt', 'ge']) {
      await check(t, `project_id ${op} p1`, { q: [{ field: 'project_id', op, value: 'p1' }] });
      await check(t, `partition ${op} 1`, { q: [{ field: 'partition', op, value: '1' }] });
    }
    await check(t, 'user_id ne u0 keeps rows without user_id', { q: [{ field: 'user_id', op: 'ne', value: 'u0' }] });
    await check(t, 'topic eq audit', { q: [{ field: 'topic', op: 'eq', value: 'audit' }] });
    await check(t, 'topic ne audit', { q: [{ field: 'topic', op: 'ne', value: 'audit' }] });
    await check(t, 'two dimensions and a time bound', {
      q: [
        { field: 'project_id', op: 'eq', value: 'p0' },
        { field: 'resource_id', op: 'ne', value: 'r0' },
        { field: 'timestamp', op: 'gt', value: new Date(T0 + W).toISOString() },
      ],
    });
    const nobody = await get(statsPath('cpu_util', [['q.field', 'project_id'], ['q.value', 'nope']]));
    t.same(nobody, { status: 200, body: [] });
  });

  await t.test('period re-buckets windows into epoch-aligned buckets', async (t) => {
    const got = await check(t, 'period 180', { period: 180 });
    t.equal(got.length, 5, '12 windows from 12:01: buckets 12:00, 12:03, 12:06, 12:09, 12:12');
    t.equal(got[0]!.period_start, '2020-02-11T12:00:00', 'aligned to the epoch, not to the first sample');
    t.equal(got[0]!.period, 180);
    await check(t, 'period 60', { period: 60 });
    await check(t, 'period 3600', { period: 3600 });
    await check(t, 'period 180 with a time bound', { period: 180, q: [{ field: 'timestamp', op: 'ge', value: new Date(T0 + 2 * W).toISOString() }] });
  });

  await t.test('groupby one and two dimensions, with and without period', async (t) => {
    const byProject = await check(t, 'groupby project_id', { groupby: ['project_id'] });
    t.same(byProject.map((s) => s.groupby), [{ project_id: 'p0' }, { project_id: 'p1' }, { project_id: 'p2' }], 'sorted by groupby value');
    const byTwo = await check(t, 'groupby project_id, user_id', { groupby: ['project_id', 'user_id'] });
    t.ok(byTwo.some((s) => s.groupby!['user_id'] === null), 'rows without the dimension group under null');
    await check(t, 'groupby user_id with period 180', { groupby: ['user_id'], period: 180 });
    await check(t, 'groupby partition', { groupby: ['partition'] });
    await check(t, 'groupby resource_id, filtered', { groupby: ['resource_id'], q: [{ field: 'project_id', op: 'ne', value: 'p0' }] });
  });

  await t.test('aggregate.func: stddev, cardinality, percentile, standard functions', async (t) => {
    for (const meter of ['cpu_util', 'latency']) {
      const pairs: Pairs = [
        ['aggregate.func', 'stddev'],
        ['aggregate.func', 'cardinality'],
        ['aggregate.param', 'resource_id'],
        ['aggregate.func', 'percentile'],
        ['aggregate.param', '95'],
        ['aggregate.func', 'percentile'],
        ['aggregate.param', '50'],
        ['aggregate.func', 'percentile'],
        ['aggregate.param', '10'],
        ['aggregate.func', 'count'],
        ['aggregate.func', 'cardinality'],
        ['aggregate.param', 'user_id'],
        ['groupby', 'project_id'],
        ['period', '180'],
      ];
      const res = await get(statsPath(meter, pairs));
      t.equal(res.status, 200);
      const got = res.body as Statistics[];
      const want = reference(samples, meter, { groupby: ['project_id'], period: 180 });
      compare(t, got, want, `${meter} with aggregates`);
      const byId = new Map(want.map((w) => [identity(w), w]));
      for (const g of got) {
        const w = byId.get(identity(g))!;
        const where = `${meter} ${identity(g)}`;
        const agg = g.aggregate!;
        t.same(Object.keys(agg), ['stddev', 'cardinality/resource_id', 'percentile/95', 'percentile/50', 'percentile/10', 'count', 'cardinality/user_id'], `${where}: aggregate keys`);
        t.notOk('stddev' in g, `${where}: no top-level stddev`);
        t.equal(agg['count'], w.count);
        t.equal(agg['cardinality/resource_id'], new Set(w.samples.map((s) => s.dims['resource_id'])).size, `${where}: cardinality/resource_id`);
        const users = new Set(w.samples.map((s) => s.dims['user_id']).filter((u) => u !== undefined));
        t.equal(agg['cardinality/user_id'], users.size, `${where}: cardinality/user_id counts values, not absent ones`);
        const sorted = [...w.values].sort((a, b) => a - b);
        for (const p of [95, 50, 10]) {
          const exact = sorted[Math.floor((p / 100) * (sorted.length - 1))]!;
          const v = agg[`percentile/${p}`]!;
          t.ok(Math.abs(v - exact) <= ALPHA * Math.abs(exact) * (1 + 1e-9), `${where}: percentile/${p} ${v} within ${ALPHA} of ${exact}`);
        }
      }
    }
    // cardinality/user_id asked after count: found under its own key.
    const card = await get(statsPath('cpu_util', [['aggregate.func', 'cardinality'], ['aggregate.param', 'user_id']]));
    t.same((card.body as Statistics[])[0]!.aggregate, { 'cardinality/user_id': 2 }, 'null user_id is not a value');
    const whole = await get(statsPath('cpu_util', [['aggregate.func', 'percentile'], ['aggregate.param', '99'], ['aggregate.func', 'min'], ['aggregate.func', 'max'], ['aggregate.func', 'sum'], ['aggregate.func', 'avg']]));
    const s = (whole.body as Statistics[])[0]!;
    t.same(Object.keys(s.aggregate!), ['percentile/99', 'min', 'max', 'sum', 'avg']);
    t.equal(s.aggregate!['sum'], s.sum);
    t.equal(s.aggregate!['min'], s.min);
  });

  await t.test('queryStatistics answers without HTTP exactly as the API does', async (t) => {
    const params = { meter: 'cpu_util', period: 180, groupby: ['project_id'], q: [{ field: 'partition', op: 'ge', value: '1' }], aggregate: [{ func: 'cardinality', param: 'resource_id' }] };
    const direct = await queryStatistics(pool, params);
    const http = await get(statsPath('cpu_util', [['period', '180'], ['groupby', 'project_id'], ['q.field', 'partition'], ['q.op', 'ge'], ['q.value', '1'], ['aggregate.func', 'cardinality'], ['aggregate.param', 'resource_id']]));
    t.same(http.body, JSON.parse(JSON.stringify(direct)));
    await t.rejects(queryStatistics(pool, { meter: 'cpu_util', period: 90 }), { name: 'ApiError', status: 400 });
    await t.rejects(queryStatistics(pool, { meter: 'cpu_util', period: 60 }, { maxResults: 11 }), {
      status: 400,
      message: 'the query gives more than 11 statistics (API_MAX_RESULTS): narrow it with q (timestamp, dimensions), a longer period, fewer groupby or a limit of at most 11',
    });
    t.equal((await queryStatistics(pool, { meter: 'cpu_util', period: 60 }, { maxResults: 12 })).length, 12, 'exactly maxResults is allowed');
  });

  await t.test('limit: the first statistics in the answer\'s order; unknown groupby fields are a 400', async (t) => {
    const full = (await get(statsPath('cpu_util', [['period', '60'], ['groupby', 'project_id']]))).body as Statistics[];
    const first = await get(statsPath('cpu_util', [['period', '60'], ['groupby', 'project_id'], ['limit', '5']]));
    t.same(first.body, full.slice(0, 5));
    const beyond = await queryStatistics(pool, { meter: 'cpu_util', period: 60, limit: 11 }, { maxResults: 11 });
    t.equal(beyond.length, 11, 'with limit, more results than maxResults are cut, not refused');
    const unknown = await get(statsPath('cpu_util', [['groupby', 'flavor']]));
    t.equal(unknown.status, 400);
    t.match(unknown.body, { error: /^groupby\[0\]="flavor" is not valid: no stored row of meter "cpu_util" that the query selects has that field/ });
    const partly = await get(statsPath('cpu_util', [['groupby', 'user_id'], ['q.field', 'resource_id'], ['q.value', 'r5']]));
    t.equal(partly.status, 400, 'unknown within the rows the query selects (r5 has no user_id)');
    const someNull = await get(statsPath('cpu_util', [['groupby', 'user_id']]));
    t.equal(someNull.status, 200, 'a field some rows lack groups them under null');
  });

  await t.test('unknown meter: 200 with []', async (t) => {
    t.same(await get('/v2/meters/no.such.meter/statistics'), { status: 200, body: [] });
    t.same(await get(`/v2/meters/${encodeURIComponent('a/b é')}/statistics`), { status: 200, body: [] }, 'percent-encoded names');
  });

  await t.test('methods and paths', async (t) => {
    const post = await fetch(`${base}/v2/meters/cpu_util/statistics`, { method: 'POST', headers: auth });
    t.equal(post.status, 405);
    t.equal(post.headers.get('allow'), 'GET, HEAD');
    const head = await fetch(`${base}/v2/meters`, { method: 'HEAD', headers: auth });
    t.equal(head.status, 200);
    const other = await get('/v2/alarms');
    t.equal(other.status, 404);
    t.match(other.body, { error: /GET \/v2\/meters, \/v2\/meters\/\{name\}\/statistics, \/v2\/resources, \/v2\/resources\/\{id\} and \/v2\/capabilities are served$/ });
    t.equal((await get('/nothing')).status, 404, 'outside /v2: 404');
    // Its own listener: the probes and /metrics are not on the API port, and the API is not on theirs.
    t.equal((await get('/healthz')).status, 404, 'no probes on the API port');
    t.equal((await get('/metrics')).status, 404, 'no /metrics on the API port');
    t.equal((await fetch(`http://127.0.0.1:${opsPort}/v2/meters`, { headers: auth })).status, 404, 'no API on the metrics port');
    t.equal((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status, 200, 'the probes are on the metrics port');
  });

  await t.test('every bad query is a 400 that names the parameter and what is allowed', async (t) => {
    // Two partials of one series whose sketches have different relative accuracy cannot be merged.
    const mixed = toRows([
      { name: 'mixed', unit: 'ms', dims: {}, topic: 'metrics', partition: 0, ts: T0, value: 1 },
      { name: 'mixed', unit: 'ms', dims: {}, topic: 'metrics', partition: 1, ts: T0, value: 2 },
    ]);
    mixed[1]!.sketch = new Sketch(0.02).toJSON();
    await sink.write({ rows: mixed, ndjson: () => '' });
    const cases: Array<[string, Pairs | string, RegExp]> = [
      ['unknown op', [['q.field', 'project_id'], ['q.op', 'like'], ['q.value', 'p1']], /^q\.op\[0\]="like" is not valid: one of lt, le, eq, ne, ge, gt \(empty: eq\)$/],
      ['timestamp with eq', [['q.field', 'timestamp'], ['q.op', 'eq'], ['q.value', '2020-02-11T12:00:00Z']], /^q\.op\[0\]="eq" is not valid for q\.field\[0\]="timestamp": one of lt, le, ge, gt$/],
      ['unparseable timestamp', [['q.field', 'timestamp'], ['q.op', 'ge'], ['q.value', 'yesterday']], /^q\.value\[0\]="yesterday" is not valid for q\.field\[0\]="timestamp": an ISO 8601 timestamp/],
      ['impossible date', [['q.field', 'timestamp'], ['q.op', 'ge'], ['q.value', '2021-02-29T00:00:00']], /^q\.value\[0\]="2021-02-29T00:00:00" is not valid .*not a calendar date/],
      ['q.value missing', [['q.field', 'project_id'], ['q.field', 'user_id'], ['q.value', 'p1']], /^q\.value is given 1 times but q\.field 2 times: each q\.field needs one q\.value$/],
      ['q.op count mismatch', [['q.field', 'project_id'], ['q.field', 'user_id'], ['q.op', 'eq'], ['q.value', 'p1'], ['q.value', 'u1']], /^q\.op is given 1 times but q\.field 2 times/],
      ['q.type count mismatch', [['q.field', 'project_id'], ['q.value', 'p1'], ['q.type', 'string'], ['q.type', 'string']], /^q\.type is given 2 times but q\.field 1 times/],
      ['unknown q.type', [['q.field', 'project_id'], ['q.value', 'p1'], ['q.type', 'date']], /^q\.type\[0\]="date" is not valid for q\.field\[0\]="project_id": one of string, integer, float/],
      ['datetime q.type on a dimension', [['q.field', 'project_id'], ['q.value', 'p1'], ['q.type', 'datetime']], /^q\.type\[0\]="datetime" is not valid for q\.field\[0\]="project_id": .*datetime and boolean only on timestamp/],
      ['partition not an integer', [['q.field', 'partition'], ['q.value', 'one']], /^q\.value\[0\]="one" is not valid for q\.field\[0\]="partition": an integer from -2147483648 to 2147483647 is allowed$/],
      ['float q.type not a number', [['q.field', 'flavor'], ['q.value', 'x'], ['q.type', 'float']], /^q\.value\[0\]="x" is not valid for q\.field\[0\]="flavor": a finite number \(at most about 1\.8e308\) is allowed$/],
      ['period not a multiple', [['period', '90']], /^period=90 is not valid: a multiple of the stored window period \(60 s\) is allowed$/],
      ['period negative', [['period', '-60']], /^period="-60" is not valid: a whole number of seconds/],
      ['period not a number', [['period', 'hour']], /^period="hour" is not valid/],
      ['period fractional', [['period', '60.5']], /^period="60.5" is not valid/],
      ['period twice', [['period', '60'], ['period', '120']], /^period is given 2 times: give it once$/],
      ['unknown aggregate.func', [['aggregate.func', 'median']], /^aggregate\.func\[0\]="median" is not valid: one of avg, sum, min, max, count, stddev, cardinality, percentile$/],
      ['cardinality without param', [['aggregate.func', 'cardinality']], /^aggregate\.func\[0\]=cardinality needs an aggregate\.param: a dimension name/],
      ['percentile without param', [['aggregate.func', 'percentile']], /^aggregate\.func\[0\]=percentile needs an aggregate\.param: a number from 0 to 100/],
      ['percentile out of range', [['aggregate.func', 'percentile'], ['aggregate.param', '101']], /^aggregate\.param="101" is not valid for aggregate\.func\[0\]=percentile: a number from 0 to 100 is allowed$/],
      ['param nobody takes', [['aggregate.func', 'sum'], ['aggregate.param', 'resource_id']], /^aggregate\.param is given 1 times but only 0 aggregate\.func take one/],
      ['unknown parameter', [['start', '2020-01-01']], /^unknown parameter "start": allowed are q\.field, q\.op, q\.value, q\.type, period, groupby, aggregate\.func, aggregate\.param, limit$/],
      ['groupby timestamp', [['groupby', 'timestamp']], /^groupby\[0\]="timestamp" is not valid: group by time with period/],
      ['groupby twice', [['groupby', 'project_id'], ['groupby', 'project_id']], /^groupby\[1\]="project_id" is given twice$/],
      ['empty q.field', [['q.field', ''], ['q.value', 'x']], /^q\.field\[0\] is empty/],
      ['percentile with no sketch stored', '/v2/meters/disk.read.bytes/statistics?aggregate.func=percentile&aggregate.param=95', /^aggregate\.func=percentile needs a quantile sketch in every stored row: \d+ rows of .* have none/],
      ['percentile over sketches of different accuracy', '/v2/meters/mixed/statistics?aggregate.func=percentile&aggregate.param=50', /^aggregate\.func=percentile: the rows of 2020-02-11T12:01:00 hold sketches of different relative accuracy \(0\.01, 0\.02\), which cannot be merged$/],
      ['meters: unknown parameter', '/v2/meters?period=60', /^unknown parameter "period": allowed are q\.field, q\.op, q\.value, q\.type, limit, unique$/],
      ['meters: unknown op', '/v2/meters?q.field=project_id&q.op=has&q.value=p1', /^q\.op\[0\]="has" is not valid/],
    ];
    for (const [label, pairs, message] of cases) {
      const res = await get(typeof pairs === 'string' ? pairs : statsPath('cpu_util', pairs));
      t.equal(res.status, 400, `${label}: 400`);
      t.match(res.body, { error: message }, `${label}: message`);
      // Ceilometer's shape first: python-ceilometerclient shows the faultstring of the first key only.
      const body = res.body as { error: string; error_message: { faultstring: string; debuginfo: unknown } };
      t.equal(Object.keys(body)[0], 'error_message', `${label}: error_message is the first key`);
      t.same(body.error_message, { faultcode: 'Client', faultstring: body.error, debuginfo: null }, `${label}: Ceilometer's fault`);
    }
  });
});
