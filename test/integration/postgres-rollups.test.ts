// Hourly rollups (schema version 3) against the real PostgreSQL: the sink rolls up complete hours as
// it writes, and every statistics query answers exactly what the windows alone answer: percentiles
// equal to the sketch merged in memory from the same windows, counts equal, sums and deviations equal
// up to float8 rounding. Late and updated windows in rolled hours, deletes and truncation reopen the
// hours they touch; a version 2 store migrates with its windows rolled up; a stored sketch the rollup
// cannot read keeps its series unrolled without failing the sink.
import type pg from 'pg';
import t, { type Test } from 'tap';
import { queryStatistics, type StatisticsParams, type Statistics } from '../../src/api/index.js';
import { Sketch } from '../../src/core/sketch.js';
import { MIGRATIONS } from '../../src/sinks/postgres/schema.js';
import type { PostgresSink } from '../../src/sinks/postgres/sink.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { Rng } from '../fixtures/gen.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const METER = 'cpu_util';
const T0 = Date.parse('2020-02-11T10:00:00.000Z');
const RESOURCES = ['r-a', 'r-b', 'r-c', 'r-d'];
const MINUTES = 200; // 3 h 20 min: three whole hours and a part
const PCTS = ['5', '50', '95'];

function windowRow(rng: Rng, resource: string, minute: number, shift = 0): StatsRow {
  const ps = T0 + minute * 60_000;
  const n = rng.int(1, 8);
  const sk = new Sketch(0.01);
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    // Negatives, zeros and four decades: buckets of both signs and the zero count.
    const x = rng.below(10) === 0 ? 0 : (rng.below(5) === 0 ? -1 : 1) * 10 ** rng.range(-1, 3) + shift;
    xs.push(x);
    sk.add(x);
    sum += x;
    min = Math.min(min, x);
    max = Math.max(max, x);
  }
  const avg = sum / n;
  const stddev = Math.sqrt(xs.reduce((a, x) => a + (x - avg) ** 2, 0) / n);
  const iso = (ms: number): string => new Date(ms).toISOString();
  return {
    name: METER, unit: '%', groupby: { resource_id: resource, project_id: resource === 'r-d' ? 'p2' : 'p1' }, count: n, sum, min, max, avg, stddev,
    duration_start: iso(ps + 1000), duration_end: iso(ps + 51_000), duration: 50, period: 60, period_start: iso(ps), period_end: iso(ps + 60_000),
    topic: '', partition: -1, sketch: sk.toJSON(),
  };
}

function batch(rows: StatsRow[]): RowBatch {
  return { rows, ndjson: () => rows.map((r) => `${JSON.stringify(r)}\n`).join('') };
}

/** Window rows as the engine emits them, minute by minute (each groupby object one per series, as the engine's formatter hands them). */
async function writeInOrder(sink: PostgresSink, rng: Rng, minutes: number, from = 0): Promise<Map<string, StatsRow>> {
  const groupbys = new Map<string, StatsRow['groupby']>();
  const all = new Map<string, StatsRow>();
  for (let m = from; m < from + minutes; m++) {
    const rows = RESOURCES.map((r) => {
      const row = windowRow(rng, r, m);
      row.groupby = groupbys.get(r) ?? groupbys.set(r, row.groupby).get(r)!;
      all.set(`${r} ${row.period_start}`, row);
      return row;
    });
    const res = await sink.write(batch(rows));
    if (res.rejected.length > 0) throw new Error(`rejected: ${JSON.stringify(res.rejected)}`);
  }
  return all;
}

const QUERIES: ReadonlyArray<Omit<StatisticsParams, 'meter'>> = [
  {},
  { period: 3600 },
  { period: 7200 },
  { period: 60 },
  { groupby: ['resource_id'] },
  { groupby: ['resource_id'], period: 3600 },
  // Edges inside hours: the rollups of those hours give way to their windows.
  { q: [{ field: 'timestamp', op: 'ge', value: '2020-02-11T10:17:00' }, { field: 'timestamp', op: 'lt', value: '2020-02-11T12:42:30' }] },
  { q: [{ field: 'timestamp', op: 'gt', value: '2020-02-11T11:00:00' }, { field: 'timestamp', op: 'le', value: '2020-02-11T13:00:00' }], period: 3600 },
  { q: [{ field: 'timestamp', op: 'ge', value: '2020-02-11T11:00:00' }, { field: 'project_id', value: 'p1' }], groupby: ['resource_id'] },
  { q: [{ field: 'resource_id', op: 'ne', value: 'r-b' }], aggregate: [{ func: 'cardinality', param: 'resource_id' }, { func: 'stddev' }] },
];

function withPercentiles(q: Omit<StatisticsParams, 'meter'>): StatisticsParams {
  return { meter: METER, ...q, aggregate: [...(q.aggregate ?? []), { func: 'stddev' }, ...PCTS.map((p) => ({ func: 'percentile', param: p }))] };
}

/** The windows a query selects, grouped as it groups them, merged in memory. */
function expected(rows: Iterable<StatsRow>, q: Omit<StatisticsParams, 'meter'>): Map<string, { count: number; sum: number; min: number; max: number; sketch: Sketch }> {
  const out = new Map<string, { count: number; sum: number; min: number; max: number; sketch: Sketch }>();
  for (const r of rows) {
    const ps = Date.parse(r.period_start);
    const pe = Date.parse(r.period_end);
    const ok = (q.q ?? []).every((f) => {
      if (f.field !== 'timestamp') return f.op === 'ne' ? r.groupby[f.field] !== f.value : r.groupby[f.field] === f.value;
      const v = Date.parse(`${f.value}Z`);
      return f.op === 'ge' ? ps >= v : f.op === 'gt' ? ps > v : pe <= v;
    });
    if (!ok) continue;
    const key = JSON.stringify([q.period === undefined ? null : Math.floor(ps / 1000 / q.period), ...(q.groupby ?? []).map((g) => r.groupby[g])]);
    let g = out.get(key);
    if (g === undefined) out.set(key, (g = { count: 0, sum: 0, min: Infinity, max: -Infinity, sketch: new Sketch(0.01) }));
    g.count += r.count;
    g.sum += r.sum;
    g.min = Math.min(g.min, r.min);
    g.max = Math.max(g.max, r.max);
    g.sketch.merge(r.sketch!);
  }
  return out;
}

function keyOf(s: Statistics, q: Omit<StatisticsParams, 'meter'>): string {
  return JSON.stringify([q.period === undefined ? null : Date.parse(`${s.period_start}Z`) / 1000 / q.period, ...(q.groupby ?? []).map((g) => s.groupby![g])]);
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

/** The same queries with the rollups set aside: every window read as it is. */
async function unrolled<T>(pool: pg.Pool, f: () => Promise<T>): Promise<T> {
  const saved = (await pool.query<{ id: string; ru: string }>('SELECT id, rolled_until::text AS ru FROM streamstats_series')).rows;
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    await c.query("UPDATE streamstats_series SET rolled_until = '-infinity'");
    await c.query('ALTER TABLE streamstats_rollups RENAME TO streamstats_rollups_aside');
    await c.query('CREATE TABLE streamstats_rollups (LIKE streamstats_rollups_aside)');
    await c.query('COMMIT');
  } finally {
    c.release();
  }
  try {
    return await f();
  } finally {
    await pool.query('BEGIN; DROP TABLE streamstats_rollups; ALTER TABLE streamstats_rollups_aside RENAME TO streamstats_rollups; COMMIT');
    await pool.query('UPDATE streamstats_series s SET rolled_until = v.ru FROM unnest($1::uuid[], $2::timestamptz[]) v(id, ru) WHERE s.id = v.id', [
      saved.map((r) => r.id),
      saved.map((r) => r.ru),
    ]);
  }
}

/** Every query: rollups and windows alike, and the in-memory merge of `rows`. */
async function checkQueries(t: Test, pool: pg.Pool, rows: Iterable<StatsRow>, what: string): Promise<void> {
  const list = [...rows];
  const got: Statistics[][] = [];
  for (const q of QUERIES) got.push(await queryStatistics(pool, withPercentiles(q)));
  const raw: Statistics[][] = await unrolled(pool, async () => {
    const out: Statistics[][] = [];
    for (const q of QUERIES) out.push(await queryStatistics(pool, withPercentiles(q)));
    return out;
  });
  QUERIES.forEach((q, i) => {
    const where = `${what}, ${JSON.stringify(q)}`;
    const exp = expected(list, q);
    t.equal(got[i]!.length, exp.size, `${where}: ${exp.size} results`);
    t.equal(raw[i]!.length, got[i]!.length, `${where}: as many as from the windows alone`);
    got[i]!.forEach((s, j) => {
      const e = exp.get(keyOf(s, q));
      const w = raw[i]![j]!;
      if (e === undefined) return t.fail(`${where}: unexpected result ${keyOf(s, q)}`);
      t.ok(s.count === e.count && s.min === e.min && s.max === e.max && close(s.sum, e.sum), `${where} ${keyOf(s, q)}: count, min, max, sum`);
      const pct = PCTS.map((p) => s.aggregate![`percentile/${p}`]);
      t.same(pct, PCTS.map((p) => e.sketch.quantile(Number(p) / 100)), `${where} ${keyOf(s, q)}: percentiles = the in-memory merge`);
      t.same(pct, PCTS.map((p) => w.aggregate![`percentile/${p}`]), `${where}: = the windows alone`);
      const { aggregate: a1, sum: s1, avg: v1, ...rest1 } = s;
      const { aggregate: a2, sum: s2, avg: v2, ...rest2 } = w;
      t.same(rest1, rest2, `${where}: the other fields = the windows alone`);
      t.ok(close(s1, s2) && close(v1, v2) && close(a1!['stddev']!, a2!['stddev']!), `${where}: sum, avg, stddev = the windows alone up to rounding`);
      if (a1!['cardinality/resource_id'] !== undefined) t.equal(a1!['cardinality/resource_id'], a2!['cardinality/resource_id'], `${where}: cardinality`);
    });
  });
}

async function state(pool: pg.Pool): Promise<{ rollups: number; rolled: Record<string, string> }> {
  const r = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM streamstats_rollups');
  const s = await pool.query<{ g: string; ru: string }>("SELECT groupby ->> 'resource_id' AS g, rolled_until::text AS ru FROM streamstats_series ORDER BY 1");
  return { rollups: r.rows[0]!.n, rolled: Object.fromEntries(s.rows.map((x) => [x.g, x.ru])) };
}

t.test('the sink rolls up complete hours; every query answers what the windows alone answer', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rows = await writeInOrder(sink, new Rng(14), MINUTES);
  const st = await state(pool);
  t.equal(st.rollups, RESOURCES.length * 3, 'three whole hours per series rolled up');
  for (const r of RESOURCES) t.equal(st.rolled[r], '2020-02-11 13:00:00+00', `${r}: rolled until the hour of its newest window`);
  const w = await pool.query<{ n: number; c: number }>('SELECT sum(windows)::int AS n, sum(count)::int AS c FROM streamstats_rollups');
  t.equal(w.rows[0]!.n, RESOURCES.length * 180, 'the rollups hold every window of those hours');
  t.equal(w.rows[0]!.c, [...rows.values()].filter((r) => Date.parse(r.period_start) < T0 + 3 * 3_600_000).reduce((a, r) => a + r.count, 0), 'and their points');
  await checkQueries(t, pool, rows.values(), 'in order');
});

t.test('late, updated and deleted windows in rolled hours reopen them; the next hour rolls them again', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rng = new Rng(15);
  const rows = await writeInOrder(sink, rng, MINUTES);
  // An updated window in hour 11 (a replay with other values) and a late one in hour 10 for r-a; a
  // new window in hour 12 for r-b that was not there (minute 150 exists: replaced).
  const upd = windowRow(rng, 'r-a', 75, 1000);
  const late = windowRow(rng, 'r-a', 20, 5000);
  const other = windowRow(rng, 'r-b', 150, -300);
  const res = await sink.write(batch([upd, late, other]));
  t.same(res.rejected, [], 'written');
  for (const r of [upd, late, other]) rows.set(`${r.groupby['resource_id']} ${r.period_start}`, r);
  let st = await state(pool);
  // r-a: reopened from hour 10 (its late window) by the trigger; the emission's own rows (a new
  // series ref for this sink: the groupby objects are new) offer it up to hour 11, so hour 10 is
  // rolled again at once, with the late window, and hour 11 (the updated window) stays open.
  t.equal(st.rolled['r-a'], '2020-02-11 11:00:00+00', 'r-a: reopened from its earliest late window, rolled again up to the updated one');
  t.equal(st.rolled['r-b'], '2020-02-11 12:00:00+00', 'r-b: reopened from hour 12');
  t.equal(st.rolled['r-c'], '2020-02-11 13:00:00+00', 'r-c: untouched');
  t.equal(st.rollups, 3 + 3 + 2 + 1, 'r-a has one rollup left (hour 10 again), r-b two');
  await checkQueries(t, pool, rows.values(), 'after late writes');
  // A window deleted by hand (a script) in a rolled hour of r-c.
  await pool.query("DELETE FROM streamstats_windows w USING streamstats_series s WHERE s.id = w.series AND s.groupby ->> 'resource_id' = 'r-c' AND w.period_start = '2020-02-11T11:30:00Z'");
  rows.delete('r-c 2020-02-11T11:30:00.000Z');
  st = await state(pool);
  t.equal(st.rolled['r-c'], '2020-02-11 11:00:00+00', 'r-c: reopened by the delete');
  await checkQueries(t, pool, rows.values(), 'after a delete');
  // The next hour: every series is offered again and rolls up to hour 14.
  for (const [k, r] of await writeInOrder(sink, rng, 61, MINUTES)) rows.set(k, r);
  st = await state(pool);
  for (const r of RESOURCES) t.equal(st.rolled[r], '2020-02-11 14:00:00+00', `${r}: rolled again, up to hour 14`);
  t.equal(st.rollups, RESOURCES.length * 4, 'four hours per series');
  await checkQueries(t, pool, rows.values(), 'rolled again');
  await pool.query('TRUNCATE streamstats_windows');
  st = await state(pool);
  t.equal(st.rollups, 0, 'truncate: no rollups');
  t.same(new Set(Object.values(st.rolled)), new Set(['-infinity']), 'nothing rolled');
});

t.test('a version 2 store migrates: its windows rolled up, answers unchanged', async (t) => {
  const { pool, url } = await testSchema(t);
  await pool.query('CREATE TABLE streamstats_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  for (let v = 1; v <= 2; v++) {
    await pool.query(MIGRATIONS[v - 1]!);
    await pool.query('INSERT INTO streamstats_migrations (version) VALUES ($1)', [v]);
  }
  // Written as version 2 stored them (through the view's insert trigger, as a backfill script would).
  const rng = new Rng(16);
  const rows = new Map<string, StatsRow>();
  for (let m = 0; m < 130; m++) {
    for (const r of RESOURCES) {
      const w = windowRow(rng, r, m);
      rows.set(`${r} ${w.period_start}`, w);
      await pool.query(
        `INSERT INTO streamstats_statistics (name, groupby, topic, partition, period_start, period, unit, count, sum, min, max, m2,
           duration_start, duration_end, sketch) VALUES ($1, $2, '', -1, $3, 60, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [w.name, JSON.stringify(w.groupby), w.period_start, w.unit, w.count, w.sum, w.min, w.max, w.stddev ** 2 * w.count, w.duration_start, w.duration_end, JSON.stringify(w.sketch)],
      );
    }
  }
  // Every column but the series id, which version 4 derives from the unit too.
  const viewRows = async (): Promise<unknown[]> =>
    (await pool.query('SELECT * FROM streamstats_statistics ORDER BY groupby_key, period_start')).rows.map(({ series: _, ...r }) => r);
  const before = await viewRows();
  const sink = await openSink(t, url);
  const v = await pool.query<{ v: number }>('SELECT max(version) AS v FROM streamstats_migrations');
  t.equal(v.rows[0]!.v, MIGRATIONS.length, 'migrated to the latest version');
  t.same(await viewRows(), before, 'the view reads the same rows');
  const st = await state(pool);
  t.equal(st.rollups, RESOURCES.length * 2, 'two whole hours per series rolled up by the migration');
  for (const r of RESOURCES) t.equal(st.rolled[r], '2020-02-11 12:00:00+00', `${r}: up to the hour of its newest window`);
  await checkQueries(t, pool, rows.values(), 'migrated');
  // The sink writes on into it: an update of a migrated window is seen.
  const upd = windowRow(rng, 'r-b', 5, 77);
  t.same((await sink.write(batch([upd]))).rejected, [], 'update written');
  rows.set(`r-b ${upd.period_start}`, upd);
  await checkQueries(t, pool, rows.values(), 'migrated, then updated');
});

t.test('a stored sketch the rollup cannot read: its series stays unrolled, the sink writes on, the others roll', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rng = new Rng(17);
  const rows = await writeInOrder(sink, rng, 30);
  // A script stores a window whose sketch has a bucket key that is not a number.
  await pool.query(
    `UPDATE streamstats_windows w SET sketch = '{"a":0.01,"pos":{"x1":2},"neg":{},"zero":0,"count":2}'
     FROM streamstats_series s WHERE s.id = w.series AND s.groupby ->> 'resource_id' = 'r-c' AND w.period_start = '2020-02-11T10:10:00Z'`,
  );
  for (const [k, r] of await writeInOrder(sink, rng, 40, 30)) rows.set(k, r);
  const st = await state(pool);
  // Its first offer (at 10:30) had nothing before 10:00 to roll; the one at 11:00 failed on the sketch.
  t.equal(st.rolled['r-c'], '2020-02-11 10:00:00+00', 'r-c: not rolled past the window it cannot read');
  for (const r of ['r-a', 'r-b', 'r-d']) t.equal(st.rolled[r], '2020-02-11 11:00:00+00', `${r}: rolled`);
  const res = await queryStatistics(pool, { meter: METER, groupby: ['resource_id'], q: [{ field: 'resource_id', op: 'ne', value: 'r-c' }], aggregate: [{ func: 'percentile', param: '50' }] });
  const exp = expected([...rows.values()].filter((r) => r.groupby['resource_id'] !== 'r-c'), { groupby: ['resource_id'] });
  t.same(res.map((s) => s.aggregate!['percentile/50']), res.map((s) => exp.get(keyOf(s, { groupby: ['resource_id'] }))!.sketch.quantile(0.5)), 'the other series: percentiles from their rollups');
});

t.test('two sinks writing the same series from two partitions at once, one an hour behind: nothing is lost or counted twice', async (t) => {
  const { url, pool } = await testSchema(t);
  const [a, b] = [await openSink(t, url), await openSink(t, url)];
  const rng = new Rng(18);
  const rows = new Map<string, StatsRow>();
  const write = async (sink: PostgresSink, partition: number, m: number): Promise<void> => {
    const batchRows = RESOURCES.map((r) => ({ ...windowRow(rng, r, m), partition, topic: 'metrics' }));
    for (const r of batchRows) rows.set(`${partition} ${r.groupby['resource_id']} ${r.period_start}`, r);
    const res = await sink.write(batch(batchRows));
    if (res.rejected.length > 0) throw new Error(`rejected: ${JSON.stringify(res.rejected)}`);
  };
  const lag = 70;
  await Promise.all([
    (async () => {
      for (let m = 0; m < MINUTES; m++) await write(a, 0, m);
    })(),
    (async () => {
      for (let m = -lag; m < MINUTES - lag; m++) if (m >= 0) await write(b, 1, m);
        else await new Promise((r) => setImmediate(r));
    })(),
  ]);
  const st = await state(pool);
  t.ok(st.rollups > 0, `rolled up while both wrote (${st.rollups} rollups)`);
  await checkQueries(t, pool, rows.values(), 'two writers');
});

t.test('hourly windows are not rolled up (a rollup would hold one window): answers from the windows', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const rng = new Rng(19);
  const rows: StatsRow[] = [];
  for (let h = 0; h < 6; h++) {
    const hourly = RESOURCES.map((r) => {
      const w = windowRow(rng, r, h * 60);
      return { ...w, period: 3600, period_end: new Date(Date.parse(w.period_start) + 3_600_000).toISOString() };
    });
    rows.push(...hourly);
    t.same((await sink.write(batch(hourly))).rejected, [], `hour ${h} written`);
  }
  const st = await state(pool);
  t.equal(st.rollups, 0, 'no rollups');
  t.same(new Set(Object.values(st.rolled)), new Set(['-infinity']), 'nothing rolled');
  for (const q of [{}, { period: 7200 }, { groupby: ['resource_id'] }]) {
    const res = await queryStatistics(pool, withPercentiles(q));
    const exp = expected(rows, q);
    t.equal(res.length, exp.size, `${JSON.stringify(q)}: results`);
    for (const s of res) {
      const e = exp.get(keyOf(s, q))!;
      t.same(PCTS.map((p) => s.aggregate![`percentile/${p}`]), PCTS.map((p) => e.sketch.quantile(Number(p) / 100)), `${JSON.stringify(q)} ${keyOf(s, q)}: percentiles`);
      t.equal(s.count, e.count, 'count');
    }
  }
});
