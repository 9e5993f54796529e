// The stream or its consumer group gone mid-run (XGROUP DESTROY, DEL of the stream): the lane
// recreates the group from its commit point and goes on, nothing lost and nothing processed twice
// of what is still in the stream; a deleted stream's new entries are consumed like the old ones.
import t, { type Test } from 'tap';
import { rowKey } from '../fixtures/harness.js';
import { close } from '../fixtures/reference.js';
import { waitFor, type Engine } from '../fixtures/kafka.js';
import { drained, expectedRows, freshStream, startRedisEngine, statements, xadd } from '../fixtures/redis.js';
import type { XapiStatement } from '../../src/sources/redis/xapi.js';

function assertRows(t: Test, e: Engine, sts: readonly XapiStatement[]): void {
  const rows = e.rows();
  const exp = expectedRows(sts);
  const bad = rows.filter((r) => {
    const x = exp.get(rowKey(r));
    return !(x !== undefined && r.count === x.count && close(r.sum, x.sum) && r.min === x.min && r.max === x.max);
  });
  t.equal(rows.length, exp.size, `every window once (${exp.size})`);
  t.equal(bad.length, 0, 'rows equal the independent computation');
}

t.test('the group destroyed mid-run: recreated from the commit point, every entry processed once', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 6000, seed: 41 });
  await xadd(redis, stream, sts.slice(0, 3000).map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'g', BATCH_SIZE: '100', REDIS_READ_COUNT: '200', IDLE_FLUSH_SECONDS: '15' });
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) >= 1000, 'part of the stream applied');
  await redis.sendCommand(['XGROUP', 'DESTROY', stream, group]);
  await xadd(redis, stream, sts.slice(3000).map((s) => s.json));
  await waitFor([e], drained([e], sts.length), 'every entry applied after the group was recreated', 90_000);
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), sts.length, 'each entry applied once: none lost, none twice');
  assertRows(t, e, sts);
  t.equal(e.deadLetters().length, 0, 'nothing dead-lettered');
  t.ok(e.pipeline.ready, '/readyz ready again');
  await waitFor([e], () => e.metric('streamstats_redis_pending_entries', { stream }) === 0, 'everything acknowledged in the new group', 20_000);
  t.equal(e.metric('streamstats_redis_lanes_stalled'), 0, 'no lane stalled');
});

t.test('the stream deleted mid-run: the group comes back with the stream, its new entries are processed', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 4000, seed: 42 });
  await xadd(redis, stream, sts.slice(0, 2000).map((s) => s.json));
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'd', BATCH_SIZE: '100', REDIS_READ_COUNT: '200', IDLE_FLUSH_SECONDS: '15' });
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) >= 2000, 'the first entries applied');
  await redis.del(stream);
  await new Promise((r) => setTimeout(r, 500));
  await xadd(redis, stream, sts.slice(2000).map((s) => s.json));
  await waitFor([e], drained([e], sts.length), 'the entries of the new stream applied', 90_000);
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), sts.length, 'each entry of either stream applied once');
  assertRows(t, e, sts);
  t.ok(e.pipeline.ready, '/readyz ready again');
  const groups = (await redis.sendCommand(['XINFO', 'GROUPS', stream])) as unknown[][];
  t.ok(groups.some((g) => String(g[1]) === group), 'the group exists again on the new stream');
});
