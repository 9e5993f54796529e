// kill -9 during amendments: an agent outage replayed late (LATE_RECORDS=amend) is consumed by the
// real CLI, killed with SIGKILL AMEND_CRASH_KILLS times (default 4) at random moments and restarted,
// then a last run finishes. Each restart rebuilds the kept closed windows from the replay. The
// exactly-once stores must then hold, per identity, the statistics of the punctual run: nothing
// amended twice, nothing lost. PostgreSQL: one row per identity, amended in place. Kafka with
// EXACTLY_ONCE=true: the newest revision per key read with read_committed.
import t, { type Test } from 'tap';
import { parseCommitMeta } from '../../src/commit/meta.js';
import { brokers, client, committedAppliedEnds, createTopic, uid } from '../fixtures/kafka.js';
import { testSchema } from '../fixtures/pg.js';
import { caughtUp, until } from '../fixtures/engine-process.js';
import { Rng } from '../fixtures/gen.js';
import { assertStoreEquals, crashEngineEnv, expectedRows, pgRows, produceTo, readTopic, spawnEngine } from '../fixtures/faults.js';
import { differences, newestRevisions, outageLine, outageWorkload } from '../fixtures/outage.js';
import type { StatsRow } from '../../src/windows/row.js';

const KILLS = Number(process.env['AMEND_CRASH_KILLS'] ?? '4');
t.jobs = 2;
// 100 series per agent, 3 hours at 30 s: 72,000 points, agent-b's first 2 hours (24,000) held back.
const { onTime, arrival, held, backlogAt } = outageWorkload(31, 3, 100);
const PS = onTime.map((p) => ({ name: p.name, host: 0, json: outageLine(p) }));
const EXP = expectedRows(PS);
const MESSAGES = arrival.map((p) => ({ value: outageLine(p), partition: 0 }));
/** Where agent-b's backlog starts in the input: the kills land in it, while it amends. */
const BACKLOG_START = backlogAt;
// The backlog arrives 2 h 10 min in: a horizon of 2.5 h amends all of it, and windows older than
// that leave the kept set, so the commit position moves on in the last half hour.
const AMEND = { LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '9000' };

async function crashAndFinish(t: Test, env: Record<string, string>, seed: number, stored: () => Promise<number>): Promise<void> {
  const rng = new Rng(seed);
  // Every variant runs with the slow worker, slowed where agent-b's records are (the backlog, and
  // the live half hour after it): the backlog then takes seconds, not the one second it took at full
  // speed, within which one poll of the stored point (an admin client or a query) once saw it pass a
  // kill's target by 13,000 records. The replays before it run at full speed.
  const common = crashEngineEnv({ ...AMEND, SLOW_WORKER_MS: '15', SLOW_WORKER_MATCH: '"agent-b"', ...env });
  const stderrs: Array<() => string> = [];
  const kills: string[] = [];
  for (let k = 0; k < KILLS; k++) {
    const e = await spawnEngine(t, common, { slow: true });
    stderrs.push(e.stderr);
    await until(() => e.ready(), 'engine joined the group', 60_000);
    // Spread over the first 60 % of the backlog (the exactly-once Kafka sink's stored position moves
    // in steps of thousands): each kill once the store holds that much as applied, a moment later.
    const target = Math.round(BACKLOG_START + ((k + 0.5) / KILLS) * held * 0.6);
    let before = 0;
    await until(async () => (before = await stored()) >= target, `the store reached position ${target}`, 120_000);
    const delayMs = rng.int(0, 300);
    await new Promise((r) => setTimeout(r, delayMs));
    e.child.kill('SIGKILL');
    await e.exited;
    kills.push(`${before}+${delayMs}ms:${await stored()}`);
  }
  const last = await spawnEngine(t, common, { slow: true });
  stderrs.push(last.stderr);
  await until(() => caughtUp(last, 1), 'the last run caught up', 240_000);
  last.child.kill('SIGTERM');
  t.equal(await last.exited, 0, 'the last run exits 0 on SIGTERM');
  t.comment(`backlog at ${BACKLOG_START}..${BACKLOG_START + held}; stored as applied when killed + delay : after the kill (transactions in flight may commit): ${kills.join(' ')}`);
  const during = kills.filter((k) => Number(k.split('+')[0]) < BACKLOG_START + held).length;
  t.equal(during, KILLS, 'every kill landed while the backlog was being amended');
  // Replays rebuild kept windows silently: never a dead letter (late) for a record of an earlier run.
  const deadLetters = stderrs.flatMap((f) => f().split('\n').filter((l) => l.includes('"value_encoding"')));
  t.equal(deadLetters.length, 0, 'no record was dead-lettered in any run', { first: deadLetters.slice(0, 2) });
}

t.test(`PostgreSQL sink, amend: ${KILLS} x kill -9 during amendments, then one row per identity equal to the punctual run`, async (t) => {
  const topic = await createTopic(t, 1);
  await produceTo(brokers(), topic, MESSAGES);
  const db = await testSchema(t);
  const stored = async () => Number((await db.pool.query<{ s: string | null }>('SELECT sum(applied_end) AS s FROM streamstats_positions')).rows[0]?.s ?? 0);
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), SINK: db.url }, 303, stored);
  assertStoreEquals(t, await pgRows(db.pool), EXP);
  const q = await db.pool.query<{ n: string; late: string }>("SELECT count(*) AS n, sum(late_records) AS late FROM streamstats_windows WHERE closed_by = 'amended'");
  t.equal(Number(q.rows[0]!.n), 100 * 120, "agent-b's outage windows are stored amended");
  t.ok(Number(q.rows[0]!.late) > 0 && Number(q.rows[0]!.late) <= held, `late_records counted (${q.rows[0]!.late} of ${held}: a restart counts those merged since)`);
  t.equal(await stored(), MESSAGES.length, 'the stored position covers every record');
});

/** The exactly-once half: kill -9 KILLS times during amendments, then read the output read_committed. */
async function exactlyOnceAmend(t: Test, env: Record<string, string>, seed: number): Promise<void> {
  const topic = await createTopic(t, 1);
  const output = await createTopic(t, 1);
  await produceTo(brokers(), topic, MESSAGES);
  const group = uid('g');
  const stored = () => committedAppliedEnds(group, topic);
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, SINK: 'kafka', OUTPUT_TOPIC: output, EXACTLY_ONCE: 'true', ...env }, seed, stored);
  const msgs = await readTopic(brokers(), output, EXP.size + 100 * 120, { timeoutMs: 60_000, settleMs: 3000 });
  const rows = msgs.map((m) => JSON.parse(m.value!.toString()) as StatsRow);
  const newest = newestRevisions(rows);
  const want = new Map([...EXP].map(([k, e]) => [k, { count: e.count, sum: e.sum, min: e.min, max: e.max, avg: e.avg, stddev: e.stddev }]));
  t.same(differences(newest, want), [], 'the newest revision per identity equals the punctual run (1e-9 relative)');
  // A revision is written once: the same identity and revision twice would be an amendment applied twice.
  const seen = new Set<string>();
  let twice = 0;
  for (let i = 0; i < msgs.length; i++) {
    const id = `${msgs[i]!.key!.toString()}|${rows[i]!.revision}`;
    if (seen.has(id)) twice++;
    seen.add(id);
  }
  t.equal(twice, 0, 'no revision of a row committed twice (read_committed)');
  t.ok(rows.every((r) => typeof r.revision === 'number'), 'every row carries its revision');
  t.equal([...newest.values()].filter((r) => r.closed_by === 'amended').length, 100 * 120, "agent-b's outage windows end amended");
}

t.test(`Kafka sink with EXACTLY_ONCE, amend: ${KILLS} x kill -9 during amendments, the newest revision per key equals the punctual run`, (t) => exactlyOnceAmend(t, {}, 404));

t.test(`LANE_STATE=worker, Kafka sink at least once, amend: ${KILLS} x kill -9 during amendments, the newest revision per key equals the punctual run`, async (t) => {
  // The kept windows live in the lane's owner: each restart rebuilds them there from the replay
  // (the commit point's keptFromMs), and amends them again. At least once, a revision may be written
  // again after a restart; the newest one per identity is what a reader keeps. At least once the
  // applied end runs far ahead of a transaction's, which the slowed backlog leaves room for.
  const topic = await createTopic(t, 1);
  const output = await createTopic(t, 1);
  await produceTo(brokers(), topic, MESSAGES);
  const group = uid('g');
  const stored = () => committedAppliedEnds(group, topic);
  await crashAndFinish(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, SINK: 'kafka', OUTPUT_TOPIC: output, LANE_STATE: 'worker' }, 505, stored);
  const msgs = await readTopic(brokers(), output, EXP.size + 100 * 120, { timeoutMs: 60_000, settleMs: 3000 });
  const rows = msgs.map((m) => JSON.parse(m.value!.toString()) as StatsRow);
  const newest = newestRevisions(rows);
  const want = new Map([...EXP].map(([k, e]) => [k, { count: e.count, sum: e.sum, min: e.min, max: e.max, avg: e.avg, stddev: e.stddev }]));
  t.same(differences(newest, want), [], 'the newest revision per identity equals the punctual run (1e-9 relative)');
  t.equal([...newest.values()].filter((r) => r.closed_by === 'amended').length, 100 * 120, "agent-b's outage windows end amended");
  t.ok(rows.every((r) => typeof r.revision === 'number'), 'every row carries its revision');
  t.equal(await stored(), MESSAGES.length, 'the committed point covers every record');
  const admin = client().admin();
  await admin.connect();
  const [res] = await admin.fetchOffsets({ groupId: group, topics: [topic] }).finally(() => admin.disconnect());
  const meta = parseCommitMeta(res?.partitions[0]?.metadata);
  t.ok(meta !== null && typeof meta.keptFromMs === 'number', `the commit point carries keptFromMs (${JSON.stringify(meta)})`);
});

// The test above runs the default, the kept windows in the lane's owner worker; this one keeps them
// on the main thread, where the main thread amends them and writes each emission with its point
// (keptFromMs included) in one transaction.
t.test(`LANE_STATE=main, Kafka sink with EXACTLY_ONCE, amend: ${KILLS} x kill -9 during amendments, no revision twice and the newest per key equals the punctual run`, (t) =>
  exactlyOnceAmend(t, { LANE_STATE: 'main' }, 606));
