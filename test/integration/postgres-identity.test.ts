// The stored series identity is the engine's (name, unit, groupby), against the real PostgreSQL: one
// meter and resource in two units in one window keeps both units' rows, whatever the format, the
// statistics API answers each unit on its own, and a store of the schema version before (where the
// unit was not part of a series) migrates in place with its rows, rollups and ids kept.
import type pg from 'pg';
import t, { type Test } from 'tap';
import { queryStatistics } from '../../src/api/index.js';
import { groupbyKey, seriesId } from '../../src/sinks/postgres/identity.js';
import { MIGRATIONS } from '../../src/sinks/postgres/schema.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { runPipeline } from '../fixtures/harness.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const T0 = Date.parse('2020-02-11T12:42:00.000Z');
const ENV = { SOURCE: 'file:$DIR/in.ndjson', MAX_FUTURE_SECONDS: '0', WORKER_THREADS: '1', BATCH_SIZE: '50' };

interface UnitRow {
  unit: string | null;
  count: string;
  sum: number;
}

async function unitRows(pool: pg.Pool, name: string): Promise<UnitRow[]> {
  const { rows } = await pool.query<UnitRow>('SELECT unit, count, sum FROM streamstats_statistics WHERE name = $1 ORDER BY unit COLLATE "C"', [name]);
  return rows;
}

/** 200 records of one meter and resource in one 60 s window, alternating between two units. */
async function twoUnits(t: Test, env: Record<string, string>, line: (i: number, unit: string, ms: number) => unknown, name: string): Promise<void> {
  const units = ['%', 'ns'];
  const input = Array.from({ length: 200 }, (_, i) => `${JSON.stringify(line(i, units[i % 2]!, T0 + 1000 + i * 100))}\n`).join('');
  const { url, pool } = await testSchema(t);
  const r = await runPipeline(t, { ...ENV, ...env, SINK: url }, { files: { 'in.ndjson': input } });
  t.equal(r.summary.records, 200, 'every record read');
  t.equal(r.summary.ok, 200, 'every record valid');
  t.same(r.deadLetters.map((d) => d.reason), [], 'nothing dead-lettered');
  const sum = (u: string): number => Array.from({ length: 200 }, (_, i) => i).filter((i) => units[i % 2] === u).reduce((a, i) => a + i, 0);
  t.same(await unitRows(pool, name), units.map((u) => ({ unit: u, count: '100', sum: sum(u) })), 'one row per unit, each with its 100 records');
  // Whole range and per period, grouped by resource: each unit is its own result group.
  for (const period of [undefined, 60]) {
    const stats = await queryStatistics(pool, { meter: name, groupby: ['resource_id'], ...(period === undefined ? {} : { period }) });
    t.same(stats.map((s) => [s.unit, s.count, s.sum]).sort(), units.map((u) => [u, 100, sum(u)]), `the API answers both units (period ${period ?? 'none'})`);
  }
}

t.test('ceilometer: one meter and resource in two counter_units in one window loses no record', (t) =>
  twoUnits(t, { FORMAT: 'ceilometer' }, (i, unit, ms) => ({
    counter_name: 'cpu_util', counter_volume: i, counter_unit: unit, counter_type: 'gauge', resource_id: 'r-1', project_id: 'p-1',
    user_id: 'u-1', source: 'openstack', timestamp: new Date(ms).toISOString().replace('Z', ''), resource_metadata: {},
  }), 'cpu_util'));

t.test('json: one name and dimension in two JSON_UNIT values in one window loses no record', (t) =>
  twoUnits(t, { FORMAT: 'json', JSON_NAME: 'n', JSON_VALUE: 'v', JSON_UNIT: 'u', JSON_TIMESTAMP: 'ts', JSON_DIMENSIONS: 'resource_id=r' },
    (i, unit, ms) => ({ n: 'latency', v: i, u: unit, ts: ms, r: 'r-1' }), 'latency'));

function row(name: string, unit: string | null, resource: string, minute: number, count: number): StatsRow {
  const ps = T0 + minute * 60_000;
  const iso = (ms: number): string => new Date(ms).toISOString();
  return {
    name, unit, groupby: { resource_id: resource }, count, sum: count * 2, min: 1, max: 3, avg: 2, stddev: 0.5,
    duration_start: iso(ps + 1000), duration_end: iso(ps + 51_000), duration: 50, period: 60, period_start: iso(ps), period_end: iso(ps + 60_000),
    topic: '', partition: -1,
  };
}

const batch = (rows: StatsRow[]): RowBatch => ({ rows, ndjson: () => rows.map((r) => `${JSON.stringify(r)}\n`).join('') });

t.test('a store of the version before migrates in place: rows and rollups kept, each unit in a series of its own, later writes update them', async (t) => {
  const { url, pool } = await testSchema(t);
  // Versions 1-3 as they were; rows written as version 3's sink stored them: the series id of
  // name + groupby, the unit in the window. Three hours of two series, one with a unit, one without.
  await pool.query('CREATE TABLE streamstats_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  for (let v = 1; v <= 3; v++) {
    await pool.query(MIGRATIONS[v - 1]!);
    await pool.query('INSERT INTO streamstats_migrations (version) VALUES ($1)', [v]);
  }
  const old: StatsRow[] = [];
  for (let m = 0; m < 150; m++) old.push(row('cpu', '%', 'r-1', m, 1 + (m % 5)), row('cpu', null, 'r-2', m, 2));
  for (const r of old) {
    const id = seriesId(r.name, groupbyKey(r.groupby));
    await pool.query('INSERT INTO streamstats_series (id, name, groupby) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [id, r.name, JSON.stringify(r.groupby)]);
    await pool.query(
      `INSERT INTO streamstats_windows (series, period_start, duration_start, duration_end, count, sum, min, max, m2, partition, period, topic, unit)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [id, r.period_start, r.duration_start, r.duration_end, r.count, r.sum, r.min, r.max, r.stddev ** 2 * r.count, r.partition, r.period, r.topic, r.unit],
    );
  }
  await pool.query(`SELECT count(*) FROM streamstats_roll(ARRAY(SELECT id FROM streamstats_series ORDER BY id), ARRAY(SELECT timestamptz '2020-02-11T15:00:00Z' FROM streamstats_series ORDER BY id))`);
  const rollupsBefore = await pool.query<{ n: string; c: string }>('SELECT count(*) AS n, sum(count) AS c FROM streamstats_rollups');
  t.ok(Number(rollupsBefore.rows[0]!.n) >= 4, 'version 3 rolled the complete hours up');
  const query = { meter: 'cpu', groupby: ['resource_id'], period: 3600 };
  const answerBefore = await queryStatistics(pool, query);

  const sink = await openSink(t, url);
  const v = await pool.query<{ v: number }>('SELECT max(version) AS v FROM streamstats_migrations');
  t.equal(v.rows[0]!.v, MIGRATIONS.length, 'migrated to the latest version');
  const series = await pool.query<{ id: string; unit: string | null; groupby: Record<string, string> }>('SELECT id, unit, groupby FROM streamstats_series ORDER BY unit');
  t.same(series.rows.map((s) => [s.id.replace(/-/g, ''), s.unit]), [
    [seriesId('cpu', groupbyKey({ resource_id: 'r-1' }), '%'), '%'],
    [seriesId('cpu', groupbyKey({ resource_id: 'r-2' })), null],
  ], "each series under the sink's id of name, unit and groupby; the one without a unit kept its id, the emptied one is gone");
  const windows = await pool.query<{ n: string; c: string }>('SELECT count(*) AS n, sum(count) AS c FROM streamstats_statistics');
  t.same(windows.rows[0], { n: String(old.length), c: String(old.reduce((a, r) => a + r.count, 0)) }, 'every window kept');
  const rollupsAfter = await pool.query<{ n: string; c: string }>(
    'SELECT count(*) AS n, sum(r.count) AS c FROM streamstats_rollups r JOIN streamstats_series s ON s.id = r.series AND s.unit IS NOT DISTINCT FROM r.unit');
  t.same(rollupsAfter.rows[0], rollupsBefore.rows[0], 'every rollup kept, each under the series of its unit');
  t.same(await queryStatistics(pool, query), answerBefore, 'the API answers as before');

  // The sink writes onto the migrated rows (same identities: an update, not a second row), and the
  // same name and resource in a second unit is a series of its own.
  const again = old.slice(0, 20).map((r) => ({ ...r, count: r.count + 100, sum: (r.count + 100) * 2 }));
  t.same((await sink.write(batch(again))).rejected, []);
  t.same((await sink.write(batch([row('cpu', 'ns', 'r-1', 0, 7)]))).rejected, [], 'a second unit of the same name and resource and window is stored');
  const after = await pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_statistics');
  t.equal(Number(after.rows[0]!.n), old.length + 1, 'the rewritten windows updated in place');
  const first = await pool.query<{ unit: string | null; count: string }>(
    'SELECT unit, count FROM streamstats_statistics WHERE period_start = $1 ORDER BY unit COLLATE "C"', [new Date(T0).toISOString()]);
  t.same(first.rows, [{ unit: '%', count: '101' }, { unit: 'ns', count: '7' }, { unit: null, count: '102' }], 'the first minute: both units of r-1, and r-2');
});
