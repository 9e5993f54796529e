// The watermark rule: one outlier far ahead of the stream cannot drag the watermark
// forward and make in-order records late, while a genuine jump of the whole stream is followed once
// WATERMARK_CONFIRM_RECORDS records confirm it. Through the real decoder and the real window store.
import fc from 'fast-check';
import t from 'tap';
import { Decoder } from '../../src/core/decode.js';
import { SeriesBudget, StreamClock, WindowStore } from '../../src/windows/store.js';
import { pack, settings } from '../fixtures/gen.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? '20260101');
const WINDOW_MS = 60_000;
const BASE = Date.UTC(2024, 0, 1);
const decoder = new Decoder(settings({ windowMs: WINDOW_MS }));

function msg(series: number, tsMs: number): string {
  return JSON.stringify({ metric: { name: `m${series}`, dimensions: { host: 'a' }, timestamp: tsMs, value: 1 } });
}

/** Applies records (times) in batches of the given sizes; returns how many records came back late, per batch. */
function run(store: WindowStore, times: readonly number[], series: readonly number[], sizes: readonly number[], after?: (i: number) => void): number[] {
  const late: number[] = [];
  let i = 0;
  let s = 0;
  while (i < times.length) {
    const n = Math.max(1, sizes[s++ % sizes.length]!);
    const batch: string[] = [];
    for (let j = i; j < Math.min(times.length, i + n); j++) batch.push(msg(series[j]!, times[j]!));
    const { buffer, offsets } = pack(batch);
    const out = store.apply(decoder.decodeBatch(buffer, offsets, Date.now()));
    late.push(out.late.reduce((a, c) => a + c.count, 0));
    i += batch.length;
    after?.(i);
  }
  return late;
}

function newStore(latenessMs: number, confirmRecords: number): WindowStore {
  return new WindowStore({ windowMs: WINDOW_MS, latenessMs, budget: new SeriesBudget(1_000_000), confirmRecords });
}

t.test('regression: one record 23 h ahead among 3,000 current ones makes none of them late', async (t) => {
  const store = newStore(5_000, 10);
  const times: number[] = [];
  for (let i = 0; i < 3_001; i++) times.push(BASE + i * 100);
  times.splice(500, 0, BASE + 23 * 3_600_000);
  const late = run(store, times, times.map((_, i) => i % 7), [50]);
  t.equal(late.reduce((a, b) => a + b, 0), 0, 'no record is late');
  t.ok(store.watermark < BASE + 3_001 * 100, 'the watermark stayed with the stream');
  t.ok(store.watermark >= BASE + 2_900 * 100 - 5_000 - WINDOW_MS, `the watermark still follows the stream (${new Date(store.watermark).toISOString()})`);
});

t.test('regression: in a historic replay, one record carrying the current time moves nothing', async (t) => {
  const store = newStore(5_000, 10);
  const old = Date.UTC(2019, 5, 1);
  const times: number[] = [];
  for (let i = 0; i < 3_000; i++) times.push(old + i * 1_000);
  times.splice(1_000, 0, Date.now());
  const late = run(store, times, times.map((_, i) => i % 3), [40]);
  t.equal(late.reduce((a, b) => a + b, 0), 0);
});

t.test('property: a single outlier ahead among N in-order records never makes an in-order record late', async (t) => {
  const r = fc.check(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 400 }),
      fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 0, max: 400 }),
      fc.integer({ min: 1, max: 100 * 86_400_000 }),
      fc.integer({ min: 0, max: 30_000 }),
      fc.integer({ min: 2, max: 50 }),
      fc.integer({ min: 1, max: 5 }),
      (steps, sizes, at, ahead, latenessMs, confirm, nSeries) => {
        const times: number[] = [];
        let ts = BASE;
        for (const d of steps) times.push((ts += d));
        const pos = Math.min(at, times.length);
        // Ahead of every in-order record before it, by more than the lateness (else it is ordinary disorder).
        const outlier = (pos === 0 ? BASE : times[pos - 1]!) + latenessMs + ahead;
        const all = [...times.slice(0, pos), outlier, ...times.slice(pos)];
        const series = all.map((_, i) => i % nSeries);
        const store = newStore(latenessMs, confirm);
        const late = run(store, all, series, sizes);
        return late.every((n) => n === 0);
      },
    ),
    { numRuns: 300, seed: SEED },
  );
  t.notOk(r.failed, `300 cases${r.failed ? `: counterexample ${JSON.stringify(r.counterexample)}` : ''}`);
});

t.test('property: a genuine jump of the stream is followed once WATERMARK_CONFIRM_RECORDS records after it are applied', async (t) => {
  const r = fc.check(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 200 }),
      fc.array(fc.integer({ min: 0, max: 5_000 }), { minLength: 1, maxLength: 200 }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
      fc.integer({ min: 120_000, max: 30 * 86_400_000 }),
      fc.integer({ min: 0, max: 10_000 }),
      fc.integer({ min: 1, max: 50 }),
      (before, after, sizes, jump, latenessMs, confirm) => {
        const times: number[] = [];
        let ts = BASE;
        for (const d of before) times.push((ts += d));
        const jumpAt = (ts += jump);
        const first = times.length;
        times.push(ts);
        for (const d of after) times.push((ts += d));
        const store = newStore(latenessMs, confirm);
        let ok = true;
        run(store, times, times.map((_, i) => i % 3), sizes, (applied) => {
          // The documented bound: once `confirm` records at or after the jump are applied, stream time is past it.
          if (applied - first >= confirm && store.streamMs < jumpAt) ok = false;
        });
        return ok && (times.length - first < confirm || store.watermark >= jumpAt - latenessMs);
      },
    ),
    { numRuns: 300, seed: SEED },
  );
  t.notOk(r.failed, `300 cases${r.failed ? `: counterexample ${JSON.stringify(r.counterexample)}` : ''}`);
});

t.test('StreamClock: evidence not confirmed by consecutive batches is forgotten; held evidence stays bounded', async (t) => {
  const c = new StreamClock(1_000, 3);
  c.raise(10_000);
  c.observe([{ t: 500_000, n: 2 }]);
  t.equal(c.streamMs, 10_000, 'two records ahead do not move it');
  t.equal(c.heldRecords, 2);
  c.observe([{ t: 10_500, n: 5 }]);
  t.equal(c.streamMs, 10_500, 'a batch of near records moves it freely');
  t.equal(c.heldRecords, 0, 'and clears unconfirmed evidence');
  c.observe([{ t: 600_000, n: 1 }]);
  c.observe([{ t: 600_100, n: 1 }]);
  c.observe([{ t: 600_200, n: 1 }]);
  t.equal(c.streamMs, 600_200, 'three consecutive batches confirm the jump (to the 3rd largest time, chained onward)');
  for (let i = 0; i < 1000; i++) c.observe([{ t: 10_000_000 + i * 10_000, n: 1 }, { t: 600_200, n: 1 }]);
  t.ok(c.heldRecords < 3, 'held evidence stays under the confirmation count');
  t.throws(() => new StreamClock(0, 0), /confirm \(0\) must be an integer >= 1/);
});
