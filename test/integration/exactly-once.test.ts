// kill -9 at random moments while the engine consumes a loaded topic, restart, repeat; then the
// exactly-once stores must equal an independent computation, window for window, with no window twice.
import t, { type Test } from 'tap';
import { crashEngineEnv, expectedRows, idOf } from '../fixtures/faults.js';
import { client, createTopic, keyed, produce, uid, workloadPoints, type Workload } from '../fixtures/kafka.js';
import { testSchema } from '../fixtures/pg.js';
import { caughtUp, startEngineProcess, until } from '../fixtures/engine-process.js';
import { Rng } from '../fixtures/gen.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '3');
// The two tests share nothing (own topics, group, schema) and spend most of their time waiting for
// the group to expire a killed member (the 6 s session timeout, per kill): run them side by side.
t.jobs = 2;
const W: Workload = { count: 40_000, metrics: 100, hosts: 4, seed: 11 };

const expected = (w: Workload) => expectedRows(workloadPoints(w));

/** Runs the engine, kills it with SIGKILL KILLS times at random moments, then lets a last one finish. */
async function crashAndFinish(t: Test, env: Record<string, string>, seed: number): Promise<void> {
  const rng = new Rng(seed);
  const common = crashEngineEnv(env);
  for (let k = 0; k < KILLS; k++) {
    const e = await startEngineProcess(t, common);
    await until(() => e.ready(), 'engine joined the group', 60_000);
    await new Promise((r) => setTimeout(r, rng.int(100, 1500)));
    e.child.kill('SIGKILL');
    await e.exited;
  }
  const last = await startEngineProcess(t, common);
  await until(() => caughtUp(last, 4), 'the last run caught up', 120_000);
  last.child.kill('SIGTERM');
  t.equal(await last.exited, 0, 'the last run exits 0 on SIGTERM');
}

/**
 * The test above runs the default: the lanes in their owner workers (LANE_STATE=auto), which hand the
 * sink COPY tuples, the positions stored with them all the same. This one keeps the lanes on the main
 * thread, as before the owners could write to PostgreSQL.
 */
const MAIN_LANES = { LANE_STATE: 'main' };

t.test(`PostgreSQL sink: ${KILLS} x kill -9, then the store equals the independent computation`, (t) => postgresKills(t, {}, 1));

t.test(`PostgreSQL sink, LANE_STATE=main: ${KILLS} x kill -9, then the store equals the independent computation`, (t) => postgresKills(t, MAIN_LANES, 3));

async function postgresKills(t: Test, lanes: Record<string, string>, seed: number): Promise<void> {
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(W)));
  const db = await testSchema(t);
  const groupId = uid('g');
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: groupId, SINK: db.url, ...lanes }, seed);
  const { rows } = await db.pool.query<{ name: string; groupby: Record<string, string>; period_start: Date; count: string; sum: number; min: number; max: number }>(
    'SELECT name, groupby, period_start, count, sum, min, max FROM streamstats_statistics',
  );
  const exp = expected(W);
  t.equal(rows.length, exp.size, `one row per window (${exp.size})`);
  let bad = 0;
  for (const r of rows) {
    const e = exp.get(idOf(r.name, r.groupby, r.period_start.toISOString()));
    if (e === undefined || Number(r.count) !== e.count || r.sum !== e.sum || r.min !== e.min || r.max !== e.max) {
      if (bad++ < 3) t.fail('row differs from the independent computation', { row: r, expected: e });
    }
  }
  t.equal(bad, 0, 'every stored window equals the independent computation');
  const pos = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_positions');
  t.equal(Number(pos.rows[0]!.n), 4, 'positions stored per partition');
  // The group's offsets trail the store (for lag tools); after the clean last run they are the store's.
  const stored = await db.pool.query<{ partition: number; next_offset: string }>('SELECT partition, next_offset FROM streamstats_positions WHERE topic = $1 ORDER BY partition', [topic]);
  const admin = client().admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const group = [...committed!.partitions].sort((a, b) => a.partition - b.partition).map((p) => [p.partition, Number(p.offset)]);
    t.same(group, stored.rows.map((r) => [r.partition, Number(r.next_offset)]), 'the group committed the positions the sink stored');
  } finally {
    await admin.disconnect();
  }
}

/** The Kafka half: kill -9 a transactional engine KAFKA_KILLS times, then read the output read_committed. */
async function kafkaExactlyOnce(t: Test, env: Record<string, string>, seed: number): Promise<void> {
  const topic = await createTopic(t, 4);
  const output = await createTopic(t, 2);
  await produce(topic, keyed(workloadPoints(W)));
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), SINK: 'kafka', OUTPUT_TOPIC: output, EXACTLY_ONCE: 'true', ...env }, seed);
  const exp = expected(W);
  const seen = new Map<string, number>();
  let mismatched = 0;
  const consumer = client().consumer({ groupId: uid('reader'), readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topics: [output], fromBeginning: true });
  let total = 0;
  await consumer.run({
    eachMessage: async ({ message }) => {
      total++;
      const r = JSON.parse(message.value!.toString()) as { name: string; groupby: Record<string, string>; period_start: string; count: number; sum: number };
      const id = idOf(r.name, r.groupby, r.period_start);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      const e = exp.get(id);
      if (e === undefined || e.count !== r.count || e.sum !== r.sum) mismatched++;
    },
  });
  await until(async () => total >= exp.size, 'all windows read back', 60_000).catch(() => {});
  // A little longer: anything beyond the expected count would be a duplicate.
  await new Promise((r) => setTimeout(r, 1500));
  await consumer.disconnect();
  t.equal(seen.size, exp.size, 'every window is in the output');
  const twice = [...seen].filter(([, n]) => n > 1);
  t.equal(twice.length, 0, `no window twice (read_committed)${twice.length > 0 ? `: ${twice.length}, e.g. ${twice[0]![0]}` : ''}`);
  t.equal(total, exp.size, 'exactly one message per window');
  t.equal(mismatched, 0, 'every window equals the independent computation');
}

t.test(`Kafka sink with EXACTLY_ONCE: ${KILLS} x kill -9, a read_committed consumer sees every window exactly once`, (t) => kafkaExactlyOnce(t, {}, 2));

// The test above runs the default, each lane in its owner worker (LANE_STATE=auto: worker for Kafka),
// where the rows are formatted; this one keeps the lanes on the main thread with 2 decode workers.
t.test(`Kafka sink with EXACTLY_ONCE and LANE_STATE=main (2 decode workers): ${KILLS} x kill -9, a read_committed consumer sees every window exactly once`, (t) =>
  kafkaExactlyOnce(t, { LANE_STATE: 'main', WORKER_THREADS: '2' }, 3));
