// Authentication and project scoping of the statistics API against the real PostgreSQL: 401 without a
// valid token on every path, project tokens read only rows of their _tenant_id (403 when a filter names
// another project), admin reads all; and the pipeline serves the API on its own port only when asked.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import type { Meter, Statistics } from '../../src/api/index.js';
import { parseConfig } from '../../src/config/index.js';
import { Pipeline } from '../../src/pipeline.js';
import { loadCeilometer, type CeilometerSample } from '../fixtures/ceilometer/load.js';
import { startApi, rowsOf, type RawSample } from '../fixtures/ceilometer/store.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const ADMIN = 'admin-0123456789abcdef0123';
const P1 = 'p1-tok-0123456789abcdef0123';
const P2 = 'p2-tok-0123456789abcdef0123';
const TOKENS = `# the test's tokens\n${ADMIN} admin\n${P1} project:p1\n${P2} project:p2\n`;
const T0 = Date.parse('2020-02-11T12:00:00Z');

function samples(): RawSample[] {
  const out: RawSample[] = [];
  for (let i = 0; i < 30; i++) {
    out.push({ name: 'cpu', unit: '%', dims: { _tenant_id: 'p1', resource_id: `r${i % 3}` }, ts: T0 + i * 10_000, value: i });
    out.push({ name: 'cpu', unit: '%', dims: { _tenant_id: 'p2', resource_id: `s${i % 2}` }, ts: T0 + i * 10_000, value: 100 + i });
    if (i % 3 === 0) out.push({ name: 'disk', unit: 'B', dims: { _tenant_id: 'p2', resource_id: 's0' }, ts: T0 + i * 10_000, value: i });
  }
  // No tenant at all: only admin sees it.
  out.push({ name: 'cpu', unit: '%', dims: { resource_id: 'orphan' }, ts: T0, value: 7 });
  return out;
}

t.test('tokens and project scopes', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const raw = samples();
  await sink.write({ rows: rowsOf(raw), ndjson: () => '' });
  const api = await startApi(t, pool, TOKENS);
  const count = (pred: (s: RawSample) => boolean) => raw.filter((s) => s.name === 'cpu' && pred(s)).length;

  await t.test('401 with WWW-Authenticate on every path without a valid token', async (t) => {
    for (const path of ['/v2/meters', '/v2/meters/cpu/statistics', '/v2/meters/cpu/statistics?period=abc', '/v2/nothing', '/', '/healthz']) {
      for (const [label, init] of [
        ['no token', {}],
        ['unknown token', { headers: { 'x-auth-token': 'not-a-token-0123456789abcdef' } }],
        ['a prefix of a token', { headers: { 'x-auth-token': ADMIN.slice(0, -1) } }],
        ['empty bearer', { headers: { authorization: 'Bearer ' } }],
        ['basic auth', { headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN}`).toString('base64')}` } }],
      ] as const) {
        const res = await api.get(path, null, init);
        t.equal(res.status, 401, `${path} ${label}: 401`);
        t.match(res.headers.get('www-authenticate'), /^Bearer realm=/, `${path} ${label}: WWW-Authenticate`);
        t.match(res.body, { error: /authentication required: send X-Auth-Token/, error_message: { faultcode: 'Client' } });
      }
    }
  });

  await t.test('admin reads every project, by X-Auth-Token or Authorization: Bearer', async (t) => {
    const x = await api.get('/v2/meters/cpu/statistics', ADMIN);
    t.equal(x.status, 200);
    t.equal((x.body as Statistics[])[0]!.count, count(() => true), 'all rows, the one without a tenant too');
    const bearer = await api.get('/v2/meters/cpu/statistics', null, { headers: { authorization: `Bearer ${ADMIN}` } });
    t.same(bearer.body, x.body, 'Bearer works the same');
    const byTenant = await api.get('/v2/meters/cpu/statistics?groupby=_tenant_id', ADMIN);
    t.same((byTenant.body as Statistics[]).map((s) => s.groupby), [{ _tenant_id: 'p1' }, { _tenant_id: 'p2' }, { _tenant_id: null }]);
    const p2 = await api.get('/v2/meters/cpu/statistics?q.field=_tenant_id&q.value=p2', ADMIN);
    t.equal((p2.body as Statistics[])[0]!.count, count((s) => s.dims['_tenant_id'] === 'p2'), 'admin may filter any project');
  });

  await t.test('a project token reads only its project', async (t) => {
    for (const [token, project] of [[P1, 'p1'], [P2, 'p2']] as const) {
      const own = count((s) => s.dims['_tenant_id'] === project);
      const all = await api.get('/v2/meters/cpu/statistics', token);
      t.equal(all.status, 200);
      t.equal((all.body as Statistics[])[0]!.count, own, `${project}: only its rows counted`);
      const grouped = await api.get('/v2/meters/cpu/statistics?groupby=_tenant_id&groupby=resource_id', token);
      t.ok((grouped.body as Statistics[]).every((s) => s.groupby!['_tenant_id'] === project), `${project}: groupby shows no other tenant`);
      const card = await api.get('/v2/meters/cpu/statistics?aggregate.func=cardinality&aggregate.param=_tenant_id', token);
      t.same((card.body as Statistics[])[0]!.aggregate, { 'cardinality/_tenant_id': 1 }, `${project}: cardinality sees one tenant`);
      const named = await api.get(`/v2/meters/cpu/statistics?q.field=_tenant_id&q.value=${project}`, token);
      t.same(named.body, all.body, `${project}: naming its own project is allowed`);
      const meters = await api.get('/v2/meters', token);
      t.ok((meters.body as Meter[]).every((m) => m.project_id === project), `${project}: /v2/meters lists only its meters`);
    }
    t.same((await api.get('/v2/meters/disk/statistics', P1)).body, [], 'p1 sees nothing of a meter only p2 has');
  });

  await t.test('403 when a filter asks for another project', async (t) => {
    for (const [path, field] of [
      ['/v2/meters/cpu/statistics?q.field=_tenant_id&q.value=p2', '_tenant_id'],
      ['/v2/meters/cpu/statistics?q.field=_tenant_id&q.op=ge&q.value=p0', '_tenant_id'],
      ['/v2/meters/cpu/statistics?q.field=project_id&q.value=p2', 'project_id'],
      ['/v2/meters/cpu/statistics?q.field=resource_id&q.value=r0&q.field=project&q.value=p2', 'project'],
      ['/v2/meters?q.field=_tenant_id&q.value=p2', '_tenant_id'],
    ] as const) {
      const res = await api.get(path, P1);
      t.equal(res.status, 403, `${path}: 403`);
      t.match(res.body, { error: new RegExp(`^q\\.field\\[\\d\\]="${field}": this token may read project "p1" only$`) });
    }
  });

  await t.test('a bounded wait list: queries beyond it get a 503 with Retry-After at once', async (t) => {
    const busy = await startApi(t, pool, TOKENS, { limits: { connections: 1, tokenQueries: 1, tokenWaiting: 0, maxWaiting: 1 } });
    // A real lock holds the first query in PostgreSQL while the second arrives.
    const locker = await pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE streamstats_windows IN ACCESS EXCLUSIVE MODE');
      const first = busy.get('/v2/meters/cpu/statistics', ADMIN);
      for (let i = 0; i < 500; i++) {
        const w = await locker.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%streamstats_statistics%'");
        if (Number(w.rows[0]!.n) > 0) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      const second = await busy.get('/v2/meters/cpu/statistics', ADMIN);
      t.equal(second.status, 503, 'no slot and no room to wait: 503');
      t.equal(second.headers.get('retry-after'), '1');
      t.match(second.body, { error: /^the statistics API is busy: this token has 1 answers under way and 0 waiting, its share \(API_TOKEN_QUERIES=1, API_TOKEN_WAITING=0\); retry later$/ });
      await locker.query('COMMIT');
      t.equal((await first).status, 200, 'the held query answers once the lock is gone');
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
    }
    t.equal((await busy.get('/v2/meters/cpu/statistics', ADMIN)).status, 200, 'and the slot is free again');
  });

  await t.test('API_AUTH=none: no token needed, every project', async (t) => {
    const open = await startApi(t, pool, 'none');
    const res = await open.get('/v2/meters/cpu/statistics');
    t.equal(res.status, 200);
    t.equal((res.body as Statistics[])[0]!.count, count(() => true));
  });
});

t.test('FORMAT=ceilometer: a project token reads the samples of its project_id', async (t) => {
  const { url, pool } = await testSchema(t);
  const raw: CeilometerSample[] = [];
  for (let i = 0; i < 90; i++) {
    const project = ['p1', 'p2', 'p1'][i % 3]!;
    raw.push({
      counter_name: 'cpu_util', counter_volume: i % 7, counter_unit: '%', counter_type: 'gauge', resource_id: `${project}-vm${i % 2}`,
      project_id: project, user_id: 'u', source: 'openstack', timestamp: new Date(T0 + i * 20_000).toISOString().slice(0, 19),
    });
  }
  await loadCeilometer(url, raw);
  const api = await startApi(t, pool, TOKENS);
  for (const [token, project] of [[P1, 'p1'], [P2, 'p2']] as const) {
    const own = raw.filter((s) => s.project_id === project);
    const res = await api.get('/v2/meters/cpu_util/statistics', token);
    t.equal(res.status, 200);
    const [stat] = res.body as Statistics[];
    t.equal(stat?.count, own.length, `${project}: its samples counted`);
    t.equal(stat?.sum, own.reduce((a, s) => a + s.counter_volume, 0), `${project}: their sum`);
    const meters = (await api.get('/v2/meters', token)).body as Meter[];
    t.same([...new Set(meters.map((m) => m.project_id))], [project], `${project}: /v2/meters lists its resources only`);
    t.ok(meters.every((m) => m.type === 'gauge'), `${project}: the meter type is the samples' counter_type`);
  }
  const foreign = await api.get('/v2/meters/cpu_util/statistics?q.field=project_id&q.value=p2', P1);
  t.equal(foreign.status, 403, 'naming another project_id is refused');
});

t.test('the pipeline serves the API on API_PORT only, never logs a token, warns for API_AUTH=none', async (t) => {
  const { url } = await testSchema(t);
  const dir = mkdtempSync(join(tmpdir(), 'api-auth-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens');
  writeFileSync(file, TOKENS);
  async function run(env: Record<string, string>): Promise<{ log: string; apiPort: number | null; check: (port: number, metricsPort: number) => Promise<void> }> {
    let log = '';
    const logger = pino({ level: 'debug' }, new Writable({ write: (c: Buffer, _e, cb) => { log += c.toString(); cb(); } }));
    const config = parseConfig({ SOURCE: 'generator', GEN_COUNT: '1000000', GEN_RATE: '2000', SINK: url, METRICS_PORT: '0', API_PORT: '0', WORKER_THREADS: '0', ...env });
    let apiPort: number | null = null;
    let metricsPort = 0;
    let listening!: () => void;
    const up = new Promise<void>((resolve) => (listening = resolve));
    const p = new Pipeline(config, { logger, registry: new Registry(), onListening: (port) => (metricsPort = port), onApiListening: (port) => (apiPort = port) });
    const done = p.run();
    // The API listens right after /metrics; /readyz turns 200 once both are up.
    const timer = setInterval(() => { if (metricsPort !== 0 && (apiPort !== null || env['API_TOKENS_FILE'] === undefined && env['API_AUTH'] === undefined)) listening(); }, 20);
    await up;
    clearInterval(timer);
    const result = { apiPort, check: async () => {} };
    if (apiPort !== null) {
      const ap = apiPort;
      t.equal((await fetch(`http://127.0.0.1:${ap}/v2/meters`)).status, env['API_AUTH'] === 'none' ? 200 : 401, 'the API answers on API_PORT');
      t.equal((await fetch(`http://127.0.0.1:${ap}/v2/meters`, { headers: { 'x-auth-token': ADMIN } })).status, 200);
      t.equal((await fetch(`http://127.0.0.1:${ap}/metrics`, { headers: { 'x-auth-token': ADMIN } })).status, 404, 'no /metrics on API_PORT');
    }
    t.equal((await fetch(`http://127.0.0.1:${metricsPort}/v2/meters`, { headers: { 'x-auth-token': ADMIN } })).status, 404, 'no API on METRICS_PORT');
    t.equal((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status, 200);
    p.stop();
    await done;
    if (apiPort !== null) await t.rejects(fetch(`http://127.0.0.1:${apiPort}/v2/meters`), 'the API listener is closed after the run');
    return { ...result, log };
  }
  const withTokens = await run({ API_TOKENS_FILE: file });
  t.match(withTokens.log, /"tokens":3.*statistics API on \/v2 \(X-Auth-Token\)/, 'logs how many tokens');
  for (const tok of [ADMIN, P1, P2]) t.notOk(withTokens.log.includes(tok), 'no token in the log');
  const none = await run({ API_AUTH: 'none' });
  t.match(none.log, /"level":40.*WITHOUT authentication \(API_AUTH=none\)/, 'API_AUTH=none is a warning');
  const off = await run({});
  t.equal(off.apiPort, null, 'without a token file or API_AUTH=none: no API');
  t.match(off.log, /statistics API off: no API_TOKENS_FILE/);
});
