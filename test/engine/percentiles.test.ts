import t from 'tap';
import { Rng } from '../fixtures/gen.js';
import { runPipeline } from '../fixtures/harness.js';

t.test('PERCENTILES: each window reports quantiles within the sketch accuracy, pool and in-thread alike', async (t) => {
  const rng = new Rng(21);
  const base = Date.parse('2024-03-01T00:00:00Z');
  const values = new Map<string, number[]>();
  const lines: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    const name = `m${i % 4}`;
    const ts = base + Math.floor(i / 4) * 20; // 5,000 points per series over 100 s: two 60 s windows
    // Four orders of magnitude, negatives and zeros: the sketch must handle all of them.
    const v = rng.bool(0.05) ? 0 : (rng.bool(0.2) ? -1 : 1) * 10 ** rng.range(-1, 3);
    const w = Math.floor(ts / 60_000) * 60_000;
    const k = `${name}|${new Date(w).toISOString()}`;
    values.set(k, [...(values.get(k) ?? []), v]);
    lines.push(JSON.stringify({ metric: { name, timestamp: ts, value: v } }));
  }
  for (const threads of ['0', '2']) {
    const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', PERCENTILES: '5,50,95,99', WORKER_THREADS: threads, BATCH_SIZE: '700' }, { files: { 'in.ndjson': lines.join('\n') } });
    t.equal(run.rows.length, values.size, `threads=${threads}: one row per window`);
    let worst = 0;
    for (const r of run.rows) {
      const exact = [...values.get(`${r.name}|${r.period_start}`)!].sort((a, b) => a - b);
      t.equal(r.count, exact.length);
      t.ok(r.sketch !== undefined && r.sketch.count === exact.length, 'the mergeable sketch travels with the row');
      for (const q of [5, 50, 95, 99]) {
        const want = exact[Math.floor((q / 100) * (exact.length - 1))]!;
        const got = r.percentiles?.[`p${q}`];
        const err = want === 0 ? Math.abs(got ?? NaN) : Math.abs((got ?? NaN) - want) / Math.abs(want);
        worst = Math.max(worst, err);
      }
    }
    t.ok(worst <= 0.01 + 1e-12, `threads=${threads}: every percentile within 1 % relative error (worst ${worst.toExponential(2)})`);
  }
});
