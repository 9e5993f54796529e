// LANE_STATE=worker on SOURCE=redis against the real Redis (and PostgreSQL): the rows equal those of
// LANE_STATE=main, and an owner that dies mid-stream has its lane rebuilt from the consumer's pending
// entries while the other stream's lane goes on; every row is written once, every dead letter once.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { waitFor, type Engine } from '../fixtures/kafka.js';
import { storedTables, testSchema } from '../fixtures/pg.js';
import { drained, freshStream, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

const EXITING_LANE_WORKER = fileURLToPath(new URL('../fixtures/exiting-lane-worker.js', import.meta.url));

const sorted = (e: Engine) => e.rows().map((r) => JSON.stringify(r)).sort();

/** Two streams of 3,000 statements each (12.5 minutes of them, windows of a minute); `exit` puts "exit" mid-way into the first. */
async function twoStreams(t: Test, exit: boolean) {
  const { stream, group, redis } = await freshStream(t);
  const second = `${stream}-b`;
  t.teardown(() => redis.del(second).then(() => {}, () => {}));
  const s1 = statements({ count: 3000, seed: 21 }).map((s) => s.json);
  const s2 = statements({ count: 3000, seed: 22 }).map((s) => s.json);
  // Mid-stream: windows of the first stream before it are closed and written, those after it open.
  await xadd(redis, stream, exit ? [...s1.slice(0, 1500), '"exit"', ...s1.slice(1500)] : s1);
  await xadd(redis, second, s2);
  return { streams: `${stream},${second}`, group, ok: s1.length + s2.length };
}

const dirs = (t: Test, ...names: string[]) => {
  const root = t.testdir();
  return names.map((n) => {
    const dir = join(root, n);
    mkdirSync(dir);
    return { dir };
  });
};

t.test('two streams in their owner workers: the same rows and dead letters as on the main thread', async (t) => {
  const { streams, group, ok } = await twoStreams(t, false);
  const env = { REDIS_STREAMS: streams, REDIS_CONSUMER: 'a', BATCH_SIZE: '100', REDIS_READ_COUNT: '100', WORKER_THREADS: '2' };
  const [dw, dm] = dirs(t, 'worker', 'main');
  const w = startRedisEngine(t, { ...env, REDIS_GROUP_ID: `${group}-w`, LANE_STATE: 'worker' }, dw);
  const m = startRedisEngine(t, { ...env, REDIS_GROUP_ID: `${group}-m`, LANE_STATE: 'main' }, dm);
  await waitFor([w, m], () => drained([w], ok)() && drained([m], ok)(), 'both applied both streams and closed every window');
  t.equal(w.metric('streamstats_assigned_partitions'), 2, 'two lanes');
  const rows = sorted(w);
  t.ok(rows.length > 100, `${rows.length} rows`);
  t.same(rows, sorted(m), 'the owners wrote the rows the main thread did');
  await Promise.all([w.stop(), m.stop()]);
});

/**
 * The first stream's owner dies on "exit" once (STREAMSTATS_TEST_EXIT_ONCE): its lane is read again
 * from its commit point, the other lane goes on; the result equals one undisturbed run on the main
 * thread. `pg`: rows and positions in PostgreSQL (exactly once), else rows to a file.
 */
async function ownerDiesOnce(t: Test, pg: boolean): Promise<void> {
  const { streams, group, ok } = await twoStreams(t, true);
  const marker = join(t.testdir(), 'died');
  process.env['STREAMSTATS_TEST_EXIT_ONCE'] = marker;
  t.teardown(() => {
    delete process.env['STREAMSTATS_TEST_EXIT_ONCE'];
  });
  const lost = pg ? await testSchema(t) : null;
  const undisturbed = pg ? await testSchema(t) : null;
  const env = { REDIS_STREAMS: streams, REDIS_CONSUMER: 'a', BATCH_SIZE: '50', REDIS_READ_COUNT: '50', COMMIT_INTERVAL_SECONDS: '0.2', WORKER_THREADS: '2', LATE_RECORDS: 'dead-letter' };
  const [de, dr] = dirs(t, 'lost', 'reference');
  const e = startRedisEngine(t, { ...env, ...(lost === null ? {} : { SINK: lost.url }), REDIS_GROUP_ID: `${group}-e`, LANE_STATE: 'worker' }, de, EXITING_LANE_WORKER);
  await waitFor([e], () => e.metric('streamstats_lane_rebuilds_total') >= 1 && drained([e], ok)(), 'the lost lane was rebuilt and both streams applied');
  t.ok(existsSync(marker), 'the owner did die');
  t.equal(e.metric('streamstats_lane_rebuilds_total'), 1, 'one lane rebuilt: the other owner\'s lane kept its state');
  t.ok(e.metric('streamstats_records_total', { result: 'ok' }) > ok, 'entries replayed into the rebuilt lane count again as applied');
  t.equal(e.metric('streamstats_assigned_partitions'), 2, 'still two lanes');
  const written = e.metric('streamstats_windows_emitted_total');
  await e.stop();
  await t.resolves(e.done, 'the run ends cleanly: a lost owner does not stop the engine');
  const reference = startRedisEngine(t, { ...env, ...(undisturbed === null ? {} : { SINK: undisturbed.url }), REDIS_GROUP_ID: `${group}-r`, LANE_STATE: 'main', WORKER_THREADS: '1' }, dr);
  await waitFor([reference], drained([reference], ok), 'the reference applied both streams');
  await reference.stop();
  if (lost !== null && undisturbed !== null) {
    const got = await storedTables(lost.pool);
    const expected = await storedTables(undisturbed.pool);
    t.ok(expected.windows!.length > 100, `${expected.windows!.length} windows in the undisturbed run`);
    t.same(got, expected, 'the same windows, series and rollups as an undisturbed run');
  } else {
    const expected = sorted(reference);
    t.ok(expected.length > 100, `${expected.length} rows in the undisturbed run`);
    t.same(sorted(e), expected, 'the same rows as an undisturbed run, none missing and none written twice');
  }
  t.equal(written, reference.metric('streamstats_windows_emitted_total'), 'no window written twice: the replay wrote only what the lost owner had not');
  t.same(e.deadLetters().map((d) => d.reason), reference.deadLetters().map((d) => d.reason), 'the same dead letters (the "exit" entry once, not once per replay)');
}

t.test('an owner that dies once mid-stream: its lane is rebuilt from its pending entries, the other lane goes on, every row once', (t) => ownerDiesOnce(t, false));

t.test('the same with SINK=postgres: the stored windows equal an undisturbed run', (t) => ownerDiesOnce(t, true));
