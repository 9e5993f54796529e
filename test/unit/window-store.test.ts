// The compact window store (typed-array cells, series interned once, freed slots reused) against a
// plain model: a Map of Moments objects per (series, window) merged with mergeMoments. Same cells,
// same numbers, same order, every series released from the budget once its last window closed.
import t from 'tap';
import { CELL, type DecodeResult } from '../../src/core/messages.js';
import { emptyMoments, mergeMoments, type Moments } from '../../src/core/stats.js';
import { isClosed } from '../../src/core/window.js';
import { SeriesBudget, WindowStore, type ClosedCells } from '../../src/windows/store.js';
import { Rng } from '../fixtures/gen.js';

const WINDOW_MS = 60_000;
const BASE = Date.UTC(2024, 0, 1);

function batch(rng: Rng, keys: readonly string[], atMs: number): DecodeResult {
  const n = rng.int(1, 40);
  const cells = new Float64Array(n * CELL.STRIDE);
  for (let j = 0; j < n; j++) {
    const o = j * CELL.STRIDE;
    // Mostly near the stream's time, sometimes a window or two behind (late once closed).
    const ts = atMs - rng.int(0, 3) * WINDOW_MS + rng.int(0, WINDOW_MS - 1);
    const count = rng.int(1, 5);
    const v = rng.int(-1000, 1000) / 8;
    cells[o + CELL.SERIES] = rng.int(0, keys.length - 1);
    cells[o + CELL.WINDOW_START] = Math.floor(ts / WINDOW_MS) * WINDOW_MS;
    cells[o + CELL.COUNT] = count;
    cells[o + CELL.MEAN] = v;
    cells[o + CELL.M2] = rng.int(0, 100);
    cells[o + CELL.MIN] = v - rng.int(0, 10);
    cells[o + CELL.MAX] = v + rng.int(0, 10);
    cells[o + CELL.SUM] = v * count;
    cells[o + CELL.TS_MIN] = ts;
    cells[o + CELL.TS_MAX] = ts + rng.int(0, 10);
  }
  return { kind: 'partials', records: n, ok: n, series: [...keys], cells, rejects: [], maxEventMs: atMs, decodeSeconds: 0 };
}

function cellOf(r: DecodeResult, o: number): Moments {
  const c = r.cells;
  return { count: c[o + CELL.COUNT]!, mean: c[o + CELL.MEAN]!, m2: c[o + CELL.M2]!, min: c[o + CELL.MIN]!, max: c[o + CELL.MAX]!, sum: c[o + CELL.SUM]!, tsMin: c[o + CELL.TS_MIN]!, tsMax: c[o + CELL.TS_MAX]! };
}

t.test('takeClosed/takeAll equal a Map-of-Moments model, and every series leaves the budget', async (t) => {
  for (let run = 0; run < 30; run++) {
    const rng = new Rng(100 + run);
    const keys = Array.from({ length: rng.int(1, 60) }, (_, i) => `4:m${String(i).padStart(3, '0')}-`);
    const budget = new SeriesBudget(1_000_000);
    const store = new WindowStore({ windowMs: WINDOW_MS, latenessMs: 5_000, budget, confirmRecords: 1 });
    const model = new Map<number, Map<string, Moments>>();
    let watermark = -Infinity;
    let at = BASE;
    const check = (got: ClosedCells, closes: (ws: number) => boolean, what: string): void => {
      const want: Array<[string, number, Moments]> = [];
      for (const ws of [...model.keys()].filter(closes).sort((a, b) => a - b)) {
        for (const [k, m] of model.get(ws)!) want.push([k, ws, m]);
        model.delete(ws);
      }
      const have: Array<[string, number, Moments]> = [];
      for (let i = 0; i < got.length; i++) have.push([got.keys[i]!, got.starts[i]!, got.moments(i)]);
      t.same(have, want, what);
    };
    for (let b = 0; b < 40; b++) {
      at += rng.int(0, 2) * 20_000;
      const r = batch(rng, keys, at);
      const out = store.apply(r);
      let late = 0;
      for (let o = 0; o < r.cells.length; o += CELL.STRIDE) {
        const ws = r.cells[o + CELL.WINDOW_START]!;
        if (isClosed(ws, WINDOW_MS, watermark)) {
          late += r.cells[o + CELL.COUNT]!;
          continue;
        }
        const key = keys[r.cells[o + CELL.SERIES]!]!;
        let w = model.get(ws);
        if (w === undefined) model.set(ws, (w = new Map()));
        let m = w.get(key);
        if (m === undefined) w.set(key, (m = emptyMoments()));
        mergeMoments(m, cellOf(r, o));
      }
      t.equal(out.late.reduce((a, c) => a + c.count, 0), late, `run ${run} batch ${b}: late records`);
      watermark = store.watermark;
      check(store.takeClosed(), (ws) => isClosed(ws, WINDOW_MS, watermark), `run ${run} batch ${b}: closed cells`);
      const open = new Set<string>();
      for (const w of model.values()) for (const k of w.keys()) open.add(k);
      t.equal(store.openSeries, open.size, `run ${run} batch ${b}: open series`);
      t.equal(budget.open, open.size, `run ${run} batch ${b}: budget`);
    }
    check(store.takeAll(), () => true, `run ${run}: takeAll`);
    t.equal(store.openSeries, 0);
    t.equal(budget.open, 0);
    t.equal(budget.bytes, 0, 'every series gave its bytes back');
  }
});

t.test('a closed window frees its slots and series for reuse: 50 rounds of 3,000 series keep the store at one round', async (t) => {
  const keys = Array.from({ length: 3000 }, (_, i) => `2:s${i % 10}1:u4:host${String(i).length}:${i}`);
  const budget = new SeriesBudget(3000);
  const store = new WindowStore({ windowMs: WINDOW_MS, latenessMs: 0, budget, confirmRecords: 1 });
  for (let round = 0; round < 50; round++) {
    const cells = new Float64Array(keys.length * CELL.STRIDE);
    for (let j = 0; j < keys.length; j++) {
      const o = j * CELL.STRIDE;
      const ts = BASE + round * WINDOW_MS + 1;
      cells.set([j, BASE + round * WINDOW_MS, 1, j, 0, j, j, j, ts, ts], o);
    }
    const out = store.apply({ kind: 'partials', records: keys.length, ok: keys.length, series: keys, cells, rejects: [], maxEventMs: 0, decodeSeconds: 0 });
    // A budget of exactly one round: had a slot or a series leaked, the next round would be refused.
    t.equal(out.overLimit.length, 0);
    store.advanceWatermark(BASE + (round + 1) * WINDOW_MS);
    const closed = store.takeClosed();
    if (closed.length !== keys.length || closed.keys[123] !== keys[123] || closed.moments(123).sum !== 123) t.fail(`round ${round}`);
  }
  t.equal(store.openSeries, 0);
  t.equal(budget.open, 0);
});
