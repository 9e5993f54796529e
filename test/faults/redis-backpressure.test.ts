// Backpressure by not reading: with a slow pool, the Redis source reads only what the engine takes,
// so the entries wait in the stream (undelivered), not in memory; then everything is processed.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { waitFor } from '../fixtures/kafka.js';
import { drained, freshStream, startRedisEngine, statements, xadd } from '../fixtures/redis.js';

const SLOW_WORKER = fileURLToPath(new URL('../fixtures/slow-worker.js', import.meta.url));

t.test('a slow pool holds the source back: delivered but unapplied entries stay bounded', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 12_000, seed: 5 });
  await xadd(redis, stream, sts.map((s) => s.json));
  // One worker, 40 ms a batch of 100 (test/fixtures/slow-worker.ts), two batches in flight.
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'bp', BATCH_SIZE: '100', REDIS_READ_COUNT: '100', POOL_QUEUE: '2' }, {}, SLOW_WORKER);
  const bound = 2 * 2 * 100 + 100; // the engine's unapplied batches (2 x POOL_QUEUE) + one read
  let samples = 0;
  let worst = 0;
  const end = Date.now() + 3000;
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 150));
    const info = (await redis.sendCommand(['XINFO', 'GROUPS', stream])) as unknown[][];
    const g = info.map((x) => new Map(Array.from({ length: x.length / 2 }, (_, i) => [String(x[2 * i]), x[2 * i + 1]]))).find((m) => m.get('name') === group);
    if (g === undefined) continue;
    await e.refresh();
    const delivered = sts.length - Number(g.get('lag'));
    const applied = e.metric('streamstats_records_total', { result: 'ok' });
    worst = Math.max(worst, delivered - applied);
    samples++;
  }
  t.ok(samples >= 5, `sampled ${samples} times`);
  t.ok(worst <= bound, `delivered - applied stayed at most ${bound} (worst ${worst})`);
  t.ok(e.metric('streamstats_records_total', { result: 'ok' }) < sts.length, 'the slow pool had not finished yet: the rest waited in Redis');
  t.ok(e.metric('streamstats_consumer_lag_messages', { stream }) > 0, 'lag in entries: the undelivered ones');
  t.ok(e.metric('streamstats_consumer_lag_seconds', { stream }) >= 1, `lag in seconds: the first undelivered entry was added seconds ago (${e.metric('streamstats_consumer_lag_seconds', { stream })} s)`);
  t.ok(e.metric('streamstats_redis_pending_entries', { stream }) > 0, 'pending: delivered, not yet acknowledged');
  await waitFor([e], drained([e], sts.length), 'then everything is processed', 120_000);
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), sts.length, 'every entry once');
});

t.test('a caught-up lane reads what arrived while its batch was in the pool as one batch, not a batch per read', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 300, seed: 6 });
  // One worker, 40 ms a batch, and room in the pool for 64 batches (so the pool being full is not what
  // holds the reads back): entries added one at a time, 1-2 ms apart, arrive many per batch's time.
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'pace', BATCH_SIZE: '1000', REDIS_READ_COUNT: '1000', WORKER_THREADS: '1', POOL_QUEUE: '64' }, {}, SLOW_WORKER);
  await waitFor([e], () => e.pipeline.ready, 'the engine reads');
  const started = Date.now();
  for (const s of sts) {
    await redis.sendCommand(['XADD', stream, '*', 'data', s.json]);
    await new Promise((r) => setTimeout(r, 1));
  }
  const addMs = Date.now() - started;
  await waitFor([e], drained([e], sts.length), 'every entry applied', 60_000);
  const summary = await e.stop();
  t.equal(summary.records, sts.length, 'every entry once');
  // A read per arrival would make a batch of one or two entries each (hundreds); waiting for the batch
  // in the pool makes about one batch per 40 ms of arrivals.
  const paced = Math.ceil(addMs / 40) * 2 + 5;
  t.ok(summary.batches <= paced, `${summary.batches} batches for ${sts.length} entries added over ${addMs} ms (at most ${paced})`);
});
