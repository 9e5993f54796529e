// Against the real Redis (127.0.0.1:6379): SOURCE=redis end to end, through a consumer group.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { close } from '../fixtures/reference.js';
import { rowKey } from '../fixtures/harness.js';
import { waitFor } from '../fixtures/kafka.js';
import { drained, expectedRows, freshStream, mergeRows, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

t.test('one stream, one instance: the emitted statistics equal an independent computation', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 6000 });
  await xadd(redis, stream, sts.map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'a', BATCH_SIZE: '500' });
  await waitFor([e], drained([e], sts.length), 'all entries applied, all windows closed');
  const rows = e.rows();
  const exp = expectedRows(sts);
  t.equal(rows.length, exp.size, `each of the ${exp.size} windows emitted once`);
  let bad = 0;
  for (const r of rows) {
    const x = exp.get(rowKey(r));
    const ok = x !== undefined && r.count === x.count && r.min === x.min && r.max === x.max && close(r.sum, x.sum) && close(r.stddev, x.stddev, 1e-7);
    if (!ok && bad++ < 3) t.fail(`row ${rowKey(r)}`, { actual: r, expected: x });
  }
  t.equal(bad, 0, 'every window equals the independent computation');
  t.same([...new Set(rows.map((r) => r.topic))], [stream], 'rows carry the stream key as topic');
  t.equal(e.deadLetters().length, 0, 'nothing dead-lettered');
  // Everything emitted is acknowledged: the group has nothing pending once the commit ran.
  await waitFor([e], () => e.metric('streamstats_redis_pending_entries', { stream }) === 0, 'pending entries acknowledged', 20_000);
  const pending = (await redis.sendCommand(['XPENDING', stream, group])) as unknown[];
  t.equal(Number(pending[0]), 0, 'XPENDING: no entry left unacknowledged');
  t.equal(e.metric('streamstats_consumer_lag_seconds', { stream }), 0, 'lag 0 s when caught up');
  await waitFor([e], () => e.metric('streamstats_lag_state', { stream, state: 'keeping_up' }) === 1, 'keeping up once caught up', 20_000);
  t.equal(e.metric('streamstats_lag_state', { stream, state: 'falling_behind' }), 0, 'and not falling behind');
  t.equal(e.metric('streamstats_catch_up_seconds', { stream }), 0, 'nothing to catch up');
  const summary = await e.stop();
  t.equal(summary.records, sts.length, 'every entry read once');
});

t.test('two instances in one group share the stream and together emit the complete result', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 8000, seed: 4 });
  const root = t.testdir();
  const dir = (name: string) => {
    const d = join(root, name);
    mkdirSync(d, { recursive: true });
    return { dir: d };
  };
  // Loaded right after both are in: a lane idle for IDLE_FLUSH_SECONDS would let its watermark follow
  // the wall clock, and these statements are from 2024.
  const common = { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, BATCH_SIZE: '200', REDIS_READ_COUNT: '100', IDLE_FLUSH_SECONDS: '5' };
  const a = startRedisEngine(t, { ...common, REDIS_CONSUMER: 'a' }, dir('a'));
  const b = startRedisEngine(t, { ...common, REDIS_CONSUMER: 'b' }, dir('b'));
  await waitFor([a, b], () => a.pipeline.ready && b.pipeline.ready, 'both in the group');
  await xadd(redis, stream, sts.map((s) => s.json));
  await waitFor([a, b], drained([a, b], sts.length), 'all entries applied by the two');
  const okA = a.metric('streamstats_records_total', { result: 'ok' });
  const okB = b.metric('streamstats_records_total', { result: 'ok' });
  t.equal(okA + okB, sts.length, 'each entry processed by exactly one instance');
  t.ok(okA > 0 && okB > 0, `both took a share (a ${okA}, b ${okB})`);
  const merged = mergeRows([...a.rows(), ...b.rows()]);
  const exp = expectedRows(sts);
  t.equal(merged.size, exp.size, 'every window emitted');
  let bad = 0;
  for (const [k, x] of exp) {
    const m = merged.get(k);
    if (!(m !== undefined && m.count === x.count && m.min === x.min && m.max === x.max && close(m.sum, x.sum)) && bad++ < 3) t.fail(`window ${k}`, { merged: m, expected: x });
  }
  t.equal(bad, 0, 'the two instances\' partial rows add up to the independent computation');
  t.not(a.rows()[0]?.partition, b.rows()[0]?.partition, 'each instance\'s rows carry its own slot as partition');
});

t.test('REDIS_FROM=latest: a new group skips what the stream held and consumes what comes after', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const old = statements({ count: 500, seed: 6 });
  await xadd(redis, stream, old.map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'l', REDIS_FROM: 'latest', IDLE_FLUSH_SECONDS: '5' });
  await waitFor([e], () => e.pipeline.ready, 'in the group');
  const fresh = statements({ count: 300, seed: 7 });
  await xadd(redis, stream, fresh.map((s) => s.json));
  await waitFor([e], drained([e], fresh.length), 'the new entries applied');
  await new Promise((r) => setTimeout(r, 500));
  await e.refresh();
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), fresh.length, 'only the entries added after the group was created');
});

t.test('two streams: each is a lane of its own, and each stream\'s rows equal its own computation', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const second = `${stream}-b`;
  t.teardown(() => redis.del(second).then(() => {}, () => {}));
  const s1 = statements({ count: 2000, seed: 11 });
  const s2 = statements({ count: 1500, seed: 12, startMs: Date.parse('2024-03-05T10:00:00Z') });
  await xadd(redis, stream, s1.map((s) => s.json));
  await xadd(redis, second, s2.map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_STREAMS: `${stream},${second}`, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'm' });
  await waitFor([e], drained([e], s1.length + s2.length), 'both streams applied');
  for (const [key, sts] of [[stream, s1], [second, s2]] as const) {
    const rows = e.rows().filter((r) => r.topic === key);
    const exp = expectedRows(sts);
    const bad = rows.filter((r) => {
      const x = exp.get(rowKey(r));
      return !(x !== undefined && r.count === x.count && close(r.sum, x.sum) && r.min === x.min && r.max === x.max);
    });
    t.equal(rows.length, exp.size, `${key}: every window once`);
    t.equal(bad.length, 0, `${key}: rows equal the computation over that stream alone`);
  }
  t.equal(e.metric('streamstats_assigned_partitions'), 2, 'two lanes');
});
