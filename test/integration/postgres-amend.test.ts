// LATE_RECORDS=amend with the PostgreSQL sink: an outage replayed late updates the stored rows in
// place (one row per identity, its revision raised), and the table, the statistics view and the
// statistics API (rollups included) answer what a punctual run stored. An older revision never
// replaces a newer one.
import t from 'tap';
import type pg from 'pg';
import { queryStatistics } from '../../src/api/index.js';
import type { StatsRow } from '../../src/windows/row.js';
import { runPipeline, rowKey } from '../fixtures/harness.js';
import { differences, outageLine, outageWorkload } from '../fixtures/outage.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const { onTime, arrival, held } = outageWorkload();
const ENV = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '40', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', WORKER_THREADS: '1' };
const files = (points: typeof onTime) => ({ files: { 'in.ndjson': `${points.map(outageLine).join('\n')}\n` } });

type Stored = Pick<StatsRow, 'name' | 'groupby' | 'period_start' | 'count' | 'sum' | 'min' | 'max' | 'avg' | 'stddev'> & { revision: string; closed_by: string | null; late_records: string };

async function stored(pool: pg.Pool): Promise<Map<string, Stored>> {
  const { rows } = await pool.query<Stored & { period_start: Date; count: string }>(
    `SELECT v.name, v.groupby, v.period_start, v.count, v.sum, v.min, v.max, v.avg, v.stddev, w.revision, w.closed_by, w.late_records
     FROM streamstats_statistics v JOIN streamstats_windows w USING (series, period_start, partition, topic)`,
  );
  return new Map(rows.map((r) => {
    const row = { ...r, count: Number(r.count), period_start: r.period_start.toISOString() };
    return [rowKey(row), row];
  }));
}

t.test('an outage replayed late: amended in place, the store and the API answer the punctual run', async (t) => {
  const ref = await testSchema(t);
  const run = await testSchema(t);
  await runPipeline(t, { ...ENV, SINK: ref.url, LATE_RECORDS: 'dead-letter' }, files(onTime));
  const r = await runPipeline(t, { ...ENV, SINK: run.url, LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '10800' }, files(arrival));
  t.equal(r.deadLetters.length, 0, 'nothing dead-lettered');
  t.ok(r.summary.rows > onTime.length / 2 / 2, 'amendments written as rows');
  const want = await stored(ref.pool);
  const got = await stored(run.pool);
  t.same(differences(got, want), [], 'one row per identity, each equal to the punctual run (1e-9 relative)');
  const amended = [...got.values()].filter((x) => x.closed_by === 'amended');
  t.equal(amended.length, 120, "agent-b's 120 windows of the outage: amended in place");
  t.ok(amended.every((x) => Number(x.revision) > 0), 'with a revision above 0');
  t.equal(amended.reduce((a, x) => a + Number(x.late_records), 0), held, 'late_records add up to the held-back points');
  t.ok([...got.values()].filter((x) => x.closed_by !== 'amended').every((x) => x.revision === '0' && x.late_records === '0' && x.closed_by !== null), 'the other rows: revision 0, how they closed');
  t.ok([...want.values()].every((x) => x.revision === '0' && x.closed_by === null), 'dead-letter: the columns keep their defaults');

  // The statistics API, over the whole range and per hour (rolled-up hours included).
  for (const params of [{ meter: 'cpu.util', groupby: ['hostname'] }, { meter: 'cpu.util', groupby: ['hostname'], period: 3600 }, { meter: 'cpu.util', period: 600 }]) {
    const a = await queryStatistics(ref.pool, params);
    const b = await queryStatistics(run.pool, params);
    t.equal(b.length, a.length, `${JSON.stringify(params)}: as many statistics`);
    const bad = a.filter((s, i) => {
      const o = b[i]!;
      return o.count !== s.count || o.min !== s.min || o.max !== s.max || Math.abs(o.sum - s.sum) > 1e-9 * Math.abs(s.sum) || o.period_start !== s.period_start;
    });
    t.same(bad, [], `${JSON.stringify(params)}: the same answers`);
  }
  const rolled = await run.pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_rollups');
  t.ok(Number(rolled.rows[0]!.n) > 0, 'rollups exist (and the API answered through them)');
});

t.test('an upsert never replaces a row with an older revision', async (t) => {
  const s = await testSchema(t);
  const sink = await openSink(t, s.url);
  const row = (revision: number, count: number): StatsRow => ({
    name: 'm', unit: null, groupby: { h: 'a' }, count, sum: count, min: 1, max: 1, avg: 1, stddev: 0,
    duration_start: '2024-03-01T00:00:00.000Z', duration_end: '2024-03-01T00:00:01.000Z', duration: 1, period: 60,
    period_start: '2024-03-01T00:00:00.000Z', period_end: '2024-03-01T00:01:00.000Z', revision, closed_by: revision === 0 ? 'watermark' : 'amended', late_records: revision === 0 ? 0 : count - 1,
  });
  const batch = (r: StatsRow) => ({ rows: [r], ndjson: () => `${JSON.stringify(r)}\n` });
  for (const [rev, count] of [[0, 1], [7, 3], [5, 2], [0, 1]] as const) t.same((await sink.write(batch(row(rev, count)))).rejected, []);
  const { rows } = await s.pool.query<{ count: string; revision: string; late_records: string }>('SELECT count, revision, late_records FROM streamstats_windows');
  t.same(rows, [{ count: '3', revision: '7', late_records: '2' }], 'revision 7 stays: a replayed older revision is not written over it');
});
