// Reads bounded by all of their bytes, the first read included: entries whose large field is not
// REDIS_FIELD (nothing the source hands on, all of it read) no longer come in a thousand at a time.
// Peak RSS of the real CLI against the same run over small entries; and the bounded read itself.
import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { until } from '../fixtures/engine-process.js';
import { spawnEngine } from '../fixtures/faults.js';
import { createClient } from 'redis';
import { REDIS_URL, freshStream, privateRedis, statements } from '../fixtures/redis.js';
import { REDIS_DEFAULTS } from '../../src/sources/redis/config.js';
import { LaneConn } from '../../src/sources/redis/lane-conn.js';
import { XReadReader } from '../../src/sources/redis/wire.js';
import { XAPI_JSON_MAPPING } from '../../src/sources/redis/xapi.js';

const MiB = 1024 * 1024;

function peakRss(pid: number): number {
  const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]) * 1024;
}

/** Peak RSS of the CLI consuming `n` statements, each with an extra field of `pad` bytes, and its reads' sizes. */
async function run(t: Test, url: string, n: number, pad: number): Promise<{ peak: number; reads: number; single: number }> {
  const redis = createClient({ url });
  await redis.connect();
  t.teardown(() => redis.close().catch(() => {}));
  const stream = `s-${pad}`;
  const blob = Buffer.alloc(pad, 0x78);
  for (const s of statements({ count: n, seed: 51 })) await redis.sendCommand(['XADD', stream, '*', 'blob', blob, 'data', s.json]);
  const e = await spawnEngine(t, {
    SOURCE: 'redis', REDIS_URL: url, REDIS_STREAMS: stream, REDIS_GROUP_ID: 'g', REDIS_CONSUMER: 'b', REDIS_READ_MAX_BYTES: String(4 * MiB),
    WORKER_THREADS: '1', SINK: 'stdout', DEAD_LETTER: 'stderr', LOG_LEVEL: 'warn', IDLE_FLUSH_SECONDS: '30', ...XAPI_JSON_MAPPING,
  });
  let m: Map<string, number> | null = null;
  await until(async () => ((m = await e.metrics())?.get('streamstats_records_total{result="ok"}') ?? 0) >= n, 'every entry applied', 90_000);
  const peak = peakRss(e.child.pid!);
  e.child.kill('SIGTERM');
  await e.exited;
  await redis.del(stream);
  const got = m as Map<string, number> | null;
  return { peak, reads: got?.get('streamstats_fetch_batch_messages_count') ?? 0, single: got?.get('streamstats_fetch_batch_messages_bucket{le="1"}') ?? 0 };
}

t.test('100 entries with a 4 MiB field besides REDIS_FIELD: read one at a time, peak RSS far below the stream', async (t) => {
  // A server of our own: 400 MiB in the shared one would stay in its memory.
  const { url } = await privateRedis(t);
  const small = await run(t, url, 100, 16);
  const large = await run(t, url, 100, 4 * MiB);
  t.comment(`peak RSS: small entries ${(small.peak / MiB).toFixed(0)} MiB, 4 MiB entries ${(large.peak / MiB).toFixed(0)} MiB (400 MiB in the stream); reads ${large.reads}`);
  t.ok(large.reads >= 100 && large.single === large.reads, `every read brought one entry, the first included (${large.single} of ${large.reads} reads)`);
  t.ok(large.peak - small.peak < 200 * MiB, `peak RSS +${((large.peak - small.peak) / MiB).toFixed(0)} MiB over small entries, not the stream's 400 MiB at once`);
});

t.test('a lane\'s read stops keeping entries at the one whose bytes reach the limit, every field counted; the rest wait in the PEL', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  await redis.sendCommand(['XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM']);
  for (let i = 0; i < 10; i++) await redis.sendCommand(['XADD', stream, `1-${i + 1}`, 'data', 'x', 'other', 'y'.repeat(1000)]);
  const conn = new LaneConn({ ...REDIS_DEFAULTS, url: REDIS_URL, streams: [stream], consumer: 'c', tlsCa: undefined, tlsRejectUnauthorized: true }, 'bytes-test');
  t.teardown(() => conn.close());
  // Each entry weighs 3 + 4 + 1 + 5 + 1000 = 1013 bytes (1-10: 1014).
  const call = async (limit: number, cursor: string, key = stream, count = 100) => {
    const r = new XReadReader({ field: Buffer.from('data'), maxValueBytes: 1 << 20, limitBytes: limit });
    await conn.request(['XREADGROUP', 'GROUP', group, 'c', 'COUNT', String(count), 'STREAMS', key, cursor], r);
    return { ids: r.ids.slice(0, r.count), more: r.more, largest: r.largest };
  };
  const read = async (limit: number, cursor: string, count?: number) => (await call(limit, cursor, stream, count)).ids;
  t.same(await read(2500, '>', 3), ['1-1', '1-2', '1-3'], '2,500 bytes: the third entry crosses it and is the last');
  t.same(await read(1, '>', 1), ['1-4'], 'one entry at least');
  t.same(await read(2026, '0'), ['1-1', '1-2'], 'the pending entries are read the same way, from the cursor on');
  t.same(await read(1_000_000, '1-2'), ['1-3', '1-4'], 'to the end of the PEL');
  t.equal((await read(1_000_000, '>')).length, 6, 'COUNT and the rest of the stream');
  t.same(await read(1_000_000, '>'), [], 'nothing new: an empty read');
  // Small entries, then large ones: a COUNT sized by the small ones delivers large ones past the
  // limit; those are pending, not kept, and the reader says so and how large they were.
  const mixed = `${stream}-m`;
  t.teardown(() => redis.del(mixed).then(() => {}, () => {}));
  await redis.sendCommand(['XGROUP', 'CREATE', mixed, group, '0', 'MKSTREAM']);
  for (let i = 1; i <= 10; i++) await redis.sendCommand(['XADD', mixed, `2-${i}`, 'data', 's']);
  for (let i = 11; i <= 20; i++) await redis.sendCommand(['XADD', mixed, `2-${i}`, 'data', 'b'.repeat(3000)]);
  const first = await call(5000, '>', mixed);
  t.same(first.ids, [...Array.from({ length: 10 }, (_, i) => `2-${i + 1}`), '2-11', '2-12'], 'kept up to the entry that crossed 5,000 bytes');
  t.same([first.more, first.largest], [true, 4 + 4 + 3000], 'more are pending; the largest entry sizes the next COUNT');
  const rest = await call(5000, '2-12', mixed, Math.floor(5000 / first.largest));
  t.same(rest.ids, ['2-13'], 'the pending ones next, COUNT sized by the largest (one of 3,008 bytes in 5,000)');
  const pending = (await redis.sendCommand(['XPENDING', mixed, group])) as [number, ...unknown[]];
  t.equal(Number(pending[0]), 20, 'every entry was delivered once: the ones not kept wait in the PEL, none lost');
});
