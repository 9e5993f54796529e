// What an operator sees of a Redis lane that cannot go on: /readyz is 503 while Redis is away (like
// the Kafka source while its brokers are), the stalled-lanes gauge says how many, and both recover
// when Redis is back. And the lag after an XTRIM of undelivered entries: zero, not the entries trimmed.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { waitFor } from '../fixtures/kafka.js';
import { freshStream, redisProxy, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

const SLOW_WORKER = fileURLToPath(new URL('../fixtures/slow-worker.js', import.meta.url));

t.test('Redis away: /readyz not ready and the lane counted stalled; back: ready again', async (t) => {
  const { stream, group } = await freshStream(t);
  const proxy = await redisProxy(t);
  const e = startRedisEngine(t, { REDIS_URL: proxy.url, REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'r' });
  await waitFor([e], () => e.pipeline.ready, 'ready');
  proxy.down();
  await waitFor([e], () => !e.pipeline.ready && e.metric('streamstats_redis_lanes_stalled') >= 1, '/readyz not ready, the lane stalled, while Redis is away', 30_000);
  proxy.up();
  await waitFor([e], () => e.pipeline.ready && e.metric('streamstats_redis_lanes_stalled') === 0, 'ready again once Redis is back', 30_000);
  t.pass('readiness followed Redis');
});

t.test('undelivered entries trimmed away: the lag falls to zero', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 6000, seed: 43 });
  await xadd(redis, stream, sts.map((s) => s.json));
  // A slow pool (40 ms a batch of 100): most entries wait in the stream, undelivered.
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'x', BATCH_SIZE: '100', REDIS_READ_COUNT: '100', POOL_QUEUE: '2' }, {}, SLOW_WORKER);
  await waitFor([e], () => e.metric('streamstats_consumer_lag_messages', { stream }) > 1000, 'entries wait undelivered');
  await redis.sendCommand(['XTRIM', stream, 'MAXLEN', '0']);
  await waitFor([e], () => e.metric('streamstats_consumer_lag_messages', { stream }) === 0, 'lag 0 once nothing is left to deliver', 30_000);
  t.pass('the lag counts what is left to deliver');
});
