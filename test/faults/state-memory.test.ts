// RSS, not the estimate, against the README's memory budget (src/config/memory.ts rssBudgetMb), under
// the floods that grew the process past it: percentile sketches as wide as they get (1,500 series of
// 4,096 buckets were 396 MB the estimate never saw) and endless new series (the decoders' series
// dictionaries, each full one kept on the main thread). The shipped CLI reads the flood on stdin for
// a bounded time while its RSS is sampled from /proc: under the budget, and level by the end.
import t from 'tap';
import { rssBudgetMb } from '../../src/config/memory.js';
import { flood, median, PLATEAU_MARGIN_MB } from '../fixtures/state-memory.js';

t.test('wide percentile sketches: RSS stays under the budget, the sketches beyond it are refused', async (t) => {
  // Small limits make a small budget, so that 40 s of a loaded CI machine's throughput can pass it.
  const env = { WORKER_THREADS: '1', WORKER_MAX_MEMORY_MB: '32', MAX_STATE_MB: '4', PERCENTILES: '50,99', WINDOW_SECONDS: '60' };
  const budget = rssBudgetMb({ maxStateMb: 4, workerThreads: 1, workerMaxMemoryMb: 32 });
  const run = await flood(t, 'sketch', ['1500'], env, 40);
  t.comment(`RSS MiB every 5 s: ${run.samples.filter((_, i) => i % 10 === 9).map((m) => m.toFixed(0)).join(' ')}; budget ${budget}`);
  t.ok(run.peak <= budget, `peak RSS ${run.peak.toFixed(0)} MiB <= ${budget} MiB`);
  // A peak under the budget for 40 s is no bound if RSS still climbs: a worker's young generation,
  // left to V8, doubled step by step (27 to 74 MiB of heap in the first minute; V8's bound is 192 MiB).
  // Once the heaps are at their bounds RSS only swings with the collections, so the last 10 s stay
  // around what the 30 s before reached; the median, as single samples land on a collection's top.
  const last = median(run.samples.slice(-20));
  const before = Math.max(...run.samples.slice(0, -20));
  t.ok(last <= before + PLATEAU_MARGIN_MB, `RSS levels off: median of the last 10 s ${last.toFixed(0)} MiB <= ${before.toFixed(0)} + ${PLATEAU_MARGIN_MB} MiB, the peak of the 30 s before`);
  t.ok(run.refused > 0, `records whose sketch would pass MAX_STATE_MB are dead-lettered as series_limit (${run.refused})`);
});

t.test('endless new series: RSS stays under the budget, and no worker outgrows its heap limit', async (t) => {
  const env = { WORKER_THREADS: '1', WORKER_MAX_MEMORY_MB: '64', MAX_STATE_MB: '32', WINDOW_SECONDS: '10' };
  const budget = rssBudgetMb({ maxStateMb: 32, workerThreads: 1, workerMaxMemoryMb: 64 });
  const run = await flood(t, 'series', ['0', '120'], env, 30);
  t.comment(`RSS MiB every 5 s: ${run.samples.filter((_, i) => i % 10 === 9).map((m) => m.toFixed(0)).join(' ')}; budget ${budget}`);
  t.ok(run.peak <= budget, `peak RSS ${run.peak.toFixed(0)} MiB <= ${budget} MiB`);
  // A dictionary bound fixed at 128 MiB outgrew a 64 MiB worker: replaced again and again, its batches retried.
  t.notMatch(run.stderr, /ERR_WORKER_OUT_OF_MEMORY/, 'the series dictionary starts over within the worker heap limit');
});
