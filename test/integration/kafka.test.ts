// Against a real Kafka broker (KAFKA_BROKERS; npm test starts one): the Kafka source end to end.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { StatsRow } from '../../src/windows/row.js';
import { rowKey } from '../fixtures/harness.js';
import { close, reference, type RefRecord } from '../fixtures/reference.js';
import { brokers, createTopic, keyed, produce, startEngine, uid, waitFor, workloadPoints, type Engine, type Workload } from '../fixtures/kafka.js';

const SLOW_WORKER = fileURLToPath(new URL('../fixtures/slow-worker.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

function expected(w: Workload) {
  const recs: RefRecord[] = workloadPoints(w).map((p) => {
    const o = JSON.parse(p.json) as { metric: { name: string; dimensions: Record<string, string>; timestamp: number; value: number }; meta: { tenantId: string; region: string } };
    return { name: o.metric.name, dims: { ...o.metric.dimensions, _tenant_id: o.meta.tenantId, _region: o.meta.region }, tsMs: o.metric.timestamp, value: o.metric.value };
  });
  return reference([recs], 60_000, 5_000).rows;
}

/** Union of rows by identity; fails if one window was emitted twice with different values. */
function union(t: Test, rows: readonly StatsRow[]): Map<string, StatsRow> {
  const out = new Map<string, StatsRow>();
  let conflicts = 0;
  for (const r of rows) {
    const k = rowKey(r);
    const prev = out.get(k);
    if (prev !== undefined && (prev.count !== r.count || prev.sum !== r.sum || prev.min !== r.min || prev.max !== r.max)) {
      if (conflicts++ < 3) t.fail(`window ${k} emitted twice with different values`, { first: prev, second: r });
    }
    out.set(k, r);
  }
  t.equal(conflicts, 0, 'no window emitted twice with different values');
  return out;
}

function compare(t: Test, actual: Map<string, StatsRow>, exp: ReturnType<typeof expected>): void {
  t.equal(actual.size, exp.size, `all ${exp.size} windows emitted`);
  let bad = 0;
  for (const [k, e] of exp) {
    const a = actual.get(k);
    const ok = a !== undefined && a.count === e.count && a.min === e.min && a.max === e.max && close(a.sum, e.sum) && close(a.stddev, e.stddev, 1e-7);
    if (!ok && bad++ < 3) t.fail(`row ${k}`, { actual: a, expected: e });
  }
  t.equal(bad, 0, 'every window equals the independent computation');
}

const caughtUp = (engines: readonly Engine[], n: number) => () =>
  engines.reduce((a, e) => a + e.metric('streamstats_records_total', { result: 'ok' }), 0) >= n &&
  engines.every((e) => e.metric('streamstats_open_series') === 0 && e.sum('streamstats_consumer_lag_messages') === 0);

t.test('a 4-partition topic: the emitted statistics equal an independent computation', async (t) => {
  const w = { count: 20_000, metrics: 50, hosts: 4 };
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(w)));
  const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), BATCH_SIZE: '500' });
  await waitFor([e], caughtUp([e], w.count), 'all records applied, all windows closed');
  const rows = e.rows();
  compare(t, union(t, rows), expected(w));
  t.equal(rows.length, expected(w).size, 'each window emitted once');
  t.same([...new Set(rows.map((r) => r.topic))], [topic], 'rows carry the topic');
  t.same([...new Set(rows.map((r) => r.partition))].sort(), [0, 1, 2, 3], 'and the partition');
  const bySeries = new Map<string, Set<number>>();
  for (const r of rows) {
    const s = JSON.stringify([r.name, r.groupby]);
    bySeries.set(s, (bySeries.get(s) ?? new Set()).add(r.partition!));
  }
  t.ok([...bySeries.values()].every((p) => p.size === 1), 'a series stays in one partition (keyed by series)');
  t.equal(e.metric('streamstats_consumer_lag_seconds', { topic, partition: '0' }), 0, 'lag seconds 0 when caught up');
  t.equal(e.metric('streamstats_lag_state', { topic, partition: '0', state: 'keeping_up' }), 1, 'keeping up when caught up');
  t.equal(e.metric('streamstats_catch_up_seconds', { topic, partition: '0' }), 0, 'nothing to catch up');
  t.ok(e.metric('streamstats_commits_total', { result: 'ok' }) > 0, 'offsets committed');
  t.equal(e.metric('streamstats_assigned_partitions'), 4);
  t.equal(e.deadLetters().length, 0);
  const summary = await e.stop();
  t.equal(summary.records, w.count);
  t.notOk(e.pipeline.ready, 'not ready after stop');
});

t.test('two instances in one group split the partitions and together emit the complete result', async (t) => {
  const w = { count: 16_000, metrics: 40, hosts: 4, seed: 2 };
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(w)));
  const group = uid('g');
  const a = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, BATCH_SIZE: '200' });
  const b = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, BATCH_SIZE: '200' });
  await waitFor([a, b], () => a.metric('streamstats_assigned_partitions') === 2 && b.metric('streamstats_assigned_partitions') === 2, 'both instances hold 2 partitions');
  // Caught up: together the two hold every partition, lag 0 and every window closed.
  await waitFor([a, b], () => a.sum('streamstats_consumer_lag_messages') + b.sum('streamstats_consumer_lag_messages') === 0 &&
    a.metric('streamstats_assigned_partitions') + b.metric('streamstats_assigned_partitions') === 4 &&
    a.metric('streamstats_open_series') === 0 && b.metric('streamstats_open_series') === 0 &&
    union(t, [...a.rows(), ...b.rows()]).size >= expected(w).size, 'the group has caught up', 90_000);
  const rowsA = a.rows();
  const rowsB = b.rows();
  t.ok(rowsA.length > 0 && rowsB.length > 0, `both emitted rows (${rowsA.length} + ${rowsB.length})`);
  compare(t, union(t, [...rowsA, ...rowsB]), expected(w));
  await Promise.all([a.stop(), b.stop()]);
});

t.test('SIGTERM mid-stream, then restart: no loss, no window emitted twice with different values', async (t) => {
  const w = { count: 60_000, metrics: 100, hosts: 4, seed: 3 };
  const topic = await createTopic(t, 4);
  await produce(topic, keyed(workloadPoints(w)));
  const group = uid('g');
  const dir = t.testdir();
  const env = { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: group, BATCH_SIZE: '100', KAFKA_MAX_BYTES_PER_PARTITION: '65536' };
  const first = startEngine(t, env, { workerFile: SLOW_WORKER, dir });
  await waitFor([first], () => first.metric('streamstats_records_total', { result: 'ok' }) >= 10_000, 'part of the topic consumed');
  const s1 = await first.stop();
  t.ok(s1.records < w.count, `stopped mid-stream (${s1.records} of ${w.count})`);
  t.ok(first.metric('streamstats_commits_total', { result: 'ok' }) > 0, 'committed before leaving');
  const rowsFirst = first.rows();
  t.ok(rowsFirst.length > 0, 'some windows were emitted before the stop');
  // The same sink file again: the union of both runs is what a user of the output sees.
  const second = startEngine(t, env, { dir });
  await waitFor([second], caughtUp([second], 1), 'the rest consumed, all windows closed', 90_000);
  const all = second.rows();
  compare(t, union(t, all), expected(w));
  await second.refresh();
  t.ok(second.metric('streamstats_replayed_records_total') > 0, 'records of windows emitted before the stop are replayed and skipped');
  await second.stop();
});

t.test('lag is non-zero while behind and reaches 0; a slow pool pauses partitions without a rebalance', async (t) => {
  const topic = await createTopic(t, 4);
  const e = startEngine(t, {
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    // 480 batches of at least 40 ms each: behind for 19 s or more, past the 10 s the catch-up
    // estimate waits for before it says anything but keeping up.
    BATCH_SIZE: '25',
    POOL_QUEUE: '1',
    KAFKA_MAX_BYTES_PER_PARTITION: '16384',
    KAFKA_INTAKE_MAX_BYTES: '20000',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
  }, { workerFile: SLOW_WORKER });
  await waitFor([e], () => e.metric('streamstats_assigned_partitions') === 4, 'joined');
  const w = { count: 12_000, metrics: 30, hosts: 4, seed: 4 };
  await produce(topic, keyed(workloadPoints(w)));
  let maxLag = 0;
  let maxLagSeconds = 0;
  let maxPaused = 0;
  const seen = new Set<string>();
  const began = Date.now();
  await waitFor([e], () => {
    maxLag = Math.max(maxLag, e.sum('streamstats_consumer_lag_messages'));
    maxLagSeconds = Math.max(maxLagSeconds, e.sum('streamstats_consumer_lag_seconds'));
    maxPaused = Math.max(maxPaused, e.metric('streamstats_paused_partitions'));
    for (const state of ['catching_up', 'falling_behind']) if (e.sum('streamstats_lag_state', { state }) > 0) seen.add(state);
    return caughtUp([e], w.count)();
  }, 'caught up', 120_000);
  t.ok(maxLag > 1000, `lag in messages was non-zero while behind (max ${maxLag})`);
  t.ok(maxLagSeconds > 0, `lag in seconds was non-zero while behind (max ${maxLagSeconds.toFixed(2)} s)`);
  t.ok(maxPaused > 0, `partitions were paused while the pool was full (max ${maxPaused})`);
  t.equal(e.sum('streamstats_consumer_lag_messages'), 0, 'lag reaches 0');
  t.equal(e.sum('streamstats_consumer_lag_seconds'), 0, 'lag seconds reach 0');
  t.equal(e.metric('streamstats_rebalances_total'), 1, 'no rebalance beyond the first join (heartbeats kept flowing)');
  t.equal(e.metric('streamstats_paused_partitions'), 0, 'every paused partition was resumed');
  t.comment(`behind for ${((Date.now() - began) / 1000).toFixed(0)} s; lag states seen while behind: ${[...seen].join(', ') || 'none'}`);
  t.ok(seen.size > 0, 'while behind, a lane was reported catching up or falling behind');
  t.equal(e.sum('streamstats_lag_state', { state: 'keeping_up' }), 4, 'every partition keeps up at the end');
  compare(t, union(t, e.rows()), expected(w));
});

function kafkaLibs(): string {
  const dir = process.env['KAFKA_CACHE_DIR'] ?? `${ROOT}/.cache/kafka/libs`;
  if (!existsSync(dir) || !readdirSync(dir).some((f) => f.startsWith('kafka-clients'))) {
    throw new Error(`the Kafka jars are not in ${dir}: run scripts/kafka.sh start once (it fetches them), or set KAFKA_CACHE_DIR`);
  }
  return dir;
}

t.test('compressed topics: gzip, snappy, lz4 (kafkajs producer) and zstd (the Java producer) are consumed', async (t) => {
  const w = { count: 3000, metrics: 20, hosts: 3, seed: 5 };
  const points = workloadPoints(w);
  const exp = expected(w);
  for (const codec of ['gzip', 'snappy', 'lz4', 'zstd'] as const) {
    const topic = await createTopic(t, 2);
    if (codec === 'zstd') {
      // librdkafka and the Java client compress with zstd; kafkajs cannot, so the Kafka distribution's
      // own console producer writes this topic.
      // Keyed by series like the rest: per-partition windows then match the global computation.
      const input = points.map((p) => `${p.name}|agent_${p.host}\t${p.json}`).join('\n') + '\n';
      const r = spawnSync('java', ['-cp', `${kafkaLibs()}/*`, 'kafka.tools.ConsoleProducer', '--bootstrap-server', brokers()[0]!, '--topic', topic,
        '--compression-codec', 'zstd', '--property', 'parse.key=true', '--property', 'key.separator=\t', '--producer-property', 'linger.ms=50', '--producer-property', 'batch.size=262144'], { input, encoding: 'utf8' });
      t.equal(r.status, 0, `java console producer: ${r.stderr.slice(-500)}`);
    } else {
      await produce(topic, keyed(points), codec);
    }
    const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g') });
    await waitFor([e], caughtUp([e], w.count), `${codec}: consumed`);
    t.equal(e.metric('streamstats_records_total', { result: 'ok' }), w.count, `${codec}: every record decoded`);
    compare(t, union(t, e.rows()), exp);
    await e.stop();
  }
});


t.test('brokers unreachable at start: not ready, reconnects with back-off, no crash, stops cleanly', async (t) => {
  const e = startEngine(t, { KAFKA_TOPICS: 'nowhere', KAFKA_BROKERS: '127.0.0.1:1', KAFKA_GROUP_ID: uid('g'), KAFKA_RETRY_MAX_SECONDS: '1' });
  await waitFor([e], () => e.metric('streamstats_kafka_reconnects_total') >= 2, 'two reconnection attempts', 60_000);
  t.notOk(e.pipeline.ready, '/readyz is false while the brokers are unreachable');
  t.equal(e.metric('streamstats_kafka_connected'), 0);
  const started = Date.now();
  const summary = await e.stop();
  t.ok(Date.now() - started < 15_000, 'stop() returns promptly while reconnecting');
  t.equal(summary.records, 0);
});
