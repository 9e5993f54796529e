// Conformance with the Ceilometer v2 API reference: stored data that reproduces the reference's
// documented examples (test/fixtures/ceilometer/v2-examples.ts, each citing its source file) must be
// answered with the same fields, the same JSON types and, where stored data can say it, the same values.
import t, { type Test } from 'tap';
import { startApi, rowsOf, type RawSample } from '../fixtures/ceilometer/store.js';
import {
  METER_TYPE,
  METERS_LIST_RESPONSE,
  STATISTICS_CARDINALITY_RESPONSE,
  STATISTICS_LIST_RESPONSE,
  STATISTICS_STDDEV_RESPONSE,
  STATISTICS_TYPE,
  WSME_DATETIME,
  type WsmeType,
} from '../fixtures/ceilometer/v2-examples.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const ADMIN = 'admin-0123456789abcdef0123';

function typed(v: unknown, type: WsmeType): boolean {
  switch (type) {
    case 'string': return typeof v === 'string' || v === null;
    case 'number': return typeof v === 'number';
    case 'integer': return Number.isInteger(v);
    case 'timestamp': return typeof v === 'string' && WSME_DATETIME.test(v);
    case 'text-map': return v === null || (typeof v === 'object' && Object.values(v as object).every((x) => typeof x === 'string' || x === null));
    case 'number-map': return typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'number');
  }
}

/** Every field is one of the WSME type's, with its JSON type; every field of the documented example is there. */
function conforms(t: Test, got: Record<string, unknown>, example: Record<string, unknown>, types: Readonly<Record<string, WsmeType>>, label: string): void {
  for (const [k, v] of Object.entries(got)) {
    t.ok(k in types, `${label}: ${k} is a field of the WSME type`);
    if (k in types) t.ok(typed(v, types[k]!), `${label}: ${k} is ${types[k]} (${JSON.stringify(v)})`);
  }
  for (const k of Object.keys(example)) t.ok(k in got, `${label}: the example's ${k} is answered`);
  if (typeof example['aggregate'] === 'object' && example['aggregate'] !== null) {
    t.same(Object.keys(got['aggregate'] as object).sort(), Object.keys(example['aggregate']).sort(), `${label}: the aggregate object's keys`);
  }
}

const at = (iso: string) => Date.parse(`${iso}Z`);

t.test('responses conform to the Ceilometer v2 API reference examples', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const samples: RawSample[] = [];
  // statistics-list-response.json: 10 samples of 1..9 summing to 45, 16:42:00 to 16:47:00.
  [1, 9, 4, 5, 4, 5, 4, 5, 4, 4].forEach((value, i) => {
    samples.push({ name: 'volume.size', unit: 'GiB', dims: { resource_id: 'v0', project_id: 'p' }, ts: at('2013-01-04T16:42:00') + Math.round((i * 300_000) / 9), value });
  });
  // meters.inc, cardinality by project with period 900: 19 samples of 3 resources, 22 of 4, 2 of 2.
  const project = '061a5c91811e4044b7dc86c6136c4f99';
  const spread = (n: number, resources: number, from: string, to: string, first: number) => {
    for (let i = 0; i < n; i++) {
      const ts = i === 0 ? at(from) : i === n - 1 ? at(to) : at(from) + Math.floor(((at(to) - at(from)) * i) / (n - 1));
      samples.push({ name: 'instance', unit: 'instance', dims: { project_id: project, resource_id: `i${first + (i % resources)}` }, ts, value: 1 });
    }
  };
  // Stored times have milliseconds: the reference's .823919 is stored as .823.
  spread(19, 3, '2014-01-31T10:00:41.823', '2014-01-31T10:06:10.301', 0);
  spread(22, 4, '2014-01-31T10:15:15', '2014-01-31T10:28:43.003', 10);
  spread(2, 2, '2014-01-31T10:35:15', '2014-01-31T10:35:15', 20);
  // meters.inc, stddev of cpu_util.
  for (let i = 0; i < 20; i++) samples.push({ name: 'cpu_util', unit: '%', dims: { resource_id: 'c' }, ts: at('2014-01-30T11:13:23') + i * 5_000_000, value: i % 3 });
  // meters-list-response.json: Meter.sample().
  const m = METERS_LIST_RESPONSE[0]!;
  samples.push({ name: m.name, unit: m.unit, dims: { resource_id: m.resource_id, project_id: m.project_id, user_id: m.user_id, source: m.source, counter_type: m.type }, ts: at('2015-01-01T12:00:00'), value: 1 });
  t.same((await sink.write({ rows: rowsOf(samples), ndjson: () => '' })).rejected, []);
  const api = await startApi(t, pool, `${ADMIN} admin\n`);
  const get = async (p: string) => {
    const res = await api.get(p, ADMIN);
    t.equal(res.status, 200, `${p}: 200`);
    return res.body as Array<Record<string, unknown>>;
  };

  await t.test('statistics-list-response.json: the same answer, field for field', async (t) => {
    const got = await get('/v2/meters/volume.size/statistics?period=7200');
    conforms(t, got[0]!, STATISTICS_LIST_RESPONSE[0]!, STATISTICS_TYPE, 'statistics');
    // groupby: null is what Ceilometer answers without groupby (the stddev example shows it); the
    // WSME sample() leaves it unset, which WSME leaves out.
    t.same(got, [{ ...STATISTICS_LIST_RESPONSE[0]!, groupby: null }]);
  });

  await t.test('aggregate.func=stddev: stddev inside aggregate, period 0 and the samples\' span without period', async (t) => {
    const got = await get('/v2/meters/cpu_util/statistics?aggregate.func=stddev');
    const example = STATISTICS_STDDEV_RESPONSE[0]!;
    conforms(t, got[0]!, example, STATISTICS_TYPE, 'stddev');
    t.notOk('stddev' in got[0]!, 'no top-level stddev');
    for (const k of ['period', 'period_start', 'duration_start', 'groupby', 'unit'] as const) t.same(got[0]![k], example[k], `${k} as in the example`);
    t.equal(got[0]!['period_end'], got[0]!['duration_end'], 'period_end = duration_end without period');
    const values = Array.from({ length: 20 }, (_, i) => i % 3);
    const mean = values.reduce((a, b) => a + b, 0) / 20;
    const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / 20);
    t.ok(Math.abs((got[0]!['aggregate'] as { stddev: number }).stddev - sd) < 1e-12, 'population stddev, as Ceilometer\'s stddev_pop');
  });

  await t.test('cardinality and count by project, period 900: the documented groups', async (t) => {
    // The project filter leaves out the Meter.sample() row, also named instance.
    const got = await get(`/v2/meters/instance/statistics?aggregate.func=cardinality&aggregate.param=resource_id&aggregate.func=count&groupby=project_id&period=900&q.field=project_id&q.value=${project}`);
    t.equal(got.length, 3);
    STATISTICS_CARDINALITY_RESPONSE.forEach((example, i) => {
      const g = got[i]!;
      conforms(t, g, example, STATISTICS_TYPE, `group ${i}`);
      // The reference's microseconds are stored as milliseconds: .823919 -> .823000.
      const ms = (s: string) => s.replace(/\.(\d{3})\d{3}$/, '.$1000');
      const want = { ...example, duration_start: ms(example.duration_start), duration_end: ms(example.duration_end) };
      want.duration = (Date.parse(`${want.duration_end}Z`) - Date.parse(`${want.duration_start}Z`)) / 1000;
      for (const k of Object.keys(want) as Array<keyof typeof want>) t.same(g[k], want[k], `group ${i}: ${k}`);
    });
  });

  await t.test('meters-list-response.json: the same Meter, meter_id included', async (t) => {
    const got = await get(`/v2/meters?q.field=resource_id&q.value=${m.resource_id}`);
    conforms(t, got[0]!, m, METER_TYPE, 'meter');
    t.same(got, METERS_LIST_RESPONSE);
  });
});
