// Ceilometer's own clients against the statistics API over PostgreSQL: python-ceilometerclient 2.9.0
// (its Python API and its CLI, on Debian's python3 packages) and openstack4j 3.12 with the okhttp
// connector (authenticating against a minimal Keystone v3 token responder that points the metering
// endpoint at the API). Ceilometer samples go through the real pipeline (FORMAT=ceilometer); every
// expected value is computed here from the samples with Ceilometer's semantics (bounds and periods
// chosen on window boundaries, where stored windows answer exactly what raw samples would).
// Needs scripts/ceilometer-clients.sh install: in CI a missing client fails the test, elsewhere it is
// skipped with the reason.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import { loadCeilometer, type CeilometerSample } from '../fixtures/ceilometer/load.js';
import { startApi } from '../fixtures/ceilometer/store.js';
import { testSchema } from '../fixtures/pg.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const DIR = process.env['CEILOMETER_CLIENTS_DIR'] ?? join(ROOT, '.cache/ceilometer-clients');
const ready = spawnSync('bash', [join(ROOT, 'scripts/ceilometer-clients.sh'), 'status'], { env: { ...process.env, CEILOMETER_CLIENTS_DIR: DIR } }).status === 0;
const inCi = process.env['CI'] !== undefined && process.env['CI'] !== '';

const ADMIN = 'admin-0123456789abcdef0123';
const P1 = 'p1-tok-0123456789abcdef0123';
const TOKENS = `${ADMIN} admin\n${P1} project:p1\n`;
const T0 = Date.parse('2020-02-11T12:00:00Z');
const MINUTES = 30;
const RESOURCES = [
  { resource_id: 'vm-1', project_id: 'p1', user_id: 'alice' },
  { resource_id: 'vm-2', project_id: 'p1', user_id: 'bob' },
  { resource_id: 'vm-3', project_id: 'p2', user_id: 'alice' },
  { resource_id: 'vol-4', project_id: 'p2', user_id: 'carol' },
];

/** A small deterministic generator (the values need no statistics of their own). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function samples(): CeilometerSample[] {
  const rnd = lcg(26);
  const out: CeilometerSample[] = [];
  for (let m = 0; m < MINUTES; m++) {
    for (const r of RESOURCES) {
      for (let k = 0; k < 3; k++) {
        const ts = T0 + m * 60_000 + Math.floor(rnd() * 60_000);
        const stamp = new Date(ts).toISOString().slice(0, 23);
        if (r.resource_id.startsWith('vm')) {
          out.push({ counter_name: 'cpu_util', counter_volume: Math.round(rnd() * 1e6) / 1e4, counter_unit: '%', counter_type: 'gauge', ...r, source: 'openstack', timestamp: stamp, resource_metadata: { flavor: 'm1.small' } });
        } else {
          out.push({ counter_name: 'volume.size', counter_volume: 10 + (m % 3), counter_unit: 'GB', counter_type: 'gauge', ...r, source: 'openstack', timestamp: stamp });
        }
      }
    }
  }
  return out;
}

// ---- the expected values, from the samples ----
const tsOf = (s: CeilometerSample): number => Date.parse(`${s.timestamp}Z`);
const naive = (ms: number): string => {
  const iso = new Date(ms).toISOString();
  return iso.endsWith('.000Z') ? iso.slice(0, 19) : `${iso.slice(0, 23)}000`;
};

interface Expected {
  count: number;
  sum: number;
  min: number;
  max: number;
  avg: number;
  stddev: number;
  first: number;
  last: number;
  cardinality: (field: keyof CeilometerSample) => number;
}

function summarise(xs: readonly CeilometerSample[]): Expected {
  const v = xs.map((s) => s.counter_volume);
  const sum = v.reduce((a, b) => a + b, 0);
  const avg = sum / v.length;
  const times = xs.map(tsOf);
  return {
    count: v.length, sum, min: Math.min(...v), max: Math.max(...v), avg,
    stddev: Math.sqrt(v.reduce((a, b) => a + (b - avg) ** 2, 0) / v.length),
    first: Math.min(...times), last: Math.max(...times),
    cardinality: (f) => new Set(xs.map((s) => s[f])).size,
  };
}

/** Ceilometer's buckets for a query starting at `start` (here epoch-aligned: the same buckets). */
function buckets(xs: readonly CeilometerSample[], start: number, period: number): Array<[number, Expected]> {
  const by = new Map<number, CeilometerSample[]>();
  for (const s of xs) {
    const b = start + Math.floor((tsOf(s) - start) / (period * 1000)) * period * 1000;
    by.set(b, [...(by.get(b) ?? []), s]);
  }
  return [...by.entries()].sort(([a], [b]) => a - b).map(([b, g]) => [b, summarise(g)]);
}

function close(t: Test, got: unknown, want: number, label: string): void {
  t.ok(typeof got === 'number' && Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)), `${label}: ${String(got)} ~ ${want}`);
}

// ---- the Keystone v3 token responder openstack4j authenticates against ----
function keystone(apiBase: string): Promise<{ url: string; server: Server }> {
  const tokens: Record<string, string> = { admin: ADMIN, p1: P1 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/auth/tokens')) {
        res.writeHead(404).end();
        return;
      }
      const auth = JSON.parse(body) as { auth: { identity: { password: { user: { name: string; password: string } } }; scope: { project: { name: string } } } };
      const user = auth.auth.identity.password.user;
      const token = tokens[user.name];
      if (token === undefined || user.password !== 'secret') {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}');
        return;
      }
      const project = auth.auth.scope.project.name;
      const domain = { id: 'default', name: 'Default' };
      res.writeHead(201, { 'content-type': 'application/json', 'x-subject-token': token }).end(JSON.stringify({
        token: {
          methods: ['password'], expires_at: '2099-01-01T00:00:00.000000Z', issued_at: '2020-01-01T00:00:00.000000Z',
          user: { id: user.name, name: user.name, domain }, project: { id: project, name: project, domain },
          roles: [{ id: 'r', name: user.name === 'admin' ? 'admin' : 'member' }],
          catalog: [{ id: 'metering', type: 'metering', name: 'ceilometer', endpoints: [{ id: 'e', interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: apiBase }] }],
        },
      }));
    });
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}/v3`, server })));
}

type Outcome = { result?: unknown; error?: string; class?: string; status?: number | null };

/** A client process, asynchronously: the API it calls answers from this very process. */
function run(cmd: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('error', fail);
    child.on('close', (status) => {
      clearTimeout(timer);
      ok({ status, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}

async function runPython(endpoint: string, token: string, calls: unknown[]): Promise<Outcome[]> {
  const p = await run('/usr/bin/python3', [join(ROOT, 'test/fixtures/ceilometer/clients/driver.py')], {
    input: JSON.stringify({ endpoint, token, calls }),
    env: { ...process.env, PYTHONPATH: join(DIR, 'python'), PYTHONWARNINGS: 'ignore' },
  });
  if (p.status !== 0) throw new Error(`python-ceilometerclient driver: status ${p.status}: ${p.stderr}`);
  return JSON.parse(p.stdout) as Outcome[];
}

async function runJava(spec: object): Promise<Outcome[]> {
  const dir = mkdtempSync(join(tmpdir(), 'openstack4j-'));
  try {
    writeFileSync(join(dir, 'spec.json'), JSON.stringify(spec));
    const cp = `${join(DIR, 'openstack4j/classes')}:${join(DIR, 'openstack4j/lib/*')}`;
    // UTC: openstack4j reads Ceilometer's naive timestamps in the JVM's zone, and Ceilometer's are UTC.
    const p = await run('java', ['-Duser.timezone=UTC', '-XX:TieredStopAtLevel=1', '-cp', cp, 'Driver', join(dir, 'spec.json')], {});
    if (p.status !== 0) throw new Error(`openstack4j driver: status ${p.status}: ${p.stderr}`);
    return JSON.parse(p.stdout.trim().split('\n').pop()!) as Outcome[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (!ready && inCi) t.fail('the Ceilometer clients are not installed in CI: run `bash scripts/ceilometer-clients.sh install` first (this test never skips in CI)');

t.test('python-ceilometerclient 2.9.0 and openstack4j 3.12 against the API over PostgreSQL', { skip: ready ? false : 'Ceilometer clients not installed: run `bash scripts/ceilometer-clients.sh install` (Maven, Debian) to run this test', timeout: 100_000 }, async (t) => {
  const { url, pool } = await testSchema(t);
  const raw = samples();
  await loadCeilometer(url, raw);
  const api = await startApi(t, pool, TOKENS);
  const cpu = raw.filter((s) => s.counter_name === 'cpu_util');
  const all = summarise(cpu);
  // A range on window (and 5-minute) boundaries: Ceilometer's raw-sample answer and ours coincide.
  const from = T0 + 5 * 60_000;
  const to = T0 + 25 * 60_000;
  const inRange = (s: CeilometerSample) => tsOf(s) >= from && tsOf(s) < to;

  await t.test('python-ceilometerclient: Python API and CLI', async (t) => {
    const range = [{ field: 'timestamp', op: 'ge', value: naive(from) }, { field: 'timestamp', op: 'lt', value: naive(to), type: 'datetime' }];
    const calls = [
      { kind: 'statistics', meter: 'cpu_util' },
      { kind: 'statistics', meter: 'cpu_util', q: [...range, { field: 'resource_id', op: 'eq', value: 'vm-2' }], period: 300 },
      { kind: 'statistics', meter: 'cpu_util', groupby: ['project_id', 'resource_id'], aggregates: [{ func: 'stddev' }, { func: 'cardinality', param: 'user_id' }] },
      { kind: 'meters' },
      { kind: 'resources', links: true },
      { kind: 'resource', id: 'vol-4' },
      { kind: 'statistics', meter: 'cpu_util', period: 90 },
      { kind: 'statistics', meter: 'cpu_util', q: [{ field: 'foo', op: 'eq', value: 'bar' }] },
      { kind: 'statistics', meter: 'cpu_util', q: [{ field: 'metadata.flavor', op: 'eq', value: 'm1.small' }] },
      { kind: 'samples', meter: 'cpu_util' },
      { kind: 'cli', args: ['statistics', '-m', 'cpu_util', '-q', 'foo=bar'] },
      { kind: 'cli', args: ['statistics', '-m', 'cpu_util', '-q', 'resource_id=vm-1'] },
    ];
    const [whole, ranged, grouped, meters, resources, one, badPeriod, foo, metadata, rawSamples, cliBad, cliOk] = await runPython(api.base, ADMIN, calls);

    const [w] = whole!.result as Array<Record<string, unknown>>;
    t.equal(w!['count'], all.count, 'count');
    for (const k of ['sum', 'min', 'max', 'avg'] as const) close(t, w![k], all[k], k);
    t.equal(w!['duration_start'], naive(all.first), 'duration_start');
    t.equal(w!['duration_end'], naive(all.last), 'duration_end');
    close(t, w!['duration'], (all.last - all.first) / 1000, 'duration');
    t.equal(w!['unit'], '%');

    const want = buckets(cpu.filter((s) => inRange(s) && s.resource_id === 'vm-2'), from, 300);
    const got = ranged!.result as Array<Record<string, unknown>>;
    t.equal(got.length, want.length, 'one statistics per 5-minute bucket of the range');
    got.forEach((g, i) => {
      const [start, e] = want[i]!;
      t.equal(g['period_start'], naive(start), `bucket ${i}: period_start`);
      t.equal(g['period_end'], naive(start + 300_000), `bucket ${i}: period_end`);
      t.equal(g['period'], 300);
      t.equal(g['count'], e.count, `bucket ${i}: count`);
      for (const k of ['sum', 'min', 'max', 'avg'] as const) close(t, g[k], e[k], `bucket ${i}: ${k}`);
      t.equal(g['duration_start'], naive(e.first));
    });

    const groups = grouped!.result as Array<Record<string, unknown>>;
    const keys = [...new Set(cpu.map((s) => `${s.project_id}|${s.resource_id}`))].sort();
    t.same(groups.map((g) => { const gb = g['groupby'] as Record<string, string>; return `${gb['project_id']}|${gb['resource_id']}`; }), keys, 'one group per (project_id, resource_id)');
    for (const g of groups) {
      const gb = g['groupby'] as Record<string, string>;
      const e = summarise(cpu.filter((s) => s.project_id === gb['project_id'] && s.resource_id === gb['resource_id']));
      t.equal(g['count'], e.count, `${gb['resource_id']}: count`);
      const agg = g['aggregate'] as Record<string, number>;
      close(t, agg['stddev'], e.stddev, `${gb['resource_id']}: stddev`);
      t.equal(agg['cardinality/user_id'], e.cardinality('user_id'), `${gb['resource_id']}: cardinality/user_id`);
    }

    const wantMeters = [...new Set(raw.map((s) => JSON.stringify([s.counter_name, s.resource_id, s.project_id, s.user_id, s.counter_type, s.counter_unit])))].sort();
    const gotMeters = (meters!.result as Array<Record<string, unknown>>).map((m) => JSON.stringify([m['name'], m['resource_id'], m['project_id'], m['user_id'], m['type'], m['unit']])).sort();
    t.same(gotMeters, wantMeters, 'meters: one per meter and resource, with type from counter_type');

    const res = resources!.result as Array<Record<string, unknown>>;
    t.same(res.map((r) => r['resource_id']), RESOURCES.map((r) => r.resource_id), 'resources');
    for (const r of res) {
      const e = summarise(raw.filter((s) => s.resource_id === r['resource_id']));
      t.equal(r['first_sample_timestamp'], naive(e.first), `${String(r['resource_id'])}: first sample`);
      t.equal(r['last_sample_timestamp'], naive(e.last), `${String(r['resource_id'])}: last sample`);
    }
    t.match(one!.result, { resource_id: 'vol-4', project_id: 'p2', user_id: 'carol', source: 'openstack' }, 'resources.get');

    // The client shows the reason (error_message.faultstring), not only "Bad Request (HTTP 400)".
    t.match(badPeriod, { status: 400, error: /period=90 is not valid: a multiple of the stored window period \(60 s\)/ }, 'a bad period: the reason');
    t.match(foo, { status: 400, error: /q\.field="foo" is not valid: no stored row of meter "cpu_util" has that field/ }, 'a misspelled field: a 400 with the reason, not []');
    t.match(metadata, { status: 400, error: /resource_metadata is stored only for the keys CEILOMETER_METADATA names/ }, 'a metadata key not kept: a 400 with the reason');
    t.match(rawSamples, { status: 501, error: /raw samples are not stored/ }, 'samples: a 501 with the reason');
    t.not(cliBad!.result, undefined);
    t.match(cliBad!.result, { stderr: /q\.field="foo" is not valid/ }, 'CLI: the reason on stderr');
    t.not((cliBad!.result as { status: number }).status, 0, 'CLI: a failing status');
    const vm1 = summarise(cpu.filter((s) => s.resource_id === 'vm-1'));
    t.match(cliOk!.result, { status: 0, stdout: new RegExp(`\\| ${vm1.count} +\\|`) }, 'CLI: the table shows the count');

    const [scoped, foreign] = await runPython(api.base, P1, [
      { kind: 'statistics', meter: 'cpu_util' },
      { kind: 'statistics', meter: 'cpu_util', q: [{ field: 'project_id', op: 'eq', value: 'p2' }] },
    ]);
    const p1 = summarise(cpu.filter((s) => s.project_id === 'p1'));
    t.equal((scoped!.result as Array<{ count: number }>)[0]!.count, p1.count, 'a project token: its project\'s samples');
    close(t, (scoped!.result as Array<{ sum: number }>)[0]!.sum, p1.sum, 'a project token: their sum');
    t.match(foreign, { status: 403, error: /this token may read project "p1" only/ }, 'another project: 403 with the reason');
  });

  await t.test('openstack4j 3.12 (okhttp) through Keystone v3', async (t) => {
    const ks = await keystone(api.base);
    t.teardown(() => new Promise<void>((ok) => ks.server.close(() => ok())));
    const calls = [
      { kind: 'statistics', meter: 'cpu_util' },
      { kind: 'statistics', meter: 'cpu_util', period: 300, q: [{ field: 'timestamp', op: 'GTE', ms: from }, { field: 'timestamp', op: 'LT', ms: to }, { field: 'resource_id', op: 'EQUALS', value: 'vm-1' }] },
      { kind: 'meters' },
      { kind: 'resources' },
      { kind: 'resource', id: 'vm-3' },
      { kind: 'capabilities' },
      { kind: 'samples', meter: 'cpu_util' },
      { kind: 'statistics', meter: 'cpu_util', period: 90 },
    ];
    const [whole, ranged, meters, resources, one, caps, rawSamples, badPeriod] = await runJava({ keystone: ks.url, user: 'admin', password: 'secret', project: 'admin', calls });
    const [w] = whole!.result as Array<Record<string, number>>;
    t.equal(w!['count'], all.count, 'count');
    for (const k of ['sum', 'min', 'max', 'avg'] as const) close(t, w![k], all[k], k);
    t.equal(w!['durationStart'], all.first, 'durationStart');
    t.equal(w!['durationEnd'], all.last, 'durationEnd');
    t.equal(w!['period'], 0);

    const want = buckets(cpu.filter((s) => inRange(s) && s.resource_id === 'vm-1'), from, 300);
    const got = ranged!.result as Array<Record<string, number>>;
    t.equal(got.length, want.length, 'one statistics per 5-minute bucket');
    got.forEach((g, i) => {
      const [start, e] = want[i]!;
      t.equal(g['periodStart'], start, `bucket ${i}: periodStart`);
      t.equal(g['periodEnd'], start + 300_000, `bucket ${i}: periodEnd`);
      t.equal(g['count'], e.count, `bucket ${i}: count`);
      for (const k of ['sum', 'min', 'max', 'avg'] as const) close(t, g[k], e[k], `bucket ${i}: ${k}`);
    });

    const wantMeters = [...new Set(raw.map((s) => JSON.stringify([s.counter_name, s.resource_id, s.project_id, s.user_id, s.counter_type!.toUpperCase(), s.counter_unit])))].sort();
    const gotMeters = (meters!.result as Array<Record<string, unknown>>).map((m) => JSON.stringify([m['name'], m['resourceId'], m['projectId'], m['userId'], m['type'], m['unit']])).sort();
    t.same(gotMeters, wantMeters, 'meters, with their type');

    const res = resources!.result as Array<Record<string, unknown>>;
    t.same(res.map((r) => r['id']), RESOURCES.map((r) => r.resource_id), 'resources');
    for (const r of res) {
      const e = summarise(raw.filter((s) => s.resource_id === r['id']));
      t.same([r['first'], r['last']], [e.first, e.last], `${String(r['id'])}: first and last sample`);
    }
    t.match(one!.result, { id: 'vm-3', projectId: 'p2', userId: 'alice', source: 'openstack' }, 'resources().get');
    t.match(caps!.result, { 'statistics:groupby': true, 'samples:query:simple': false }, 'capabilities');
    t.match(rawSamples, { status: 501, class: 'ServerResponseException' }, 'samples: an error, not an empty list');
    t.match(badPeriod, { status: 400, class: 'ClientResponseException', error: /faultstring=period=90 is not valid: a multiple of the stored window period \(60 s\)/ }, 'a bad period: a 400 with the reason');

    const [scoped] = await runJava({ keystone: ks.url, user: 'p1', password: 'secret', project: 'p1', calls: [{ kind: 'statistics', meter: 'cpu_util' }] });
    t.equal((scoped!.result as Array<{ count: number }>)[0]!.count, cpu.filter((s) => s.project_id === 'p1').length, 'a project token: its project\'s samples');
  });
});
