// Percentile sketches count against MAX_STATE_MB: a cell's sketch charges the budget for each bucket
// it holds (up to 4,096: 1,500 series of them were 396 MB that the estimate never saw), a cell whose
// sketch would grow past the budget is refused like a new series, and a close gives every byte back.
import t from 'tap';
import { CELL, type DecodeResult } from '../../src/core/messages.js';
import { bucketCode, logGammaOf, MAX_BUCKETS, SKETCH_BASE_BYTES, SKETCH_BUCKET_BYTES } from '../../src/core/sketch.js';
import { seriesStateBytes, SeriesBudget, SharedSeriesBudget, WindowStore } from '../../src/windows/store.js';

const WINDOW_MS = 60_000;
const WS = Date.UTC(2024, 0, 1);
const LOG_GAMMA = logGammaOf(0.01);

/** One cell per key, each with `buckets` distinct positive buckets starting at bucket `from`. */
function wide(keys: readonly string[], from: number, buckets: number): DecodeResult {
  const cells = new Float64Array(keys.length * CELL.STRIDE);
  const offsets = new Uint32Array(keys.length + 1);
  const pairs = new Float64Array(keys.length * buckets * 2);
  let j = 0;
  for (let s = 0; s < keys.length; s++) {
    const o = s * CELL.STRIDE;
    cells[o + CELL.SERIES] = s;
    cells[o + CELL.WINDOW_START] = WS;
    cells[o + CELL.COUNT] = buckets;
    cells[o + CELL.MEAN] = 1;
    cells[o + CELL.MIN] = 1;
    cells[o + CELL.MAX] = 1;
    cells[o + CELL.SUM] = buckets;
    cells[o + CELL.TS_MIN] = WS;
    cells[o + CELL.TS_MAX] = WS;
    offsets[s] = j;
    for (let k = 0; k < buckets; k++, j++) {
      pairs[2 * j] = bucketCode(1.0203 ** (from + k), LOG_GAMMA);
      pairs[2 * j + 1] = 1;
    }
  }
  offsets[keys.length] = j;
  return { kind: 'partials', records: keys.length * buckets, ok: keys.length * buckets, series: [...keys], cells, rejects: [], maxEventMs: WS, decodeSeconds: 0, sketchOffsets: offsets, sketchPairs: pairs };
}

const store = (budget: SeriesBudget | SharedSeriesBudget) => new WindowStore({ windowMs: WINDOW_MS, latenessMs: 0, budget, sketchAccuracy: 0.01 });

t.test('sketch buckets are charged as they grow and given back at the close', async (t) => {
  const budget = new SeriesBudget(1000);
  const s = store(budget);
  const keys = ['a', 'b', 'c'];
  s.apply(wide(keys, 0, 100));
  const series = keys.reduce((n, k) => n + seriesStateBytes(k), 0);
  t.equal(budget.bytes, series + 3 * (SKETCH_BASE_BYTES + 100 * SKETCH_BUCKET_BYTES), '3 sketches of 100 buckets');
  s.apply(wide(keys, 50, 100)); // 50 buckets held already, 50 new
  t.equal(budget.bytes, series + 3 * (SKETCH_BASE_BYTES + 150 * SKETCH_BUCKET_BYTES), '50 more each');
  const closed = s.takeAll();
  t.equal(closed.sketches?.[0]?.buckets, 150);
  t.equal(budget.bytes, 0, 'every byte given back');
  t.equal(budget.open, 0);
});

t.test('a sketch never holds more than MAX_BUCKETS a sign, however many codes arrive', async (t) => {
  const budget = new SeriesBudget(10);
  const s = store(budget);
  s.apply(wide(['w'], -3000, 3 * MAX_BUCKETS));
  t.equal(budget.bytes, seriesStateBytes('w') + SKETCH_BASE_BYTES + MAX_BUCKETS * SKETCH_BUCKET_BYTES);
  const closed = s.takeAll();
  t.equal(closed.sketches?.[0]?.buckets, MAX_BUCKETS);
  t.equal(closed.sketches?.[0]?.count, 3 * MAX_BUCKETS, 'no value lost: the lowest buckets were folded');
});

t.test('wide sketches fill MAX_STATE_MB: new series and growing sketches are refused by bytes, the rest goes on', async (t) => {
  const perWide = seriesStateBytes('s000') + SKETCH_BASE_BYTES + 1000 * SKETCH_BUCKET_BYTES;
  const budget = new SeriesBudget(100_000, 10 * perWide + 1000);
  const s = store(budget);
  const keys = Array.from({ length: 15 }, (_, i) => `s${String(i).padStart(3, '0')}`);
  const first = s.apply(wide(keys, 0, 1000));
  t.equal(first.overLimit.length, 5, '10 wide series fit, 5 refused');
  t.ok(first.overLimit.every((o) => o.limit === 'bytes'));
  t.ok(budget.bytes <= budget.maxBytes, `${budget.bytes} <= ${budget.maxBytes}`);
  // The admitted series: buckets they hold already are free, a new one is not.
  const same = s.apply(wide(keys.slice(0, 10), 0, 1000));
  t.equal(same.overLimit.length, 0, 'values in buckets held cost nothing');
  t.equal(same.accepted, 10 * 1000);
  const grow = s.apply(wide(keys.slice(0, 10), 1000, 20)); // 20 new buckets each: more than the 1000 bytes left
  t.equal(grow.overLimit.length, 10, 'an open series whose sketch would grow past the budget is refused');
  t.ok(budget.bytes <= budget.maxBytes);
  s.takeAll();
  t.equal(budget.bytes, 0);
});

t.test('LANE_STATE=worker: two owners\' sketches count in one shared budget, refused by bytes as on one thread, and given back', async (t) => {
  const perWide = seriesStateBytes('s000') + SKETCH_BASE_BYTES + 1000 * SKETCH_BUCKET_BYTES;
  const max = 10 * perWide + 1000;
  // One budget object per owner over the same shared counters, as each owner worker maps them.
  const a = new SharedSeriesBudget(100_000, max);
  const b = new SharedSeriesBudget(100_000, max, a.buffer);
  const keys = Array.from({ length: 15 }, (_, i) => `s${String(i).padStart(3, '0')}`);
  const sa = store(a);
  const sb = store(b);
  const first = sa.apply(wide(keys.slice(0, 6), 0, 1000));
  t.equal(first.overLimit.length, 0, 'owner A: 6 wide series fit');
  t.equal(b.bytes, 6 * perWide, 'owner B sees owner A\'s sketches in the shared count');
  const second = sb.apply(wide(keys.slice(6), 0, 1000));
  t.equal(second.overLimit.length, 5, 'owner B: 4 more fit, 5 refused (10 in all, as on one thread)');
  t.ok(second.overLimit.every((o) => o.limit === 'bytes'));
  t.ok(a.bytes <= max, `${a.bytes} <= ${max}`);
  const grow = sa.apply(wide(keys.slice(0, 6), 1000, 20));
  t.equal(grow.overLimit.length, 6, 'owner A: sketches that would grow past what owner B holds too are refused');
  sa.takeAll();
  t.equal(b.bytes, 4 * perWide, 'owner A\'s close gives its bytes back to the shared count');
  sb.takeAll();
  t.equal(a.bytes, 0, 'every byte given back');
  t.equal(a.open, 0);
});

t.test('LANE_STATE=worker: an owner that died leaves the shared budget with what it counted, the others\' share stays', async (t) => {
  const main = new SharedSeriesBudget(100, 1_000_000, undefined, { owners: 2 });
  const owners = [0, 1].map((owner) => new SharedSeriesBudget(100, main.maxBytes, main.buffer, { owner }));
  const stores = owners.map(store);
  stores[0]!.apply(wide(['a0', 'a1', 'a2'], 0, 50));
  stores[1]!.apply(wide(['b0', 'b1'], 0, 30));
  const share1 = 2 * (seriesStateBytes('b0') + SKETCH_BASE_BYTES + 30 * SKETCH_BUCKET_BYTES);
  t.equal(main.open, 5);
  main.forgetOwner(0);
  t.equal(main.open, 2, 'owner 0\'s series are gone from the count');
  t.equal(main.bytes, share1, 'and its bytes: what is left is owner 1\'s');
  // The replacement counts from nothing in the same slot; owner 1 closes its lanes as usual.
  const replacement = new SharedSeriesBudget(100, main.maxBytes, main.buffer, { owner: 0 });
  store(replacement).apply(wide(['c0'], 0, 10));
  stores[1]!.takeAll();
  t.equal(main.open, 1);
  t.equal(main.bytes, seriesStateBytes('c0') + SKETCH_BASE_BYTES + 10 * SKETCH_BUCKET_BYTES, 'only the replacement\'s state is counted');
  t.throws(() => new SharedSeriesBudget(100, 1, main.buffer, { owner: 2 }), /owner 2 has no slot/);
});
