// The engine's pending bound (2 x the pool's in-flight bound, a Gate): a sink that does not answer
// stalls submit() instead of piling up applied batches, and a sink failure wakes the stalled
// submitters with that failure. A real in-thread pool and a real decoder; only the sink is ours.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
import { Engine } from '../../src/engine/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { DecodePool } from '../../src/pool/index.js';
import { WRITTEN_ALL, type DeadLetter, type Sink, type SinkWriteResult } from '../../src/sinks/types.js';
import { BatchBuilder } from '../../src/core/batch.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);

/** One message in window k: each batch closes the window of the one before. */
function batchInWindow(k: number) {
  const b = new BatchBuilder(16);
  b.pushString(JSON.stringify(monascaRecord({ name: 'cpu', timestamp: T0 + k * W + 1000, value: k, dimensions: { h: 'a' } })));
  const { data, offsets } = b.take();
  return { lane: 0, data, offsets };
}

const settled = async (p: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void p.then(() => { done = true; }, () => { done = true; });
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  return done;
};

t.test('a sink that does not answer stalls submit at the pending bound; its failure wakes the submitter', async (t) => {
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 0, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
  t.teardown(() => pool.close(1000));
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const writes: Array<{ fail: (e: Error) => void }> = [];
  const sink: Sink = {
    describe: 'held',
    write: () => new Promise<SinkWriteResult>((_, reject) => writes.push({ fail: reject })),
    close: async () => {},
  };
  const deadLetter: DeadLetter = { describe: 'none', write: async () => {}, close: async () => {} };
  let fatal: Error | null = null;
  const engine = new Engine({
    pool, sink, deadLetter, metrics, logger: pino({ level: 'silent' }), sourceName: 'test',
    windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1, maxSeries: 100,
    decoder: new Decoder(s), autoOpenLanes: true, onFatal: (err) => { fatal = err; },
  });
  // Pending bound = 2 x maxInFlight = 2. Batch 0 applies; batch 1 closes window 0 and waits on the
  // sink; batch 2 waits behind it in the partition's order: two pending, so batch 3 must wait.
  for (let k = 0; k < 3; k++) await engine.submit(batchInWindow(k));
  const fourth = engine.submit(batchInWindow(3));
  t.notOk(await settled(fourth), 'submit waits while 2 batches are pending');
  t.equal(writes.length, 1, 'one emission reached the sink and is held there');
  const waits = (await registry.getSingleMetricAsString('streamstats_pool_backpressure_waits_total')).match(/ (\d+)$/m)?.[1];
  t.equal(waits, '1', 'the wait is counted');
  writes[0]!.fail(new Error('sink gone'));
  await t.rejects(fourth, { message: 'sink gone' }, 'the stalled submit fails with the sink failure');
  t.equal((fatal as Error | null)?.message, 'sink gone', 'reported once as fatal');
  await t.rejects(engine.submit(batchInWindow(4)), { message: 'sink gone' }, 'and every later submit too');
  await t.rejects(engine.drain(), { message: 'sink gone' });
  t.equal(engine.totals.batches, 3, 'the stalled batch was never dispatched');
});

t.test('an answering sink: every batch applies, every window is emitted', async (t) => {
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 0, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
  t.teardown(() => pool.close(1000));
  const rows: number[] = [];
  const sink: Sink = { describe: 'ok', write: async (b) => { rows.push(...b.rows.map((r) => r.sum)); return WRITTEN_ALL; }, close: async () => {} };
  const engine = new Engine({
    pool, sink, deadLetter: { describe: 'none', write: async () => {}, close: async () => {} }, metrics: createMetrics(new Registry()),
    logger: pino({ level: 'silent' }), sourceName: 'test', windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1,
    maxSeries: 100, decoder: new Decoder(s), autoOpenLanes: true,
  });
  for (let k = 0; k < 10; k++) await engine.submit(batchInWindow(k));
  await engine.closeAll();
  t.same(rows, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'in order, once each');
  t.equal(engine.totals.rows, 10);
});

t.test('open_series counts a closed window until the sink has written it', async (t) => {
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 0, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
  t.teardown(() => pool.close(1000));
  const registry = new Registry();
  const held: Array<() => void> = [];
  const sink: Sink = { describe: 'held', write: () => new Promise<SinkWriteResult>((resolve) => held.push(() => resolve(WRITTEN_ALL))), close: async () => {} };
  const engine = new Engine({
    pool, sink, deadLetter: { describe: 'none', write: async () => {}, close: async () => {} }, metrics: createMetrics(registry),
    logger: pino({ level: 'silent' }), sourceName: 'test', windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1,
    maxSeries: 100, decoder: new Decoder(s), autoOpenLanes: true,
  });
  const open = async () => Number((await registry.getSingleMetricAsString('streamstats_open_series')).match(/ (\d+)$/m)?.[1]);
  await engine.submit(batchInWindow(0));
  await engine.submit(batchInWindow(1));
  for (let i = 0; i < 20 && held.length === 0; i++) await new Promise((r) => setImmediate(r));
  t.equal(held.length, 1, 'window 0 closed and handed to the sink');
  t.equal(await open(), 2, 'window 1 open, window 0 not yet written: both count');
  held[0]!();
  await engine.drain();
  t.equal(await open(), 1, 'once written, only window 1');
  const closing = engine.closeAll();
  for (let i = 0; i < 20 && held.length === 1; i++) await new Promise((r) => setImmediate(r));
  t.equal(await open(), 1, 'the last window counts while it is written');
  held[1]!();
  await closing;
  t.equal(await open(), 0, 'and 0 means every window was written');
});
