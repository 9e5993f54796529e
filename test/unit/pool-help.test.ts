// The pool's helper: when every slot is taken, acquire() answers at once and run() decodes that batch
// on the main thread (same results as a worker's); never with a foreign worker file, and not for a
// while after a worker failed on a batch (its bisection halves stay in workers). Real worker threads.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { BatchBuilder, type Batch } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { CELL, type DecodeResult } from '../../src/core/messages.js';
import { DecodePool, type BatchOutcome } from '../../src/pool/index.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);
const CRASHING_WORKER = fileURLToPath(new URL('../fixtures/crashing-worker.js', import.meta.url));

function batch(k: number, n = 200): Batch {
  const b = new BatchBuilder(1024);
  for (let i = 0; i < n; i++) {
    b.pushString(JSON.stringify(monascaRecord({ name: `m${i % 7}`, timestamp: T0 + k * 60_000 + i * 10, value: k * 1000 + i, dimensions: { h: `h${i % 3}` } })));
  }
  const { data, offsets } = b.take();
  return { partition: 0, seq: k, data, offsets };
}

/** (series key, window) -> [count, sum]: what a result says, whatever its dictionary ids. */
function summary(r: DecodeResult): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (let i = 0; i < r.cells.length; i += CELL.STRIDE) {
    out.set(`${r.series[r.cells[i + CELL.SERIES]!]}@${r.cells[i + CELL.WINDOW_START]}`, [r.cells[i + CELL.COUNT]!, r.cells[i + CELL.SUM]!]);
  }
  return out;
}

const ok = (o: BatchOutcome): DecodeResult => {
  if (o.kind !== 'ok') throw new Error(`expected ok, got ${o.reason}`);
  return o.result;
};

t.test('a full pool: the next batch is decoded on the main thread, with the results a worker gives', async (t) => {
  const s = settings();
  const pool = new DecodePool({ threads: 1, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 30_000 });
  t.teardown(() => pool.close());
  const ref = new Decoder(s, { scan: false });
  await pool.acquire();
  const a = pool.run(batch(0));
  t.ok(pool.full, 'the only slot is taken');
  // Resolves at once instead of waiting for the worker: the main thread takes this batch.
  await pool.acquire();
  const b = await pool.run(batch(1));
  t.equal(pool.stats.helped, 1, 'one batch decoded by the helper');
  t.same(summary(ok(b)), summary(ref.decodeBytes(batch(1).data, batch(1).offsets, Date.now())), 'helper result = reference decoder');
  t.same(summary(ok(await a)), summary(ref.decodeBytes(batch(0).data, batch(0).offsets, Date.now())), 'worker result = reference decoder');
  // acquire() then release() without a run gives back a ticket, not somebody else's slot.
  await pool.acquire();
  const c = pool.run(batch(2));
  await pool.acquire();
  pool.release();
  ok(await c);
  t.notOk(pool.full, 'every slot given back');
  await pool.idle();
});

t.test('no helper with another worker file, or with WORKER_THREADS=0', async (t) => {
  const s = settings();
  const foreign = new DecodePool({ threads: 1, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 30_000, workerFile: fileURLToPath(new URL('../../workers/decode.js', import.meta.url)) });
  t.teardown(() => foreign.close());
  await foreign.acquire();
  const a = foreign.run(batch(0));
  let second = false;
  const waiting = foreign.acquire().then(() => (second = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(second, 'acquire waits for the worker (the helper only stands in for the built-in worker)');
  ok(await a);
  await waiting;
  ok(await foreign.run(batch(1)));
  t.equal(foreign.stats.helped, 0);
  const inline = new DecodePool({ threads: 0, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 30_000 });
  await inline.acquire();
  ok(await inline.run(batch(0)));
  t.equal(inline.stats.helped, 0, 'in-thread there is nothing to help');
});

t.test('after a worker failure the helper stands aside: the batch and its retries stay in workers', async (t) => {
  const s = settings();
  const pool = new DecodePool({ threads: 1, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 30_000, workerFile: CRASHING_WORKER, helpDecode: true });
  t.teardown(() => pool.close());
  // The fixture worker throws on a batch whose first message is "throw": poisoned after the retry.
  const bad = new BatchBuilder(64);
  bad.pushString('"throw"');
  const { data, offsets } = bad.take();
  await pool.acquire();
  const first = await pool.run({ partition: 0, seq: 0, data, offsets });
  t.equal(first.kind, 'poisoned', 'the worker failed twice');
  await pool.acquire();
  const a = pool.run(batch(1));
  let second = false;
  const waiting = pool.acquire().then(() => (second = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(second, 'with the slot taken, acquire waits: no helper right after a failure');
  await a;
  await waiting;
  pool.release();
  t.equal(pool.stats.helped, 0);
});
