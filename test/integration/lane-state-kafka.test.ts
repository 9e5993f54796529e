// LANE_STATE=worker on SOURCE=kafka against the real broker (KAFKA_BROKERS): the rows equal those of
// LANE_STATE=main, one series budget bounds the lanes of every owner, an owner that dies once has its
// lanes rebuilt by replay while the others go on, and an owner that keeps dying on one record exits
// the process with its lanes' commit points where a restart resumes them.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { runToExit } from '../fixtures/engine-process.js';
import { brokers, client, createTopic, keyed, produce, startEngine, uid, waitFor, workloadPoints, type Engine } from '../fixtures/kafka.js';
import { readTopic } from '../fixtures/faults.js';
import { produceTo } from '../fixtures/topics.js';

const EXITING_LANE_CLI = fileURLToPath(new URL('../fixtures/exiting-lane-cli.js', import.meta.url));
const EXITING_LANE_WORKER = fileURLToPath(new URL('../fixtures/exiting-lane-worker.js', import.meta.url));

const caughtUp = (e: Engine, n: number) => () =>
  e.metric('streamstats_records_total', { result: 'ok' }) + e.metric('streamstats_records_total', { result: 'series_limit' }) >= n &&
  e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0;

const sortedLines = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').sort();

t.test('a 4-partition topic: the rows of LANE_STATE=worker with 2 owners are byte-identical (sorted) to LANE_STATE=main', async (t) => {
  const w = { count: 24_000, metrics: 60, hosts: 4 };
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(w)));
  const out: Record<string, string[]> = {};
  for (const [mode, threads] of [['main', '1'], ['worker', '2']] as const) {
    const dir = join(t.testdir(), mode);
    mkdirSync(dir);
    const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid(`g-${mode}`), BATCH_SIZE: '500', LANE_STATE: mode, WORKER_THREADS: threads }, { dir });
    await waitFor([e], caughtUp(e, w.count), `${mode}: all records applied, all windows closed`);
    await e.stop();
    out[mode] = e.rows().map((r) => JSON.stringify(r)).sort();
    t.equal(e.deadLetters().length, 0, `${mode}: no dead letters`);
  }
  t.ok(out['main']!.length > 1000, `${out['main']!.length} rows`);
  t.same(out['worker'], out['main'], 'the same rows');
});

t.test('MAX_SERIES bounds the series of all owners together: 2 lanes in 2 owners, 25 series each, MAX_SERIES=30', async (t) => {
  const topic = await createTopic(t, 2);
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const msgs = [];
  // One 60 s window: no series closes, so exactly MAX_SERIES of them may be open at once.
  for (let rep = 0; rep < 4; rep++) {
    for (let s = 0; s < 50; s++) {
      msgs.push({ partition: s % 2, value: JSON.stringify({ metric: { name: `series_${s}`, dimensions: { hostname: 'h' }, timestamp: t0 + rep * 1000, value: s }, meta: { tenantId: 't', region: 'r' } }) });
    }
  }
  await produceTo(brokers(), topic, msgs);
  const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g-budget'), BATCH_SIZE: '20', LANE_STATE: 'worker', WORKER_THREADS: '2', MAX_SERIES: '30' });
  await waitFor([e], caughtUp(e, msgs.length), 'all records applied or refused, all windows closed');
  await e.stop();
  const series = new Set(e.rows().map((r) => r.name));
  t.equal(series.size, 30, 'MAX_SERIES series in all (each lane alone held 25, under the limit)');
  const partitions = new Set(e.rows().map((r) => r.partition));
  t.same([...partitions].sort(), [0, 1], 'both lanes (one per owner) had series admitted');
  const refused = e.deadLetters().filter((d) => d.reason === 'series_limit');
  t.equal(refused.length, 20 * 4, 'the other 20 series are dead-lettered, every record of them');
  t.match(refused[0]?.detail, /MAX_SERIES/);
});

/**
 * An owner dies once mid-stream on a 2-partition topic with 2 owners: its lane is rebuilt, the other
 * goes on, and the rows equal those of an undisturbed LANE_STATE=main run. `output`: a Kafka topic
 * written in transactions (EXACTLY_ONCE=true, read back read_committed) instead of the rows file.
 */
async function ownerDiesOnce(t: Test, exactlyOnce: boolean): Promise<void> {
  const topic = await createTopic(t, 2);
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const rec = (name: string, i: number) => JSON.stringify({ metric: { name, dimensions: { hostname: 'h' }, timestamp: t0 + i * 1000, value: i % 97 }, meta: { tenantId: 't', region: 'r' } });
  const msgs: Array<{ partition: number; value: string }> = [];
  for (let i = 0; i < 600; i++) {
    msgs.push({ partition: 0, value: rec('a', i) });
    msgs.push({ partition: 1, value: rec('b', i) });
    // Mid-stream, after windows of partition 0 were closed and written (windows of 60 s).
    if (i === 300) msgs.push({ partition: 0, value: '"exit"' });
  }
  // Flush points an hour on: every window of the run closes.
  msgs.push({ partition: 0, value: rec('a', 3600) }, { partition: 1, value: rec('b', 3600) });
  await produceTo(brokers(), topic, msgs);
  const marker = join(t.testdir(), 'died');
  process.env['STREAMSTATS_TEST_EXIT_ONCE'] = marker;
  t.teardown(() => {
    delete process.env['STREAMSTATS_TEST_EXIT_ONCE'];
  });
  const output = exactlyOnce ? await createTopic(t, 2) : null;
  const sink = output === null ? {} : { SINK: 'kafka', OUTPUT_TOPIC: output, EXACTLY_ONCE: 'true' };
  const env = { KAFKA_TOPICS: topic, BATCH_SIZE: '25', COMMIT_INTERVAL_SECONDS: '0.2', WORKER_THREADS: '2' };
  const e = startEngine(t, { ...env, ...sink, KAFKA_GROUP_ID: uid('g-rebuild'), LANE_STATE: 'worker' }, { workerFile: EXITING_LANE_WORKER });
  const total = msgs.length - 1;
  // Caught up, then every window closed by the idle flush (IDLE_FLUSH_SECONDS=1), the flush points' too.
  const settled = (x: Engine) => () => x.sum('streamstats_consumer_lag_messages') === 0 && x.metric('streamstats_open_series') === 0 && x.metric('streamstats_records_total', { result: 'ok' }) >= total;
  await waitFor([e], () => e.metric('streamstats_lane_rebuilds_total') >= 1 && settled(e)(), 'the lost lane was rebuilt and both partitions caught up');
  t.ok(existsSync(marker), 'the owner did die');
  t.equal(e.metric('streamstats_lane_rebuilds_total'), 1, 'one lane rebuilt: the lane of the other owner never lost its state');
  t.ok(e.metric('streamstats_records_total', { result: 'ok' }) > total, 'records replayed into the rebuilt lane count again as applied');
  await e.stop();
  await t.resolves(e.done, 'the run ends cleanly: a lost owner no longer stops the engine');
  const reference = startEngine(t, { ...env, KAFKA_GROUP_ID: uid('g-ref'), LANE_STATE: 'main', WORKER_THREADS: '1' });
  await waitFor([reference], settled(reference), 'the reference caught up');
  await reference.stop();
  const expected = reference.rows().map((r) => JSON.stringify(r)).sort();
  t.ok(expected.length >= 16, `${expected.length} rows in the undisturbed run`);
  const rows = output === null
    ? e.rows().map((r) => JSON.stringify(r)).sort()
    : (await readTopic(brokers(), output, expected.length, { timeoutMs: 30_000, settleMs: 2000 })).map((m) => JSON.stringify(JSON.parse(m.value!.toString()))).sort();
  t.same(rows, expected, `the same rows as an undisturbed run, none missing and none written twice${output === null ? '' : ' (read_committed)'}`);
  const letters = e.deadLetters();
  t.same(letters.map((d) => d.reason), reference.deadLetters().map((d) => d.reason), 'the same dead letters (the "exit" message once, not once per replay)');
}

t.test('an owner that dies once mid-stream: its lane is rebuilt by replay from its commit point, the other lane goes on, and every row is written exactly once', (t) => ownerDiesOnce(t, false));

t.test('the same with EXACTLY_ONCE=true: the transactions after the rebuild hold no row the ones before it committed', (t) => ownerDiesOnce(t, true));

t.test('lanes reassigned on a rebalance while their owners hold open windows (EXACTLY_ONCE=true, 2 instances of 2 owners): every window once, equal to one undisturbed instance', async (t) => {
  const w = { count: 16_000, metrics: 40, hosts: 4, seed: 5 };
  const points = workloadPoints(w);
  const half = points.length / 2;
  const flushAt = points[points.length - 1]!.timestamp + 3_600_000;
  // One point per partition an hour on closes every workload window (the idle flush is off here, so
  // windows stay open, held by their owners, until then; WATERMARK_CONFIRM_RECORDS=1 lets one point
  // move the watermark that far).
  const flush = [0, 1, 2, 3].map((partition) => ({ partition, value: JSON.stringify({ metric: { name: 'flush', dimensions: { hostname: 'h' }, timestamp: flushAt, value: 0 }, meta: { tenantId: 't', region: 'r' } }) }));
  const topic = await createTopic(t, 4);
  const output = await createTopic(t, 2);
  await produce(topic, keyed(points.slice(0, half)));
  const group = uid('g-rebalance');
  const env = { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, BATCH_SIZE: '200', LANE_STATE: 'worker', WORKER_THREADS: '2', IDLE_FLUSH_SECONDS: '600', WATERMARK_CONFIRM_RECORDS: '1', SINK: 'kafka', OUTPUT_TOPIC: output, EXACTLY_ONCE: 'true', KAFKA_SESSION_TIMEOUT_MS: '6000', KAFKA_HEARTBEAT_INTERVAL_MS: '500' };
  const dirs = Object.fromEntries(['a', 'b', 'ref'].map((n) => [n, join(t.testdir(), n)]));
  for (const d of Object.values(dirs)) mkdirSync(d);
  const a = startEngine(t, env, { dir: dirs['a']! });
  await waitFor([a], () => a.metric('streamstats_records_total', { result: 'ok' }) >= half && a.metric('streamstats_open_series') > 0, 'instance A applied the first half and holds open windows');
  const held = a.metric('streamstats_open_series');
  const b = startEngine(t, env, { dir: dirs['b']! });
  await waitFor([a, b], () => b.metric('streamstats_assigned_partitions') > 0 && a.metric('streamstats_assigned_partitions') + b.metric('streamstats_assigned_partitions') === 4 && a.metric('streamstats_rebalances_total') >= 2, 'the group rebalanced: B holds partitions A had');
  t.ok(a.metric('streamstats_assigned_partitions') < 4, `A gave up partitions (${a.metric('streamstats_assigned_partitions')} left) while its owners held ${held} open series`);
  await produceTo(brokers(), topic, [...keyed(points.slice(half)), ...flush]);
  const total = points.length + flush.length;
  const caught = () => a.sum('streamstats_consumer_lag_messages') === 0 && b.sum('streamstats_consumer_lag_messages') === 0 &&
    a.metric('streamstats_records_total', { result: 'ok' }) + b.metric('streamstats_records_total', { result: 'ok' }) >= total;
  await waitFor([a, b], caught, 'both instances caught up');
  t.ok(b.metric('streamstats_records_total', { result: 'ok' }) > 0, 'B applied records of the partitions it took over');
  const reference = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g-ref'), BATCH_SIZE: '200', LANE_STATE: 'main' }, { dir: dirs['ref']! });
  await waitFor([reference], () => reference.metric('streamstats_open_series') === 0 && reference.sum('streamstats_consumer_lag_messages') === 0 && reference.metric('streamstats_records_total', { result: 'ok' }) >= total, 'the reference caught up');
  await reference.stop();
  const expected = reference.rows().filter((r) => r.name !== 'flush').map((r) => JSON.stringify(r)).sort();
  t.ok(expected.length > 1000, `${expected.length} workload rows in the undisturbed run`);
  const read = await readTopic(brokers(), output, expected.length, { timeoutMs: 60_000, settleMs: 2500 });
  await Promise.all([a.stop(), b.stop()]);
  const rows = read.map((m) => JSON.parse(m.value!.toString()) as { name: string }).filter((r) => r.name !== 'flush').map((r) => JSON.stringify(r)).sort();
  t.equal(rows.length, expected.length, 'as many rows as windows: none twice (read_committed), none missing');
  t.same(rows, expected, 'the same rows as one undisturbed instance');
});

t.test('an owner that dies on the same record every time: rebuilt 3 times, then exit status 1 with STREAMSTATS_LANE_OWNER_LOST; the commit never passes what was written, and a restart completes the rows', async (t) => {
  const topic = await createTopic(t, 1);
  const group = uid('g-lost');
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const rec = (name: string, i: number) => JSON.stringify({ metric: { name, dimensions: { hostname: 'h' }, timestamp: t0 + i * 1000, value: i }, meta: { tenantId: 't', region: 'r' } });
  const msgs: Array<{ value: string }> = [];
  for (let i = 0; i < 400; i++) msgs.push({ value: rec('m', i) });
  const exitAt = msgs.length;
  msgs.push({ value: '"exit"' });
  for (let i = 400; i < 800; i++) msgs.push({ value: rec('m', i) });
  await produceTo(brokers(), topic, msgs);
  const dir = t.testdir();
  const env = {
    PATH: process.env['PATH'] ?? '',
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: group,
    SINK: `file:${join(dir, 'rows.ndjson')}`,
    DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`,
    METRICS_PORT: '0',
    PROGRESS: 'off',
    LOG_LEVEL: 'info',
    BATCH_SIZE: '25',
    COMMIT_INTERVAL_SECONDS: '0.1',
    KAFKA_MAX_WAIT_MS: '100',
    LANE_STATE: 'worker',
    WORKER_THREADS: '1',
  };
  const crashed = await runToExit([EXITING_LANE_CLI], env, { timeoutMs: 60_000 });
  t.equal(crashed.code, 1, 'the process exits non-zero');
  t.match(crashed.stderr, /STREAMSTATS_LANE_OWNER_LOST/);
  t.match(crashed.stderr, /owned lane \d+ \(owner 0\) failed/);
  t.match(crashed.stderr, /its owner failed 4 times replaying from position \d+/, 'it gave up after 3 rebuilds from the same commit point');
  const admin = client().admin();
  await admin.connect();
  const [res] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  await admin.disconnect();
  const committed = Number(res?.partitions[0]?.offset ?? -1);
  t.ok(committed <= exitAt, `the committed offset (${committed}) is not past the message that killed the owner (${exitAt})`);
  const before = sortedLines(join(dir, 'rows.ndjson'));
  const ends = before.map((l) => Date.parse((JSON.parse(l) as { period_end: string }).period_end));
  t.ok(ends.length > 0, `windows closed before the crash were written (${ends.length})`);
  t.ok(ends.every((end) => end <= t0 + 400 * 1000), 'nothing written of the records after the owner died');
  // Nothing lost: every window whose records all lie below the committed offset was written.
  const covered = [];
  for (let ws = t0; ws + 60_000 <= t0 + Math.max(0, committed) * 1000; ws += 60_000) covered.push(ws + 60_000);
  t.ok(covered.every((end) => ends.includes(end)), `every window below the committed offset is written (${covered.length})`);
  // The restart (the real owner: "exit" is a string, not a record) resumes from the commit point.
  const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, BATCH_SIZE: '25', LANE_STATE: 'worker' }, { dir });
  await waitFor([e], () => e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0 && e.metric('streamstats_records_total', { result: 'ok' }) > 0, 'the restart caught up');
  await e.stop();
  const reference = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g-ref'), BATCH_SIZE: '25', LANE_STATE: 'main' });
  await waitFor([reference], () => reference.metric('streamstats_open_series') === 0 && reference.sum('streamstats_consumer_lag_messages') === 0 && reference.metric('streamstats_records_total', { result: 'ok' }) >= 800, 'the reference caught up');
  await reference.stop();
  const union = new Map<string, string>();
  for (const r of e.rows()) union.set(r.period_start, JSON.stringify(r));
  const expected = new Map(reference.rows().map((r) => [r.period_start, JSON.stringify(r)]));
  t.same(new Map([...union].sort()), new Map([...expected].sort()), 'crash + restart: every window once, equal to an undisturbed run (rows written twice are the same row)');
});
