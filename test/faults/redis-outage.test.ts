// Redis going away: at start (not ready, SIGTERM still exits at once) and in the middle of a stream
// (reads and acknowledgements retried, a reply lost with the connection read again from the PEL):
// nothing lost, nothing doubled.
import t from 'tap';
import { rowKey } from '../fixtures/harness.js';
import { close } from '../fixtures/reference.js';
import { waitFor } from '../fixtures/kafka.js';
import { until } from '../fixtures/engine-process.js';
import { spawnEngine } from '../fixtures/faults.js';
import { drained, expectedRows, freshStream, redisProxy, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

t.test('unreachable at start: not ready, and SIGTERM exits 0 at once', async (t) => {
  const proxy = await redisProxy(t);
  proxy.down();
  const e = await spawnEngine(t, { SOURCE: 'redis', REDIS_URL: proxy.url, REDIS_STREAMS: 'never-read', SHUTDOWN_TIMEOUT_SECONDS: '20', WORKER_THREADS: '1', SINK: 'stdout' });
  await until(async () => (await e.metrics()) !== null, 'HTTP up', 30_000);
  t.notOk(await e.ready(), '/readyz is not 200 while Redis does not answer');
  const t0 = Date.now();
  e.child.kill('SIGTERM');
  t.equal(await e.exited, 0, 'exits 0');
  t.ok(Date.now() - t0 < 10_000, `within ${Date.now() - t0} ms, not after SHUTDOWN_TIMEOUT_SECONDS`);
});

t.test('cut twice mid-stream: every entry processed once, the statistics equal the computation', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const proxy = await redisProxy(t);
  const sts = statements({ count: 20_000, seed: 13 });
  await xadd(redis, stream, sts.map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_URL: proxy.url, REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'o', BATCH_SIZE: '100', REDIS_READ_COUNT: '200', IDLE_FLUSH_SECONDS: '10' });
  for (let cut = 0; cut < 2; cut++) {
    const before = e.metric('streamstats_records_total', { result: 'ok' });
    await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) > before + 2000, 'progress before the cut');
    proxy.down();
    await new Promise((r) => setTimeout(r, 1500));
    proxy.up();
  }
  await waitFor([e], drained([e], sts.length), 'all applied after the outages', 120_000);
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), sts.length, 'each entry applied once');
  t.ok(e.metric('streamstats_records_total', { result: 'ok' }) + e.metric('streamstats_replayed_records_total') >= sts.length, 'nothing lost');
  const rows = e.rows();
  const exp = expectedRows(sts);
  const bad = rows.filter((r) => {
    const x = exp.get(rowKey(r));
    return !(x !== undefined && r.count === x.count && close(r.sum, x.sum) && r.min === x.min && r.max === x.max);
  });
  t.equal(rows.length, exp.size, 'every window once');
  t.equal(bad.length, 0, 'rows equal the computation');
  t.equal(e.deadLetters().length, 0, 'nothing dead-lettered');
  await waitFor([e], () => e.metric('streamstats_redis_pending_entries', { stream }) === 0, 'everything acknowledged', 30_000);
});
