// SINK=postgres with LANE_STATE=worker against LANE_STATE=main on the same input: the owners hand the
// sink COPY tuples instead of row objects, and what is stored (windows, series, rollups, positions)
// and what is dead-lettered must not depend on it, nor does an owner that dies and has its lane
// rebuilt by replay double a row. Real workers, real PostgreSQL, the real broker (KAFKA_BROKERS).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import t, { type Test } from 'tap';
import { runPipeline, type RunResult } from '../fixtures/harness.js';
import { brokers, createTopic, keyed, produce, startEngine, uid, waitFor, workloadPoints, type Engine } from '../fixtures/kafka.js';
import { produceTo } from '../fixtures/topics.js';
import { storedTables, testSchema } from '../fixtures/pg.js';

const EXITING_LANE_WORKER = fileURLToPath(new URL('../fixtures/exiting-lane-worker.js', import.meta.url));

const letters = (r: RunResult) => r.deadLetters.map((d) => ({ reason: d.reason, value: d.value, detail: d.detail }));
const counts = (r: RunResult) => ({ records: r.summary.records, ok: r.summary.ok, rejected: r.summary.rejected, rows: r.summary.rows });

const rec = (name: string, tsMs: number, value: number | string, dims: Record<string, string> = { hostname: 'h1' }) =>
  JSON.stringify({ metric: { name, dimensions: dims, timestamp: tsMs, value }, meta: { tenantId: 't', region: 'r' } });

/** The file job: rejects, late records, text PostgreSQL cannot store, hours to roll up. */
function fileJob(): Record<string, string> {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const lines: string[] = [];
  for (let i = 0; i < 900; i++) {
    lines.push(rec(`m${i % 7}`, t0 + i * 15_000, i * 0.25, { hostname: `h${i % 3}` }));
    if (i % 50 === 7) lines.push('{"metric": not json');
    if (i % 90 === 11) lines.push(rec('m1', t0 + i * 15_000, 'NaN-text'));
    // A dimension value PostgreSQL jsonb cannot store: the decoder refuses it (invalid_text) in both modes.
    if (i % 100 === 3) lines.push(rec('nul', t0 + i * 15_000, 1, { hostname: 'a\u0000b' }));
    // Far behind the watermark once it passed the first windows: late.
    if (i > 300 && i % 40 === 0) lines.push(rec('m2', t0 + 5_000, 1));
    // A few windows behind: late, and within AMEND_HORIZON_SECONDS (amended where LATE_RECORDS=amend).
    if (i > 20 && i % 30 === 0) lines.push(rec('m3', t0 + (i - 12) * 15_000, 2));
  }
  return { 'in.ndjson': lines.join('\n') };
}

/** The file job in LANE_STATE=main, then in worker with 1 and 2 owners: the same tables, dead letters and counts. */
async function mainAgainstWorker(t: Test, env: Record<string, string>): Promise<{ r: RunResult; tables: Record<string, string[]> }> {
  const files = fileJob();
  const run = async (mode: string, threads: string) => {
    const s = await testSchema(t);
    const r = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '37', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', ...env, SINK: s.url, LANE_STATE: mode, WORKER_THREADS: threads }, { files });
    return { r, tables: await storedTables(s.pool) };
  };
  const main = await run('main', '1');
  t.ok(main.tables.windows!.length > 500, `${main.tables.windows!.length} windows stored`);
  t.ok(main.tables.rollups!.length > 0, `${main.tables.rollups!.length} rollups`);
  for (const threads of ['1', '2']) {
    const worker = await run('worker', threads);
    t.same(worker.tables, main.tables, `WORKER_THREADS=${threads}: the same windows, series and rollups`);
    t.same(letters(worker.r), letters(main.r), `WORKER_THREADS=${threads}: the same dead letters, in order`);
    t.same(counts(worker.r), counts(main.r), `WORKER_THREADS=${threads}: the same counts`);
  }
  return main;
}

t.test('a file job with rejects, late records dead-lettered, text PostgreSQL cannot store and hours to roll up: the same tables and dead letters', async (t) => {
  const main = await mainAgainstWorker(t, { LATE_RECORDS: 'dead-letter' });
  const reasons = new Set(main.r.deadLetters.map((d) => d.reason));
  t.ok(reasons.has('late') && reasons.has('malformed_json') && reasons.has('invalid_text'), `the input exercises rejects and late records (${[...reasons].join(', ')})`);
});

t.test('the same job with PERCENTILES and LATE_RECORDS=auto (amend with PostgreSQL): sketches and amended windows stored alike', async (t) => {
  const main = await mainAgainstWorker(t, { PERCENTILES: '50,99', LATE_RECORDS: 'auto' });
  const rows = main.tables.windows!.map((j) => JSON.parse(j) as { revision: number; sketch: unknown; sketch_bin: unknown });
  t.ok(rows.some((r) => r.revision > 0), 'late records amended stored windows (revisions above 0)');
  t.ok(rows.every((r) => r.sketch !== null && r.sketch_bin !== null), 'every window has its sketch, as JSON and as sketch_bin');
});

const caughtUp = (e: Engine, n: number) => () =>
  e.metric('streamstats_records_total', { result: 'ok' }) >= n && e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0;

/** The stored positions of a topic, partition -> next offset. */
async function positions(pool: pg.Pool, topic: string): Promise<Array<[number, number]>> {
  const { rows } = await pool.query<{ partition: number; next_offset: string }>('SELECT partition, next_offset FROM streamstats_positions WHERE topic = $1 ORDER BY partition', [topic]);
  return rows.map((r) => [r.partition, Number(r.next_offset)]);
}

t.test('Kafka, 4 partitions: LANE_STATE=worker with 2 owners stores the same tables and positions as LANE_STATE=main', async (t) => {
  const w = { count: 24_000, metrics: 60, hosts: 4 };
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(w)));
  const out: Record<string, { tables: Record<string, string[]>; positions: Array<[number, number]> }> = {};
  for (const [mode, threads] of [['main', '1'], ['worker', '2']] as const) {
    const s = await testSchema(t);
    const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid(`g-${mode}`), BATCH_SIZE: '500', SINK: s.url, LATE_RECORDS: 'dead-letter', LANE_STATE: mode, WORKER_THREADS: threads });
    await waitFor([e], caughtUp(e, w.count), `${mode}: all records applied, all windows closed`);
    await e.stop();
    t.equal(e.deadLetters().length, 0, `${mode}: no dead letters`);
    out[mode] = { tables: await storedTables(s.pool), positions: await positions(s.pool, topic) };
  }
  t.ok(out['main']!.tables.windows!.length > 1000, `${out['main']!.tables.windows!.length} windows`);
  t.same(out['worker']!.tables, out['main']!.tables, 'the same windows, series and rollups');
  t.same(out['worker']!.positions, out['main']!.positions, 'the same positions');
});

t.test('an owner that dies once mid-stream with SINK=postgres: its lane is rebuilt by replay, and the tables equal an undisturbed run', async (t) => {
  const topic = await createTopic(t, 2);
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const point = (name: string, i: number) => JSON.stringify({ metric: { name, dimensions: { hostname: 'h' }, timestamp: t0 + i * 1000, value: i % 97 }, meta: { tenantId: 't', region: 'r' } });
  const msgs: Array<{ partition: number; value: string }> = [];
  for (let i = 0; i < 600; i++) {
    msgs.push({ partition: 0, value: point('a', i) });
    msgs.push({ partition: 1, value: point('b', i) });
    // Mid-stream, after windows of partition 0 were closed and stored (windows of 60 s).
    if (i === 300) msgs.push({ partition: 0, value: '"exit"' });
  }
  // Points an hour on: every window of the run closes, and the hours before roll up.
  msgs.push({ partition: 0, value: point('a', 3600) }, { partition: 1, value: point('b', 3600) });
  await produceTo(brokers(), topic, msgs);
  const marker = join(t.testdir(), 'died');
  process.env['STREAMSTATS_TEST_EXIT_ONCE'] = marker;
  t.teardown(() => {
    delete process.env['STREAMSTATS_TEST_EXIT_ONCE'];
  });
  const env = { KAFKA_TOPICS: topic, BATCH_SIZE: '25', COMMIT_INTERVAL_SECONDS: '0.2', WORKER_THREADS: '2', LATE_RECORDS: 'dead-letter' };
  const total = msgs.length - 1;
  const settled = (x: Engine) => () => x.sum('streamstats_consumer_lag_messages') === 0 && x.metric('streamstats_open_series') === 0 && x.metric('streamstats_records_total', { result: 'ok' }) >= total;
  const lost = await testSchema(t);
  const e = startEngine(t, { ...env, SINK: lost.url, KAFKA_GROUP_ID: uid('g-rebuild'), LANE_STATE: 'worker' }, { workerFile: EXITING_LANE_WORKER });
  await waitFor([e], () => e.metric('streamstats_lane_rebuilds_total') >= 1 && settled(e)(), 'the lost lane was rebuilt and both partitions caught up');
  t.ok(existsSync(marker), 'the owner did die');
  t.equal(e.metric('streamstats_lane_rebuilds_total'), 1, 'one lane rebuilt');
  // Rows stored before the owner died are not written again: the replay starts from their commit point.
  const windowsWritten = e.metric('streamstats_windows_emitted_total');
  await e.stop();
  await t.resolves(e.done, 'the run ends cleanly');
  const undisturbed = await testSchema(t);
  const reference = startEngine(t, { ...env, SINK: undisturbed.url, KAFKA_GROUP_ID: uid('g-ref'), LANE_STATE: 'main', WORKER_THREADS: '1' });
  await waitFor([reference], settled(reference), 'the reference caught up');
  await reference.stop();
  const got = await storedTables(lost.pool);
  const expected = await storedTables(undisturbed.pool);
  t.ok(expected.windows!.length >= 16, `${expected.windows!.length} windows in the undisturbed run`);
  t.same(got, expected, 'the same windows, series and rollups as an undisturbed run');
  t.equal(windowsWritten, reference.metric('streamstats_windows_emitted_total'), 'no window written twice (the replay wrote only what the lost owner had not)');
  t.same(await positions(lost.pool, topic), await positions(undisturbed.pool, topic), 'the same positions');
  t.same(e.deadLetters().map((d) => d.reason), reference.deadLetters().map((d) => d.reason), 'the same dead letters (the "exit" message once)');
});
