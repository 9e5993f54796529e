// kill -9 of the engine (the real CLI, a child process) consuming a Redis stream into PostgreSQL:
// restarted under the same consumer name, it replays its pending entries and the store ends equal
// to the independent computation (nothing lost, nothing doubled). And a consumer killed for good:
// another instance of the group takes its pending entries over after REDIS_CLAIM_IDLE_MS.
import t from 'tap';
import { until } from '../fixtures/engine-process.js';
import { pgRows, spawnEngine } from '../fixtures/faults.js';
import { testSchema } from '../fixtures/pg.js';
import { expectedRows, freshStream, statements, xadd } from '../fixtures/redis.js';
import { assertMergedEquals, deadLetters, drained, env, killAndRestart } from '../fixtures/redis-crash.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '4');

t.test(`PostgreSQL sink: ${KILLS} x kill -9 and restart under the same consumer, then the store equals the independent computation`, (t) => killAndRestart(t, KILLS, 31, xadd));

t.test('a consumer killed for good: another instance takes its pending entries over and nothing is lost or doubled', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 20_000, seed: 32, stepMs: 50 });
  const db = await testSchema(t);
  // Loaded first: an instance idle for IDLE_FLUSH_SECONDS lets its watermark follow the wall clock,
  // and these statements are from 2024 (they would all be late after that).
  await xadd(redis, stream, sts.map((s) => s.json));
  const a = await spawnEngine(t, env(stream, group, 'a', db.url));
  const b = await spawnEngine(t, env(stream, group, 'b', db.url));
  await until(async () => (await a.ready()) && (await b.ready()), 'both instances in the group', 60_000);
  // a dies with entries delivered to it and not acknowledged (open windows at least).
  await until(async () => {
    const info = (await redis.sendCommand(['XPENDING', stream, group, '-', '+', '10', 'a'])) as unknown[];
    return info.length > 0;
  }, 'consumer a holds pending entries', 30_000);
  a.child.kill('SIGKILL');
  await a.exited;
  const pendingOfA = ((await redis.sendCommand(['XPENDING', stream, group])) as [number, string, string, Array<[string, string]> | null])[3]?.find(([c]) => c === 'a')?.[1];
  t.ok(Number(pendingOfA ?? 0) > 0, `a left ${pendingOfA} entries pending`);
  await until(() => drained(b, stream), 'b processed everything, a\'s pending entries included', 120_000);
  t.match(b.stderr(), /taking over a dead consumer's pending entries/, 'b took over consumer a');
  await until(async () => {
    const consumers = (await redis.sendCommand(['XINFO', 'CONSUMERS', stream, group])) as unknown[];
    return consumers.length === 1;
  }, 'the dead consumer is deleted once its entries are acknowledged', 30_000);
  b.child.kill('SIGTERM');
  t.equal(await b.exited, 0, 'b exits 0 on SIGTERM');
  t.equal(deadLetters([b.stderr]).length, 0, 'nothing dead-lettered');
  assertMergedEquals(t, await pgRows(db.pool), expectedRows(sts));
  t.equal(Number(((await redis.sendCommand(['XPENDING', stream, group])) as unknown[])[0]), 0, 'every entry acknowledged');
});
