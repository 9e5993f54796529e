// kill -9 of the engine (the real CLI, a child process) consuming a Redis stream into PostgreSQL:
// restarted under the same consumer name, it replays its pending entries and the store ends equal
// to the independent computation (nothing lost, nothing doubled). And a consumer killed for good:
// another instance of the group takes its pending entries over after REDIS_CLAIM_IDLE_MS.
import t, { type Test } from 'tap';
import { until } from '../fixtures/engine-process.js';
import { Rng } from '../fixtures/gen.js';
import { idOf, pgRows, spawnEngine, type PgRow } from '../fixtures/faults.js';
import { testSchema } from '../fixtures/pg.js';
import { close, type RefRow } from '../fixtures/reference.js';
import { REDIS_URL, expectedRows, freshStream, statements, xadd, type Client } from '../fixtures/redis.js';
import { XAPI_JSON_MAPPING } from '../../src/sources/redis/xapi.js';
import type { EngineProcess } from '../fixtures/engine-process.js';

const KILLS = Number(process.env['CRASH_KILLS'] ?? '4');

function env(stream: string, group: string, consumer: string, sink: string): Record<string, string> {
  return {
    SOURCE: 'redis',
    REDIS_URL,
    REDIS_STREAMS: stream,
    REDIS_GROUP_ID: group,
    REDIS_CONSUMER: consumer,
    REDIS_READ_COUNT: '200',
    REDIS_BLOCK_MS: '200',
    REDIS_CLAIM_IDLE_MS: '2000',
    BATCH_SIZE: '100',
    IDLE_FLUSH_SECONDS: '1',
    COMMIT_INTERVAL_SECONDS: '0.3',
    LAG_INTERVAL_SECONDS: '0.3',
    WORKER_THREADS: '1',
    DEAD_LETTER: 'stderr',
    SINK: sink,
    ...XAPI_JSON_MAPPING,
  };
}

/** Nothing undelivered, nothing pending, no window open. */
async function drained(e: EngineProcess, stream: string): Promise<boolean> {
  const m = await e.metrics();
  if (m === null) return false;
  return m.get(`streamstats_consumer_lag_messages{stream="${stream}"}`) === 0 &&
    m.get(`streamstats_redis_pending_entries{stream="${stream}"}`) === 0 &&
    m.get('streamstats_open_series') === 0;
}

/** Rows of every lane merged per window (count, sum, min, max) equal the reference: nothing lost or doubled. */
function assertMergedEquals(t: Test, rows: readonly PgRow[], exp: ReadonlyMap<string, RefRow>): void {
  const merged = new Map<string, { count: number; sum: number; min: number; max: number }>();
  for (const r of rows) {
    const k = idOf(r.name, r.groupby, r.period_start.toISOString());
    const m = merged.get(k);
    const c = Number(r.count);
    merged.set(k, m === undefined ? { count: c, sum: r.sum, min: r.min, max: r.max } : { count: m.count + c, sum: m.sum + r.sum, min: Math.min(m.min, r.min), max: Math.max(m.max, r.max) });
  }
  t.equal(merged.size, exp.size, `every expected window stored (${exp.size})`);
  let bad = 0;
  for (const [k, x] of exp) {
    const m = merged.get(k);
    if (!(m !== undefined && m.count === x.count && m.min === x.min && m.max === x.max && close(m.sum, x.sum)) && bad++ < 3) t.fail(`window ${k}`, { stored: m, expected: x });
  }
  t.equal(bad, 0, 'stored counts, sums, min and max equal the independent computation (a lost or doubled entry changes a count)');
}

const deadLetters = (stderrs: ReadonlyArray<() => string>) => stderrs.flatMap((f) => f().split('\n').filter((l) => l.includes('"value_encoding"')));

type Load = (redis: Client, stream: string, values: readonly string[]) => Promise<void>;

/** kill -9 KILLS times at random moments, restart under the same consumer, then compare the store. */
async function killAndRestart(t: Test, kills: number, seed: number, load: Load): Promise<void> {
  const { stream, group, redis } = await freshStream(t);
  const sts = statements({ count: 40_000, seed, stepMs: 50 });
  await load(redis, stream, sts.map((s) => s.json));
  const db = await testSchema(t);
  const common = env(stream, group, 'c1', db.url);
  const rng = new Rng(seed * 10);
  const stderrs: Array<() => string> = [];
  const storedAfter: number[] = [];
  for (let k = 0; k < kills; k++) {
    const e = await spawnEngine(t, common);
    stderrs.push(e.stderr);
    await until(() => e.ready(), 'engine holds its lease and reads', 60_000);
    await new Promise((r) => setTimeout(r, rng.int(300, 1500)));
    e.child.kill('SIGKILL');
    await e.exited;
    storedAfter.push(Number((await db.pool.query<{ n: string | null }>('SELECT sum(count) AS n FROM streamstats_statistics')).rows[0]!.n ?? 0));
  }
  const last = await spawnEngine(t, common);
  stderrs.push(last.stderr);
  await until(() => drained(last, stream), 'the last run drained the stream', 180_000);
  last.child.kill('SIGTERM');
  t.equal(await last.exited, 0, 'the last run exits 0 on SIGTERM');
  t.comment(`records stored after each kill: ${storedAfter.join(' ')}`);
  t.ok(storedAfter.every((n) => n < sts.length), 'every kill landed before the stream was fully stored');
  t.equal(deadLetters(stderrs).length, 0, 'no entry dead-lettered in any run (replays are skipped, not late)');
  assertMergedEquals(t, await pgRows(db.pool), expectedRows(sts));
  t.same([...new Set((await pgRows(db.pool)).map((r) => r.partition))].length, 1, 'one lane (one consumer slot) wrote every row');
  t.equal(Number(((await redis.sendCommand(['XPENDING', stream, group])) as unknown[])[0]), 0, 'every entry acknowledged');
}

t.test(`PostgreSQL sink: ${KILLS} x kill -9 and restart under the same consumer, then the store equals the independent computation`, (t) => killAndRestart(t, KILLS, 31, xadd));

t.test('ids past 4096 a millisecond (XADD <ms>-*): kill -9 and restart place every entry where it was, the store equals the computation', (t) =>
  killAndRestart(t, 3, 33, async (redis, stream, values) => {
    // Bursts of 7,000 entries a millisecond, one after another: a segment starts at each new millisecond.
    for (let i = 0; i < values.length; i += 500) {
      await Promise.all(values.slice(i, i + 500).map((v, j) => redis.sendCommand(['XADD', stream, `${1_000 + Math.floor((i + j) / 7000)}-*`, 'data', v])));
    }
  }));

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
