// kill -9 at CRASH_KILLS (default 10) random moments while the engine (the real CLI, a child process)
// consumes a loaded topic, restarting it each time; a last run finishes. The exactly-once stores must
// then equal the independent computation row for row: PostgreSQL (rows + positions in one
// transaction) and a Kafka output topic written in transactions (EXACTLY_ONCE=true, read_committed).
import t, { type Test } from 'tap';
import { brokers, committedAppliedEnds, createTopic, uid, type Workload } from '../fixtures/kafka.js';
import { testSchema } from '../fixtures/pg.js';
import { caughtUp, until } from '../fixtures/engine-process.js';
import { Rng } from '../fixtures/gen.js';
import { assertStoreEquals, crashEngineEnv, expectedRows, idOf, keyedMessages, pgRows, points, produceTo, readTopic, spawnEngine } from '../fixtures/faults.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '10');
// The two tests share nothing (own topics, group, schema) and spend most of their time waiting for
// the group to expire a killed member (the 6 s session timeout, per kill): run them side by side.
t.jobs = 2;
// Big enough that the kills land while records are still being consumed (checked below).
const W: Workload = { count: 120_000, metrics: 150, hosts: 4, seed: 21 };
const PS = points(W);
const EXP = expectedRows(PS);

interface KillLog {
  delayMs: number;
  /** Records the store holds as consumed (its positions) right after the kill. */
  stored: number;
}

/** Runs the engine, kills it with SIGKILL KILLS times at random moments, then lets a last one finish. */
async function crashAndFinish(t: Test, env: Record<string, string>, seed: number, stored: () => Promise<number>): Promise<KillLog[]> {
  const rng = new Rng(seed);
  const common = crashEngineEnv(env);
  const kills: KillLog[] = [];
  const stderrs: Array<() => string> = [];
  for (let k = 0; k < KILLS; k++) {
    const e = await spawnEngine(t, common);
    stderrs.push(e.stderr);
    await until(() => e.ready(), 'engine joined the group', 60_000);
    const delayMs = rng.int(50, 1500);
    await new Promise((r) => setTimeout(r, delayMs));
    e.child.kill('SIGKILL');
    await e.exited;
    kills.push({ delayMs, stored: await stored() });
  }
  const last = await spawnEngine(t, common);
  stderrs.push(last.stderr);
  await until(() => caughtUp(last, 4), 'the last run caught up', 180_000);
  last.child.kill('SIGTERM');
  t.equal(await last.exited, 0, 'the last run exits 0 on SIGTERM');
  t.equal(kills.length, KILLS, `${KILLS} kills`);
  const midStream = kills.filter((k) => k.stored < W.count).length;
  t.comment(`kill delay after ready (ms) : records stored as consumed after the kill: ${kills.map((k) => `${k.delayMs}:${k.stored}`).join(' ')}`);
  // A kill with nothing left to consume would test nothing: every kill must leave work for the next run.
  t.equal(midStream, KILLS, `${midStream} of ${KILLS} kills landed while records were still unconsumed`);
  // The workload has nothing to reject: a record replayed after a kill is skipped (replay counter),
  // never dead-lettered (as late) because its window was emitted before the kill.
  const deadLetters = stderrs.flatMap((f) => f().split('\n').filter((l) => l.includes('"value_encoding"')));
  t.equal(deadLetters.length, 0, 'no record was dead-lettered in any run', { first: deadLetters.slice(0, 2) });
  return kills;
}

t.test(`PostgreSQL sink: ${KILLS} x kill -9, then the store equals the independent computation`, (t) => postgresKills(t, {}, 101));

// The test above runs the default: the lanes in their owner workers (LANE_STATE=auto), which hand the
// sink COPY tuples. This one keeps the lanes on the main thread, as before the owners could write to
// PostgreSQL.
t.test(`PostgreSQL sink, LANE_STATE=main: ${KILLS} x kill -9, then the store equals the independent computation`, (t) =>
  postgresKills(t, { LANE_STATE: 'main' }, 103));

async function postgresKills(t: Test, lanes: Record<string, string>, seed: number): Promise<void> {
  const topic = await createTopic(t, 4);
  await produceTo(brokers(), topic, keyedMessages(PS));
  const db = await testSchema(t);
  const stored = async () => Number((await db.pool.query<{ s: string | null }>('SELECT sum(applied_end) AS s FROM streamstats_positions')).rows[0]!.s ?? 0);
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), SINK: db.url, ...lanes }, seed, stored);
  assertStoreEquals(t, await pgRows(db.pool), EXP);
  const pos = await db.pool.query<{ n: string; total: string }>('SELECT count(*) AS n, sum(applied_end) AS total FROM streamstats_positions');
  t.equal(Number(pos.rows[0]!.n), 4, 'a position stored per partition');
  t.equal(Number(pos.rows[0]!.total), W.count, 'the stored positions cover every record of the topic');
}

t.test(`Kafka sink with EXACTLY_ONCE: ${KILLS} x kill -9, a read_committed consumer sees every window exactly once`, async (t) => {
  const topic = await createTopic(t, 4);
  const output = await createTopic(t, 2);
  await produceTo(brokers(), topic, keyedMessages(PS));
  const group = uid('g');
  // The transactions commit the input offsets to the group, with the applied end in their metadata.
  const stored = () => committedAppliedEnds(group, topic);
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, SINK: 'kafka', OUTPUT_TOPIC: output, EXACTLY_ONCE: 'true' }, 202, stored);
  // The kill log reads the same committed metadata: it must cover every record once all is consumed.
  t.equal(await stored(), W.count, 'the committed offsets\' applied ends cover every record of the topic');
  const msgs = await readTopic(brokers(), output, EXP.size, { timeoutMs: 60_000, settleMs: 2000 });
  const seen = new Map<string, number>();
  let mismatched = 0;
  for (const m of msgs) {
    const r = JSON.parse(m.value!.toString()) as { name: string; groupby: Record<string, string>; period_start: string; count: number; sum: number; min: number; max: number };
    const id = idOf(r.name, r.groupby, r.period_start);
    seen.set(id, (seen.get(id) ?? 0) + 1);
    const e = EXP.get(id);
    if (e === undefined || e.count !== r.count || e.sum !== r.sum || e.min !== r.min || e.max !== r.max) {
      if (mismatched++ < 3) t.fail('output row differs from the independent computation', { row: r, expected: e ?? 'no such window' });
    }
  }
  t.equal(seen.size, EXP.size, 'every window is in the output');
  t.equal([...seen.values()].filter((n) => n > 1).length, 0, 'no window twice (read_committed)');
  t.equal(msgs.length, EXP.size, 'exactly one committed message per window');
  t.equal(mismatched, 0, 'every window equals the independent computation');
});
