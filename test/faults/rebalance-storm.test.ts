// A rebalance storm: for ~30 s, up to three engine instances (child processes with a slowed worker,
// so consumption lasts through the storm) join and leave one group at random, some leaving with
// SIGTERM (graceful: drain, commit, leave) and some with kill -9 (the group only notices after the
// session timeout). Then the survivors finish; the PostgreSQL store must be complete and not doubled.
import t, { type Test } from 'tap';
import type { EngineProcess } from '../fixtures/engine-process.js';
import { until } from '../fixtures/engine-process.js';
import { Rng } from '../fixtures/gen.js';
import { brokers, createTopic, uid, type Workload } from '../fixtures/kafka.js';
import { testSchema } from '../fixtures/pg.js';
import { assertStoreEquals, expectedRows, keyedMessages, pgRows, points, produceTo, sleep, spawnEngine } from '../fixtures/faults.js';

const STORM_MS = Number(process.env['STORM_SECONDS'] ?? '30') * 1000;
const MAX_INSTANCES = 3;
const PARTITIONS = 6;
const W: Workload = { count: 60_000, metrics: 120, hosts: 4, seed: 41 };

interface Instance {
  readonly n: number;
  readonly e: EngineProcess;
  end?: 'SIGTERM' | 'SIGKILL';
}

t.test(`rebalance storm: instances join and leave (SIGTERM and kill -9) for ${STORM_MS / 1000} s; the store is complete and not doubled`, async (t: Test) => {
  const topic = await createTopic(t, PARTITIONS);
  const ps = points(W);
  const exp = expectedRows(ps);
  await produceTo(brokers(), topic, keyedMessages(ps));
  const db = await testSchema(t);
  const env = {
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    SINK: db.url,
    DEAD_LETTER: 'stderr',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
    KAFKA_MAX_WAIT_MS: '100',
    KAFKA_MAX_BYTES_PER_PARTITION: '16384',
    BATCH_SIZE: '50',
    COMMIT_INTERVAL_SECONDS: '0.3',
    LAG_INTERVAL_SECONDS: '0.5',
    IDLE_FLUSH_SECONDS: '1',
    WORKER_THREADS: '1',
    SLOW_WORKER_MS: '40',
    SHUTDOWN_TIMEOUT_SECONDS: '20',
  };
  const rng = new Rng(7);
  const running: Instance[] = [];
  const ended: Instance[] = [];
  let started = 0;
  const launch = async () => {
    const e = await spawnEngine(t, env, { slow: true });
    running.push({ n: ++started, e });
  };
  let joins = 0;
  const joinsOf = async (i: Instance) => (await i.e.metrics())?.get('streamstats_rebalances_total') ?? 0;
  const end = async (how: 'SIGTERM' | 'SIGKILL') => {
    const i = running.splice(rng.int(0, running.length - 1), 1)[0]!;
    joins += await joinsOf(i);
    i.end = how;
    i.e.child.kill(how);
    ended.push(i);
    // SIGTERM: let it leave gracefully in the background, as an orchestrator would.
    if (how === 'SIGKILL') await i.e.exited;
  };

  await launch();
  await until(() => running[0]!.e.ready(), 'the first instance joined', 60_000);
  const stormStart = Date.now();
  const log: string[] = [];
  while (Date.now() - stormStart < STORM_MS) {
    await sleep(rng.int(1000, 3500));
    if (running.length === 0 || (running.length < MAX_INSTANCES && rng.bool(0.55))) {
      await launch();
      log.push(`+${started}`);
    } else {
      const how = rng.bool(0.5) ? 'SIGTERM' : 'SIGKILL';
      await end(how);
      log.push(how === 'SIGTERM' ? '-term' : '-kill');
    }
  }
  const storedAtStormEnd = Number((await db.pool.query<{ s: string | null }>('SELECT sum(applied_end) AS s FROM streamstats_positions')).rows[0]!.s ?? 0);
  if (running.length === 0) await launch();
  t.comment(`storm: ${log.join(' ')}; ${running.length} left running; records stored as consumed at the end of the storm: ${storedAtStormEnd} of ${W.count}`);
  t.ok(storedAtStormEnd < W.count, 'the storm hit a stream still being consumed');
  t.ok(ended.some((i) => i.end === 'SIGTERM') && ended.some((i) => i.end === 'SIGKILL'), 'instances left both ways (SIGTERM and kill -9)');
  t.ok(started >= 4, `instances joined repeatedly (${started} started)`);

  // The survivors take over every partition (the killed members expire after the session timeout).
  await until(async () => {
    let assigned = 0;
    let lag = 0;
    let open = 0;
    for (const i of running) {
      const m = await i.e.metrics();
      if (m === null) return false;
      assigned += m.get('streamstats_assigned_partitions') ?? 0;
      lag += i.e.sum(m, 'streamstats_consumer_lag_messages');
      open += m.get('streamstats_open_series') ?? 0;
    }
    if (assigned !== PARTITIONS || lag !== 0 || open !== 0) return false;
    const pos = await db.pool.query<{ s: string | null }>('SELECT sum(applied_end) AS s FROM streamstats_positions');
    return Number(pos.rows[0]!.s ?? 0) === W.count;
  }, 'the surviving instances caught up', 180_000);

  assertStoreEquals(t, await pgRows(db.pool), exp);
  for (const i of running) joins += await joinsOf(i);
  t.ok(joins > started, `members rejoined as others came and went (${joins} group joins by ${started} instances)`);

  for (const i of running) i.e.child.kill('SIGTERM');
  const codes = await Promise.all([...ended.filter((i) => i.end === 'SIGTERM'), ...running].map(async (i) => [i.n, await i.e.exited] as const));
  t.same(codes.filter(([, c]) => c !== 0), [], 'every instance stopped with SIGTERM exited 0 (drained, committed, left within the shutdown timeout)');
});
