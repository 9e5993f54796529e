// LATE_RECORDS=amend through the whole pipeline with the file sink: an agent outage replayed after
// its windows closed ends, in the newest revision per identity, with the statistics of a run where
// the points arrived on time; beyond AMEND_HORIZON_SECONDS the late points are dead-lettered as late
// and counted; LATE_RECORDS=dead-letter leaves the rows as they always were.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { runPipeline } from '../fixtures/harness.js';
import { differences, newestRevisions, outageLine, outageWorkload } from '../fixtures/outage.js';
import type { Registry } from 'prom-client';
import { metricSum, parseMetrics } from '../fixtures/metrics.js';

async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricSum(parseMetrics(await registry.metrics()), name, labels);
}

const { onTime, arrival, held } = outageWorkload();
const ENV = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '40', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', WORKER_THREADS: '1' };
const files = (points: typeof onTime) => ({ files: { 'in.ndjson': `${points.map(outageLine).join('\n')}\n` } });

t.test('an outage replayed late is amended into the rows a punctual run writes', async (t) => {
  const ref = await runPipeline(t, ENV, files(onTime));
  t.equal(ref.deadLetters.length, 0, 'on time: nothing late');
  const run = await runPipeline(t, { ...ENV, LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '10800' }, files(arrival));
  t.equal(run.deadLetters.length, 0, 'amend: nothing dead-lettered');
  const got = newestRevisions(run.rows);
  const want = newestRevisions(ref.rows);
  t.same(differences(got, want), [], 'the newest revision of every identity equals the punctual run (1e-9 relative)');
  const amended = run.rows.filter((r) => r.closed_by === 'amended');
  t.ok(amended.length >= 120, `agent-b's 120 windows emitted again (${amended.length} amended rows)`);
  t.ok(amended.every((r) => (r.revision ?? 0) > 0 && r.groupby['hostname'] === 'agent-b'), 'amended rows: a revision above 0, only agent-b');
  t.equal([...got.values()].filter((r) => r.groupby['hostname'] === 'agent-b' && r.period_start < '2024-03-01T02:00').reduce((a, r) => a + (r.late_records ?? 0), 0), held, 'late_records of the newest rows add up to the held-back points');
  t.ok(run.rows.every((r) => typeof r.revision === 'number' && typeof r.closed_by === 'string' && typeof r.late_records === 'number'), 'every row says its revision, how it closed, and its late records');
  t.ok(run.rows.some((r) => r.closed_by === 'end_of_input'), 'the last windows: closed by the end of the input');
  t.equal(await metricValue(run.registry, 'streamstats_late_records_total', { outcome: 'amended' }), held, 'late records amended: counted');
  t.equal(await metricValue(run.registry, 'streamstats_amendments_total'), amended.length, 'amendments written: counted');
  t.equal(run.summary.ok, onTime.length, 'every point counted ok');
  t.ok(ref.rows.every((r) => r.revision === undefined && r.closed_by === undefined), 'dead-letter (the default for a file): rows without quality columns, as before');
});

t.test('beyond AMEND_HORIZON_SECONDS late points are dead-lettered as late and counted', async (t) => {
  // The backlog arrives 2 h 10 min in: windows closed more than an hour before are beyond the horizon.
  const run = await runPipeline(t, { ...ENV, LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '3600' }, files(arrival));
  const late = run.deadLetters.filter((d) => d.reason === 'late');
  t.ok(late.length > 0 && late.length < held, `some of the backlog is beyond the horizon (${late.length} of ${held})`);
  t.match(late[0]?.detail, /more than AMEND_HORIZON_SECONDS=3600 before; too late to amend/, 'the dead letter says why');
  const beyond = await metricValue(run.registry, 'streamstats_late_records_total', { outcome: 'beyond_horizon' });
  const amended = await metricValue(run.registry, 'streamstats_late_records_total', { outcome: 'amended' });
  t.equal(beyond, late.length, 'counted beyond the horizon');
  t.equal(amended + beyond, held, 'the rest amended');
  t.equal(run.summary.rejected.late, late.length);
});

// LANE_STATE=worker: the kept windows live in the lane's owner, which amends them and formats the
// revisions; what comes out must not depend on where the lane's state lives.
const rowBytes = (r: Awaited<ReturnType<typeof runPipeline>>): string => readFileSync(join(r.dir, 'rows.ndjson'), 'utf8');
const letters = (r: Awaited<ReturnType<typeof runPipeline>>) => r.deadLetters.map((d) => ({ reason: d.reason, value: d.value, detail: d.detail }));
const AMEND_METRICS = [
  ['streamstats_late_records_total', { outcome: 'amended' }],
  ['streamstats_late_records_total', { outcome: 'beyond_horizon' }],
  ['streamstats_late_records_total', { outcome: 'dead_lettered' }],
  ['streamstats_amendments_total', {}],
  ['streamstats_amend_evicted_windows_total', {}],
] as const;
const amendMetrics = async (r: Awaited<ReturnType<typeof runPipeline>>) => Promise.all(AMEND_METRICS.map(([name, labels]) => metricValue(r.registry, name, labels)));

// 60 series per agent: 3 hours of kept windows (about 25 KB each) pass MAX_STATE_MB=1.
const wide = outageWorkload(11, 3, 60).arrival;
for (const [what, env, points, evicts] of [
  ['every late point amended', { AMEND_HORIZON_SECONDS: '10800' }, arrival, false],
  ['beyond AMEND_HORIZON_SECONDS: dead-lettered', { AMEND_HORIZON_SECONDS: '3600' }, arrival, false],
  // Kept windows evicted for the open series (MAX_STATE_MB): their late records dead-lettered ('state').
  ['kept windows evicted by MAX_STATE_MB', { AMEND_HORIZON_SECONDS: '10800', MAX_STATE_MB: '1', BATCH_SIZE: '400' }, wide, true],
  // Kept windows with their sketches: an amendment merges into a copy of the emitted sketch.
  ['with PERCENTILES', { AMEND_HORIZON_SECONDS: '10800', PERCENTILES: '50,99' }, arrival, false],
] as const) {
  t.test(`LANE_STATE=worker, amend, ${what}: the same row bytes, dead letters and late-record metrics as LANE_STATE=main`, async (t) => {
    const base = { ...ENV, LATE_RECORDS: 'amend', ...env };
    const main = await runPipeline(t, { ...base, LANE_STATE: 'main' }, files(points));
    const mainMetrics = await amendMetrics(main);
    t.ok(mainMetrics[0]! > 0 && mainMetrics[3]! > 0, `main mode amends (${mainMetrics.join(', ')})`);
    if (evicts) t.ok(mainMetrics[4]! > 0 && mainMetrics[2]! > 0, 'and evicts kept windows, whose late records are dead-lettered');
    if ('PERCENTILES' in env) t.ok(main.rows.filter((r) => r.closed_by === 'amended').every((r) => r.sketch !== undefined && r.percentiles !== undefined), 'amended rows carry their amended sketches');
    for (const threads of ['1', '2']) {
      const worker = await runPipeline(t, { ...base, LANE_STATE: 'worker', WORKER_THREADS: threads }, files(points));
      t.equal(rowBytes(worker), rowBytes(main), `WORKER_THREADS=${threads}: the same row bytes (revisions, closed_by, late_records)`);
      t.same(letters(worker), letters(main), `WORKER_THREADS=${threads}: the same dead letters`);
      t.same(await amendMetrics(worker), mainMetrics, `WORKER_THREADS=${threads}: the same late-record outcomes, amendments and evictions`);
      t.same(worker.summary.rejected, main.summary.rejected);
      t.equal(worker.summary.ok, main.summary.ok);
    }
  });
}
