// Against the real Redis: entry ids that ms * 4096 + seq cannot hold in order (a burst of `XADD key
// <ms>-*` past 4096 in one millisecond, explicit ids like 2-4096, the largest ids Redis allows) are
// consumed like any others, and a restart resumes after them instead of failing on them again.
import t from 'tap';
import { rowKey } from '../fixtures/harness.js';
import { close } from '../fixtures/reference.js';
import { waitFor, type Engine } from '../fixtures/kafka.js';
import { drained, expectedRows, freshStream, startRedisEngine, statements, type Client } from '../fixtures/redis.js';

/** XADD of each value under the given id (or `<ms>-*`), in order. */
async function xaddIds(redis: Client, stream: string, items: ReadonlyArray<readonly [string, string]>): Promise<void> {
  for (let i = 0; i < items.length; i += 500) {
    await Promise.all(items.slice(i, i + 500).map(([id, v]) => redis.sendCommand(['XADD', stream, id, 'data', v])));
  }
}

/** waitFor, failing at once if the engine stops (it would on an id it cannot place). */
async function until(e: Engine, pred: () => boolean, what: string): Promise<void> {
  let failed: unknown = null;
  void e.done.then(() => { failed ??= new Error('the engine stopped'); }, (err: unknown) => { failed ??= err; });
  await waitFor([e], () => {
    if (failed !== null) throw failed;
    return pred();
  }, what, 90_000);
}

t.test('ids past 4096 a millisecond and the largest ids are consumed once, and a restart goes on after them', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 6000, seed: 21 });
  const ids = [
    '1-0', '1-1', '2-4096', '2-4097', '2-99999',
    ...Array.from({ length: 5000 }, () => '3-*'),
    '4-0', '2199023255551-4094', '2199023255551-4095', '2199023255552-0',
    ...Array.from({ length: 500 }, () => '2199023255553-*'),
  ];
  const rest = sts.length - ids.length - 2;
  for (let i = 0; i < rest; i++) ids.push(`${2199023255554 + i}-0`);
  ids.push('18446744073709551614-18446744073709551615', '18446744073709551615-0');
  const items = sts.map((s, i) => [ids[i]!, s.json] as const);
  await xaddIds(redis, stream, items);
  const common = { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'ids', BATCH_SIZE: '300', REDIS_READ_COUNT: '700', IDLE_FLUSH_SECONDS: '3' };
  const dir1 = t.testdir();
  const e = startRedisEngine(t, common, { dir: dir1 });
  await until(e, drained([e], sts.length), 'every entry applied');
  const rows = e.rows();
  const exp = expectedRows(sts);
  t.equal(rows.length, exp.size, `each of the ${exp.size} windows emitted once`);
  const bad = rows.filter((r) => {
    const x = exp.get(rowKey(r));
    return !(x !== undefined && r.count === x.count && close(r.sum, x.sum) && r.min === x.min && r.max === x.max);
  });
  t.equal(bad.length, 0, 'rows equal the independent computation');
  t.equal(e.deadLetters().length, 0, 'nothing dead-lettered');
  await until(e, () => e.metric('streamstats_redis_pending_entries', { stream }) === 0, 'everything acknowledged');
  t.equal(Number(((await redis.sendCommand(['XPENDING', stream, group])) as unknown[])[0]), 0, 'XPENDING: nothing left');
  const first = await e.stop();
  t.equal(first.records, sts.length, 'every entry read once');

  // The same consumer again: it resumes after the largest id, and takes what comes after it.
  // Timed now: the first run's idle lane let its watermark follow the wall clock.
  const more = statements({ count: 300, seed: 22, startMs: Date.now(), stepMs: 5 });
  const e2 = startRedisEngine(t, common, { dir: t.testdir() });
  await until(e2, () => e2.pipeline.ready, 'the restarted instance reads');
  await xaddIds(redis, stream, more.map((s) => ['18446744073709551615-*', s.json] as const));
  // Applied, not their windows closed: those end up to a minute from now (the entries are timed now),
  // and what is checked here is what was read.
  await until(e2, () => e2.metric('streamstats_records_total', { result: 'ok' }) >= more.length && e2.sum('streamstats_consumer_lag_messages') === 0, 'the new entries applied');
  await new Promise((r) => setTimeout(r, 500));
  await e2.refresh();
  t.equal(e2.metric('streamstats_records_total', { result: 'ok' }), more.length, 'only the entries added after the restart: nothing read twice, nothing lost');
  const second = await e2.stop();
  t.equal(second.records, more.length, 'the restarted instance read only the new entries');
});
