// The broker goes away mid-stream for longer than the session timeout and comes back with the same
// data: the engine (the real CLI, a child process) must say so on /readyz (503 during, 200 after),
// reconnect by itself, and the PostgreSQL store must end up complete and not doubled.
// Runs on a private broker (scripts/kafka.sh with its own run dir and ports): the shared one is never
// touched.
import { WINDOW_STORE_DEFAULTS } from '../../src/windows/store.js';
import t from 'tap';
import { uid, type Workload } from '../fixtures/kafka.js';
import { testSchema } from '../fixtures/pg.js';
import { until } from '../fixtures/engine-process.js';
import { assertStoreEquals, createTopicFor, expectedRows, keyedMessages, pgRows, points, privateBroker, produceTo, readyzStatus, sleep, spawnEngine } from '../fixtures/faults.js';
import { GEN_START_MS } from '../fixtures/kafka.js';

const SESSION_TIMEOUT_MS = 6000;
const OUTAGE_MS = 10_000;
const PARTITIONS = 4;
const W: Workload = { count: 40_000, metrics: 100, hosts: 4, seed: 31 };

/** A record far ahead of the workload, one per partition, sent last: it closes every workload window
 * (its own window stays open and is never stored), so no idle flush is needed to finish. */
/** Records a day ahead, as many per partition as the watermark needs to confirm a jump: they close every workload window. */
function sentinels(): Array<{ key: string; value: string; partition: number }> {
  const ts = GEN_START_MS + 24 * 3600_000;
  return Array.from({ length: PARTITIONS * WINDOW_STORE_DEFAULTS.confirmRecords }, (_, i) => ({
    key: `sentinel-${i % PARTITIONS}`,
    partition: i % PARTITIONS,
    value: JSON.stringify({ metric: { name: 'zz.sentinel', dimensions: { p: String(i % PARTITIONS) }, timestamp: ts + Math.floor(i / PARTITIONS), value: 0 }, meta: {}, creation_time: 0 }),
  }));
}

t.test(`broker down ${OUTAGE_MS / 1000} s (> session timeout) mid-stream: /readyz 503 then 200, reconnects, store complete and not doubled`, async (t) => {
  const broker = await privateBroker(t);
  const topic = await createTopicFor(t, broker.brokers, uid('ss-outage'), PARTITIONS, false);
  const db = await testSchema(t);
  const ps = points(W);
  const exp = expectedRows(ps);
  const msgs = keyedMessages(ps);
  const half = Math.floor(msgs.length / 2);

  const e = await spawnEngine(t, {
    SOURCE: 'kafka',
    KAFKA_BROKERS: broker.brokers.join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    SINK: db.url,
    DEAD_LETTER: 'stderr',
    KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
    KAFKA_MAX_WAIT_MS: '100',
    KAFKA_MAX_BYTES_PER_PARTITION: '32768',
    KAFKA_RETRY_MAX_SECONDS: '2',
    BATCH_SIZE: '100',
    COMMIT_INTERVAL_SECONDS: '0.3',
    LAG_INTERVAL_SECONDS: '0.5',
    // Windows close by event time only (the sentinels): the wall clock must not close them during the gap.
    IDLE_FLUSH_SECONDS: '3600',
    WORKER_THREADS: '1',
  });
  await until(() => e.ready(), 'engine joined the group', 60_000);

  // First half, paced, while the engine consumes; the broker goes down right after it.
  await produceTo(broker.brokers, topic, msgs.slice(0, half), { ratePerSecond: 10_000, chunk: 500 });
  const before = await e.metrics();
  t.ok(before !== null && (before.get('streamstats_records_total{result="ok"}') ?? 0) > 0, 'the engine consumed before the outage');
  t.equal(before?.get('streamstats_kafka_connected'), 1, 'connected before the outage');

  const down = Date.now();
  const linesBefore = e.stderr().split('\n').length - 1;
  broker.stop();
  const statuses: Array<number | null> = [];
  let connectedDuring: number | undefined;
  while (Date.now() - down < OUTAGE_MS) {
    statuses.push(await readyzStatus(e.port));
    const m = await e.metrics();
    if (m !== null) connectedDuring = m.get('streamstats_kafka_connected');
    await sleep(500);
  }
  t.comment(`/readyz during the outage: ${statuses.join(' ')}`);
  t.ok(statuses.every((s) => s !== null), 'the engine process kept serving HTTP during the outage');
  t.ok(statuses.includes(503), '/readyz answered 503 during the outage');
  t.equal(statuses[statuses.length - 1], 503, '/readyz still 503 at the end of the outage');
  t.equal(connectedDuring, 0, 'streamstats_kafka_connected is 0 during the outage');
  t.equal(e.child.exitCode, null, 'the engine did not exit');

  broker.start();
  const up = Date.now();
  const outageLines = e.stderr().split('\n').slice(linesBefore, -1);
  const errors = outageLines.filter((l) => l.includes('"level":50'));
  t.comment(`during the outage: ${outageLines.length} log lines, ${errors.length} at error`);
  t.ok(errors.length <= 8, `a few error lines for the outage, repeats counted (${errors.length}: ${errors.map((l) => (JSON.parse(l) as { msg: string }).msg).join(' | ')})`);
  await until(() => e.ready(), 'the engine reconnected on its own (/readyz 200)', 90_000);
  t.comment(`outage ${(up - down) / 1000} s; /readyz 200 again ${(Date.now() - up) / 1000} s after the broker was back`);
  t.equal(await readyzStatus(e.port), 200, '/readyz 200 after the broker is back');

  await produceTo(broker.brokers, topic, [...msgs.slice(half), ...sentinels()], { chunk: 1000 });
  const total = msgs.length + sentinels().length;
  await until(async () => {
    const m = await e.metrics();
    if (m === null) return false;
    const lag = e.sum(m, 'streamstats_consumer_lag_messages');
    const stored = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_statistics');
    const pos = await db.pool.query<{ s: string | null }>('SELECT sum(applied_end) AS s FROM streamstats_positions');
    return m.get('streamstats_assigned_partitions') === PARTITIONS && lag === 0 &&
      Number(stored.rows[0]!.n) >= exp.size && Number(pos.rows[0]!.s ?? 0) === total;
  }, 'every record consumed and every workload window stored', 120_000);
  const m = await e.metrics();
  t.ok((m?.get('streamstats_kafka_reconnects_total') ?? 0) + (/consumer crashed|session failed/.test(e.stderr()) ? 1 : 0) > 0, 'the reconnection is visible (metric or log line)');
  t.match(e.stderr(), /kafka/i, 'the outage is logged');
  assertStoreEquals(t, await pgRows(db.pool), exp);

  e.child.kill('SIGTERM');
  t.equal(await e.exited, 0, 'exits 0 on SIGTERM after the outage');
});
