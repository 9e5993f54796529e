// What a Ceilometer client meets beyond the statistics themselves, against data loaded through the
// real pipeline (FORMAT=ceilometer) into PostgreSQL: queries the API cannot answer are 400s that say
// why (never a silently empty answer), Ceilometer's aliases and search_offset, q.type on timestamps,
// period=0, Ceilometer's number types, the resource and capability endpoints, the 501 for raw samples,
// and the headers that state the documented differences. Expected values come from the samples.
import t from 'tap';
import type { Resource, Statistics } from '../../src/api/index.js';
import { loadCeilometer, type CeilometerSample } from '../fixtures/ceilometer/load.js';
import { startApi } from '../fixtures/ceilometer/store.js';
import { testSchema } from '../fixtures/pg.js';

const ADMIN = 'admin-0123456789abcdef0123';
const P1 = 'p1-tok-0123456789abcdef0123';
const TOKENS = `${ADMIN} admin\n${P1} project:p1\n`;
const T0 = Date.parse('2020-02-11T12:00:00Z');
const RESOURCES = [
  { resource_id: 'vm-a', project_id: 'p1', user_id: 'u1' },
  { resource_id: 'vm-b', project_id: 'p1', user_id: 'u2' },
  { resource_id: 'vm-c', project_id: 'p2', user_id: 'u1' },
];

/** Naive UTC, as Ceilometer writes timestamps (and as the API answers them). */
const naive = (ms: number): string => new Date(ms).toISOString().replace(/\.000Z$/, '').replace(/Z$/, '000');

function samples(): CeilometerSample[] {
  const out: CeilometerSample[] = [];
  for (let i = 0; i < 120; i++) {
    const r = RESOURCES[i % 3]!;
    // 5 s apart with a millisecond part: 10 minutes of cpu_util; whole numbers, so sums are whole too.
    const ts = T0 + i * 5000 + 250;
    out.push({ counter_name: 'cpu_util', counter_volume: (i * 7) % 11, counter_unit: '%', counter_type: 'gauge', ...r, source: 'openstack', timestamp: new Date(ts).toISOString().slice(0, 23), resource_metadata: { instance_type: i % 2 === 0 ? 'm1.small' : 'm1.large' } });
    if (i % 4 === 0) out.push({ counter_name: 'disk.read.bytes', counter_volume: i * 1000, counter_unit: 'B', counter_type: 'cumulative', ...r, source: 'openstack', timestamp: new Date(ts).toISOString().slice(0, 23) });
  }
  return out;
}

t.test('Ceilometer clients: answers, or 400s that say why', async (t) => {
  const { url, pool } = await testSchema(t);
  const raw = samples();
  // instance_type kept as a dimension; host is in no sample's kept metadata.
  await loadCeilometer(url, raw, { CEILOMETER_METADATA: 'instance_type' });
  const api = await startApi(t, pool, TOKENS);
  const get = (path: string, token = ADMIN) => api.get(path, token);
  const cpu = raw.filter((s) => s.counter_name === 'cpu_util');
  const sum = (xs: readonly CeilometerSample[]) => xs.reduce((a, s) => a + s.counter_volume, 0);
  const stat = async (query: string, token = ADMIN): Promise<Statistics[]> => {
    const res = await get(`/v2/meters/cpu_util/statistics?${query}`, token);
    t.equal(res.status, 200, `${query}: 200 ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.body as Statistics[];
  };
  const refused = async (path: string, status: number, message: RegExp, token = ADMIN) => {
    const res = await get(path, token);
    t.equal(res.status, status, `${path}: ${status}`);
    const body = res.body as { error_message: { faultstring: string } };
    t.equal(Object.keys(body)[0], 'error_message', `${path}: Ceilometer's error_message first`);
    t.match(body.error_message.faultstring, message, `${path}: says why`);
  };

  await t.test('resource_metadata kept by CEILOMETER_METADATA: metadata.* filters and groupby', async (t) => {
    for (const type of ['m1.small', 'm1.large']) {
      const want = cpu.filter((s) => s.resource_metadata?.['instance_type'] === type);
      for (const field of ['metadata.instance_type', 'resource_metadata.instance_type']) {
        const [a] = await stat(`q.field=${field}&q.value=${type}`);
        t.equal(a?.count, want.length, `${field}=${type}: its samples`);
        t.equal(a?.sum, sum(want));
      }
    }
    const grouped = await stat('groupby=resource_metadata.instance_type');
    t.same(grouped.map((g) => [g.groupby, g.count]), [
      [{ 'resource_metadata.instance_type': 'm1.large' }, cpu.filter((s) => s.resource_metadata?.['instance_type'] === 'm1.large').length],
      [{ 'resource_metadata.instance_type': 'm1.small' }, cpu.filter((s) => s.resource_metadata?.['instance_type'] === 'm1.small').length],
    ], 'groupby=resource_metadata.instance_type');
  });

  await t.test('metadata not kept, misspelled fields: 400, not []', async (t) => {
    const metadata = /^q\.field="resource_metadata\.host" is not valid: resource_metadata is stored only for the keys CEILOMETER_METADATA names/;
    await refused('/v2/meters/cpu_util/statistics?q.field=metadata.host&q.value=compute-1', 400, metadata);
    await refused('/v2/meters/cpu_util/statistics?q.field=resource_metadata.host&q.value=compute-1', 400, metadata);
    await refused('/v2/meters/cpu_util/statistics?groupby=resource_metadata.host', 400, /^groupby\[0\]="resource_metadata\.host" is not valid: resource_metadata is stored only for the keys CEILOMETER_METADATA names/);
    await refused('/v2/meters?q.field=metadata.host&q.value=compute-1', 400, metadata);
    await refused('/v2/meters/cpu_util/statistics?q.field=foo&q.value=bar', 400, /^q\.field="foo" is not valid: no stored row of meter "cpu_util" has that field \(Ceilometer: unrecognized field in query\)/);
    await refused('/v2/meters?q.field=resourceid&q.value=vm-a', 400, /^q\.field="resourceid" is not valid: no stored row of any meter has that field/);
    await refused('/v2/resources?q.field=foo&q.value=bar', 400, /^q\.field="foo" is not valid/);
    t.same((await get('/v2/meters/no.such.meter/statistics?q.field=foo&q.value=bar')).body, [], 'an unknown meter is still [] (Ceilometer)');
    t.same(await stat('q.field=resource_id&q.value=vm-zz'), [], 'a known field with no matching value: [] is the true answer');
    t.same(await stat('q.field=counter_type&q.value=gauge'), await stat(''), 'counter_type is a stored field');
  });

  await t.test('the resource, user and project aliases, and search_offset', async (t) => {
    for (const [alias, field, value] of [['resource', 'resource_id', 'vm-b'], ['user', 'user_id', 'u1'], ['project', 'project_id', 'p2']] as const) {
      const want = cpu.filter((s) => s[field] === value);
      const [a] = await stat(`q.field=${alias}&q.value=${value}`);
      t.equal(a?.count, want.length, `${alias}=${value}: the samples of ${field}=${value}`);
      t.equal(a?.sum, sum(want));
    }
    // Windows of 60 s: ge 12:03:00 with search_offset=2 selects the windows from 12:01:00.
    const from = T0 + 3 * 60_000;
    const [wide] = await stat(`q.field=timestamp&q.op=ge&q.value=${naive(from)}&q.field=search_offset&q.op=eq&q.value=2`);
    t.equal(wide?.count, cpu.filter((s) => Date.parse(`${s.timestamp}Z`) >= from - 120_000).length, 'search_offset widens the start by 2 minutes');
    const [upTo] = await stat(`q.field=timestamp&q.op=lt&q.value=${naive(from)}&q.field=search_offset&q.op=eq&q.value=1`);
    t.equal(upTo?.count, cpu.filter((s) => Date.parse(`${s.timestamp}Z`) < from + 60_000).length, 'and the end by 1 minute');
    await refused('/v2/meters/cpu_util/statistics?q.field=search_offset&q.value=-1', 400, /^q\.field\[0\]="search_offset" with q\.op="eq" and q\.value="-1" is not valid: q\.op eq and a whole number of minutes/);
  });

  await t.test('q.type on timestamps, period=0, number types', async (t) => {
    const bound = `q.field=timestamp&q.op=ge&q.value=${naive(T0 + 120_000)}`;
    const plain = await stat(bound);
    t.equal(plain[0]?.count, cpu.filter((s) => Date.parse(`${s.timestamp}Z`) >= T0 + 120_000).length);
    for (const type of ['datetime', 'boolean', 'string']) t.same(await stat(`${bound}&q.type=${type}`), plain, `q.type=${type} on timestamp is ignored`);
    t.same(await stat('period=0'), await stat(''), 'period=0 is no period');
    t.same(await stat('q.field=resource_id&q.op=&q.value=vm-a'), await stat('q.field=resource_id&q.op=eq&q.value=vm-a'), 'an empty q.op is eq');
    const res = await fetch(`${api.base}/v2/meters/cpu_util/statistics?groupby=resource_id&aggregate.func=cardinality&aggregate.param=user_id&aggregate.func=sum`, { headers: { 'x-auth-token': ADMIN } });
    const text = await res.text();
    // Every sum here is whole: Ceilometer writes it as a float all the same.
    for (const r of RESOURCES) {
      const want = sum(cpu.filter((s) => s.resource_id === r.resource_id));
      t.match(text, new RegExp(`"sum":${want}\\.0,`), `${r.resource_id}: sum ${want} as a JSON float`);
    }
    t.match(text, /"count":40,/, 'count stays an integer');
    t.match(text, /"period":0,/, 'period stays an integer');
    t.match(text, /"aggregate":\{"cardinality\/user_id":1\.0,"sum":\d+\.0\}/, 'aggregate values are floats');
    t.match(text, /"min":0\.0,/, 'min 0 as 0.0');
    t.equal(res.headers.get('x-streamstats-period-alignment'), 'epoch', 'the bucket alignment is stated');
    t.equal(res.headers.get('x-streamstats-timestamp-bounds'), 'whole-windows', 'the timestamp bound rule is stated');
  });

  await t.test('raw samples: a Ceilometer-shaped 501 with the reason, never a 404', async (t) => {
    for (const path of ['/v2/meters/cpu_util', '/v2/meters/cpu_util?q.field=resource_id&q.value=vm-a', '/v2/samples', '/v2/samples/0b5d3e4c', '/v2/query/samples']) {
      await refused(path, 501, /raw samples are not stored/);
    }
  });

  await t.test('/v2/resources and /v2/resources/{id}, from the stored series', async (t) => {
    const all = await get('/v2/resources');
    t.equal(all.status, 200);
    const list = all.body as Resource[];
    t.same(list.map((r) => r.resource_id), RESOURCES.map((r) => r.resource_id));
    for (const r of list) {
      const mine = raw.filter((s) => s.resource_id === r.resource_id);
      const times = mine.map((s) => Date.parse(`${s.timestamp}Z`));
      const want = RESOURCES.find((x) => x.resource_id === r.resource_id)!;
      t.same({ project_id: r.project_id, user_id: r.user_id, source: r.source, metadata: r.metadata }, { project_id: want.project_id, user_id: want.user_id, source: 'openstack', metadata: {} }, r.resource_id);
      t.equal(r.first_sample_timestamp, naive(Math.min(...times)), `${r.resource_id}: first sample`);
      t.equal(r.last_sample_timestamp, naive(Math.max(...times)), `${r.resource_id}: last sample`);
      const base = api.base;
      t.same(r.links, [
        { href: `${base}/v2/resources/${r.resource_id}`, rel: 'self' },
        ...[...new Set(mine.map((s) => s.counter_name))].sort().map((m) => ({ href: `${base}/v2/meters/${m}?q.field=resource_id&q.value=${r.resource_id}`, rel: m })),
      ], `${r.resource_id}: links to itself and its meters`);
      const one = await get(`/v2/resources/${r.resource_id}`);
      t.same(one.body, r, `${r.resource_id}: GET /v2/resources/{id} is the same resource`);
    }
    t.same(((await get('/v2/resources?meter_links=0')).body as Resource[]).map((r) => r.links.length), [1, 1, 1], 'meter_links=0: self only');
    t.same(((await get('/v2/resources?q.field=project_id&q.value=p1')).body as Resource[]).map((r) => r.resource_id), ['vm-a', 'vm-b'], 'q filters');
    t.same(((await get('/v2/resources', P1)).body as Resource[]).map((r) => r.resource_id), ['vm-a', 'vm-b'], 'a project token lists its resources');
    t.same(((await get('/v2/resources?limit=1')).body as Resource[]).length, 1, 'limit');
    await refused('/v2/resources/vm-c', 404, /^Resource "vm-c" Not Found$/, P1);
    await refused('/v2/resources/nothing', 404, /^Resource "nothing" Not Found$/);
  });

  await t.test('/v2/capabilities', async (t) => {
    const res = await get('/v2/capabilities');
    t.equal(res.status, 200);
    const caps = res.body as { api: Record<string, boolean>; storage: Record<string, boolean> };
    t.match(caps.api, { 'statistics:groupby': true, 'statistics:aggregation:selectable:stddev': true, 'statistics:query:metadata': false, 'samples:query:simple': false, 'resources:query:simple': true });
    t.ok(Object.values(caps.api).every((v) => typeof v === 'boolean'), 'every capability is a boolean');
  });
});
