// Batch buffers go back to their source once the engine is done with them (Batch.release) and are
// written again: a buffer must never be handed out twice at once, and nothing the engine produces
// (rows, dead letters) may still read a batch's bytes after its release.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import { BatchBuilder, messageBytes } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { Engine } from '../../src/engine/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { DecodePool } from '../../src/pool/index.js';
import { WRITTEN_ALL, type DeadLetter, type Sink } from '../../src/sinks/types.js';
import { sizeClass } from '../../src/core/shared-free-list.js';
import { BufferRecycler } from '../../src/sources/recycle.js';
import { GeneratorSource } from '../../src/sources/generator.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

function batchOf(recycler: BufferRecycler, messages: readonly string[]) {
  const b = new BatchBuilder(64, recycler.allocate);
  for (const m of messages) b.pushString(m);
  return recycler.track({ lane: 0, ...b.take() });
}

t.test('a released buffer is handed out again; one released twice only once', async (t) => {
  const r = new BufferRecycler(4);
  const a = batchOf(r, ['{"a":1}']);
  t.type(a.release, 'function', 'a batch in a buffer of ours can be released');
  a.release!();
  a.release!();
  const x = r.allocate(64);
  const y = r.allocate(64);
  t.equal(x.buffer, a.data.buffer, 'the released buffer comes back');
  t.not(y.buffer, a.data.buffer, 'a second release of the same batch did not free it again');
  t.equal(r.reused, 1);
});

t.test('only buffers of this recycler, of a fitting size, at most maxFree kept', async (t) => {
  const r = new BufferRecycler(2);
  const foreign = { lane: 0, data: Buffer.from(new SharedArrayBuffer(64)), offsets: Uint32Array.of(0, 64) };
  t.equal(r.track(foreign).release, undefined, 'a buffer it did not hand out gets no release');
  const plain = { lane: 0, data: Buffer.alloc(8), offsets: Uint32Array.of(0, 8) };
  t.equal(r.track(plain).release, undefined, 'nor does a non-shared buffer');
  const other = new BufferRecycler(2);
  const theirs = { lane: 0, data: other.allocate(100), offsets: Uint32Array.of(0, 1) };
  t.equal(r.track(theirs).release, undefined, "nor another recycler's buffer");
  const big = r.track({ lane: 0, data: r.allocate(1 << 20), offsets: Uint32Array.of(0, 1) });
  big.release!();
  t.not(r.allocate(1000).buffer, big.data.buffer, 'a buffer over twice the size asked for is not used for a small one');
  t.equal(r.allocate(600_000).buffer, big.data.buffer, 'but is for one of at least half its size');
  const many = [1, 2, 3].map(() => r.track({ lane: 0, data: r.allocate(4096), offsets: Uint32Array.of(0, 1) }));
  for (const m of many) m.release!();
  t.equal(r.free, 2, 'at most maxFree buffers are kept');
});

t.test('sizeClass: at least the size, at most an eighth more above 4 KiB, and a slowly growing size stays in one class', async (t) => {
  const bad: string[] = [];
  for (let n = 1; n < 1 << 24; n = Math.ceil(n * 1.07) + 1) {
    const c = sizeClass(n);
    if (c < n) bad.push(`${n} -> ${c} smaller`);
    if (n > 4096 && c > n * 1.125) bad.push(`${n} -> ${c} over 1/8 more`);
  }
  t.same(bad.slice(0, 5), []);
  t.equal(sizeClass(2_118_989), sizeClass(2_119_087), 'creeping batch sizes share a class');
});

t.test('the engine releases each batch once, after its rows and dead letters are made from its bytes', async (t) => {
  const W = 60_000;
  const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 0, maxInFlight: 2, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
  t.teardown(() => pool.close(1000));
  const rows: Array<{ name: string; sum: number }> = [];
  const letters: string[] = [];
  const sink: Sink = { describe: 'ok', write: async (b) => { rows.push(...b.rows.map((r) => ({ name: r.name, sum: r.sum }))); return WRITTEN_ALL; }, close: async () => {} };
  const deadLetter: DeadLetter = { describe: 'kept', write: async (es) => { letters.push(...es.map((e) => e.value)); }, close: async () => {} };
  const engine = new Engine({
    pool, sink, deadLetter, metrics: createMetrics(new Registry()), logger: pino({ level: 'silent' }), sourceName: 'test',
    windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1, maxSeries: 100,
    decoder: new Decoder(s), autoOpenLanes: true,
  });
  const r = new BufferRecycler();
  const released = new Map<number, number>();
  for (let k = 0; k < 20; k++) {
    const good = JSON.stringify(monascaRecord({ name: `m${k}`, timestamp: T0 + k * W + 1000, value: k, dimensions: { h: 'a' } }));
    const b = batchOf(r, [good, `{"broken ${k}`]);
    const release = b.release!;
    // The moment a batch is released its bytes are overwritten, as the next batch would.
    await engine.submit({ ...b, release: () => { released.set(k, (released.get(k) ?? 0) + 1); b.data.fill(0x7b); release(); } });
  }
  await engine.closeAll();
  t.same([...released.values()], Array.from({ length: 20 }, () => 1), 'every batch released exactly once');
  t.same(rows.map((x) => x.name).sort(), Array.from({ length: 20 }, (_, k) => `m${k}`).sort(), 'every record made its row');
  t.same(rows.map((x) => x.sum).sort((a, b) => a - b), Array.from({ length: 20 }, (_, k) => k), 'with its own value');
  t.same(letters.sort(), Array.from({ length: 20 }, (_, k) => `{"broken ${k}`).sort(), 'every broken message dead-lettered with its own bytes');
  t.ok(r.reused > 0, `buffers were reused (${r.reused})`);
});

t.test('the generator reuses the buffers the engine gives back, and its messages stay exact', async (t) => {
  const cfg = { count: 20_000, metrics: 50, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 3, rate: 0 };
  const first: string[] = [];
  for await (const b of new GeneratorSource(cfg, 1000, 1 << 20).batches()) {
    for (let i = 0; i < b.offsets.length - 1; i++) first.push(messageBytes(b, i).toString());
  }
  const again: string[] = [];
  let releases = 0;
  for await (const b of new GeneratorSource(cfg, 1000, 1 << 20).batches()) {
    for (let i = 0; i < b.offsets.length - 1; i++) again.push(messageBytes(b, i).toString());
    // Released at once (with garbage written first): the next batch is written into the same memory.
    b.data.fill(0x5d);
    if (b.release !== undefined) releases++;
    b.release?.();
  }
  t.equal(releases, 20, 'every batch can be released');
  t.same(again, first, 'the same messages with buffers reused');
});

t.test('batches sharing one buffer (a Redis read): it comes back once every one of them was released', async (t) => {
  const r = new BufferRecycler(4);
  const data = r.allocate(4096);
  const part = (lo: number, hi: number) => ({ lane: 0, data: data.subarray(lo, hi), offsets: Uint32Array.of(0, hi - lo) });
  const [a, b, c] = r.trackShared([part(0, 10), part(10, 20), part(20, 30)]);
  a!.release!();
  a!.release!();
  b!.release!();
  t.not(r.allocate(4096).buffer, data.buffer, 'not while one batch still holds it (a second release of another does not count)');
  c!.release!();
  t.equal(r.allocate(4096).buffer, data.buffer, 'after the last release it is handed out again');
  const mixed = r.trackShared([part(0, 1), { lane: 0, data: r.allocate(4096), offsets: Uint32Array.of(0, 1) }]);
  t.ok(mixed.every((m) => m.release === undefined), 'batches of different buffers get no release');
});

t.test('trackShared\'s onRelease: called once, after the last of the read\'s batches was released, never again', async (t) => {
  const r = new BufferRecycler(4);
  const data = r.allocate(4096);
  const part = (lo: number, hi: number) => ({ lane: 0, data: data.subarray(lo, hi), offsets: Uint32Array.of(0, hi - lo) });
  let calls = 0;
  let backFirst = false;
  const [a, b] = r.trackShared([part(0, 10), part(10, 20)], () => {
    calls++;
    backFirst = r.free === 1;
  });
  a!.release!();
  a!.release!();
  t.equal(calls, 0, 'not while a batch is out (a second release of another does not count)');
  b!.release!();
  t.equal(calls, 1, 'after the last release');
  t.ok(backFirst, 'with the buffer given back first');
  b!.release!();
  a!.release!();
  t.equal(calls, 1, 'never twice');
  let others = 0;
  const [c, d] = r.trackShared([part(0, 1), { lane: 0, data: Buffer.alloc(8), offsets: Uint32Array.of(0, 1) }], () => others++);
  c!.release!();
  d!.release!();
  d!.release!();
  t.equal(others, 1, 'batches not in one buffer of ours still count towards it, once');
  t.equal(r.free, 1, 'and give no buffer back');
});
