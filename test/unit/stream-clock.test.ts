// StreamClock.observeCells decides the common cases without building points: it must move stream
// time (and hold evidence) exactly as observe() of the same partials' points does.
import fc from 'fast-check';
import t from 'tap';
import { CELL } from '../../src/core/messages.js';
import { StreamClock, cellPoints, type TimePoint } from '../../src/windows/store.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? '20260101');

/** A batch: cells (count, tsMin, tsMax) around a base time, some far ahead or behind. */
const batchArb = fc.record({
  shift: fc.oneof(fc.constant(0), fc.integer({ min: -200_000, max: 200_000 }), fc.integer({ min: 1_000, max: 40_000 })),
  cells: fc.array(
    fc.record({ count: fc.integer({ min: 1, max: 30 }), at: fc.integer({ min: -8_000, max: 8_000 }), span: fc.integer({ min: 0, max: 3_000 }), outlier: fc.integer({ min: 0, max: 30 }), fraction: fc.integer({ min: 0, max: 200 }) }),
    { minLength: 0, maxLength: 40 },
  ),
  // Times on the minute, a minute apart (beyond any jump bound here): no point chains to the next.
  minutes: fc.boolean(),
  // Times on a 500 ms grid, with jump bounds that are multiples of it: points exactly at the bound,
  // and many points of one time (the bucketed path's ties and its confirm-th record within a bucket).
  grid: fc.boolean(),
});

function cellsOf(base: number, b: { minutes: boolean; grid: boolean; cells: ReadonlyArray<{ count: number; at: number; span: number; outlier: number; fraction: number }> }): Float64Array {
  const out = new Float64Array(b.cells.length * CELL.STRIDE);
  b.cells.forEach((c, i) => {
    const o = i * CELL.STRIDE;
    // One cell in ~30 sits a day ahead: evidence that must not move stream time on its own. One in
    // ~200 is not a whole millisecond (the typed path leaves such a batch to observe()).
    const ts = (b.grid ? base + (c.at % 16) * 500 : b.minutes ? base + (c.at % 16) * 60_000 : base + c.at) + (c.outlier === 0 ? 86_400_000 : 0) + (c.fraction === 0 ? 0.25 : 0);
    out[o + CELL.COUNT] = c.count;
    out[o + CELL.TS_MIN] = ts;
    out[o + CELL.TS_MAX] = c.count > 1 ? ts + (b.grid ? (c.span % 4) * 500 : c.span) : ts;
  });
  return out;
}

t.test('observeCells moves stream time and holds evidence exactly as observe() of the points', async (t) => {
  let batches = 0;
  fc.assert(
    fc.property(fc.oneof(fc.integer({ min: 0, max: 10_000 }), fc.constantFrom(500, 1000, 1500)), fc.integer({ min: 1, max: 12 }), fc.array(batchArb, { minLength: 1, maxLength: 30 }), (jump, confirm, bs) => {
      const fast = new StreamClock(jump, confirm);
      const slow = new StreamClock(jump, confirm);
      let base = 1_700_000_000_000;
      for (const b of bs) {
        base += b.shift;
        const cells = cellsOf(base, b);
        const at = Array.from({ length: b.cells.length }, (_, i) => i * CELL.STRIDE);
        const points: TimePoint[] = [];
        for (const o of at) cellPoints(cells[o + CELL.TS_MIN]!, cells[o + CELL.TS_MAX]!, cells[o + CELL.COUNT]!, points);
        fast.observeCells(cells, at);
        slow.observe(points);
        batches++;
        if (fast.streamMs !== slow.streamMs || fast.heldRecords !== slow.heldRecords) return false;
      }
      return true;
    }),
    { seed: SEED, numRuns: 400 },
  );
  t.ok(batches > 1000, `${batches} batches compared`);
});

t.test('the fast paths: an in-order batch and a confirmed jump', async (t) => {
  const c = new StreamClock(5_000, 3);
  const at = [0, CELL.STRIDE];
  const cells = new Float64Array(2 * CELL.STRIDE);
  const set = (i: number, count: number, min: number, max: number) => {
    cells[i * CELL.STRIDE + CELL.COUNT] = count;
    cells[i * CELL.STRIDE + CELL.TS_MIN] = min;
    cells[i * CELL.STRIDE + CELL.TS_MAX] = max;
  };
  set(0, 2, 1000, 2000);
  set(1, 2, 1500, 2500);
  c.observeCells(cells, at);
  t.equal(c.streamMs, 2500, 'the first records start stream time (3 confirm a start)');
  set(0, 2, 2600, 4000);
  set(1, 1, 4100, 4100);
  c.observeCells(cells, at);
  t.equal(c.streamMs, 4100, 'in order: stream time follows the latest');
  set(0, 5, 60_000, 60_400);
  set(1, 1, 60_500, 60_500);
  c.observeCells(cells, at);
  t.equal(c.streamMs, 60_500, 'a whole batch 56 s ahead, confirmed by 6 records: stream time follows');
  t.equal(c.heldRecords, 0);
});

t.test('minutes a batch apart, each spread over a second (a file of samples): chained to the bound exactly, confirmed within a minute', async (t) => {
  const c = new StreamClock(5_000, 3);
  const at = [0, CELL.STRIDE, 2 * CELL.STRIDE];
  const cells = new Float64Array(3 * CELL.STRIDE);
  const set = (i: number, count: number, min: number, max: number) => {
    cells[i * CELL.STRIDE + CELL.COUNT] = count;
    cells[i * CELL.STRIDE + CELL.TS_MIN] = min;
    cells[i * CELL.STRIDE + CELL.TS_MAX] = max;
  };
  c.raise(60_000);
  // A record exactly at the bound chains; the minute after is 2 records, fewer than confirm: held.
  set(0, 1, 65_000, 65_000);
  set(1, 2, 120_100, 120_900);
  set(2, 0, 0, 0);
  c.observeCells(cells, at);
  t.equal(c.streamMs, 65_000, 'a record at stream time + the bound moves it there');
  t.equal(c.heldRecords, 2, 'the next minute is held, unconfirmed');
  // The next batch brings the same minute's other records and the minute after: the 3rd latest
  // record is in the later minute (1 + 2 records there), and the chain from it takes the rest of it.
  set(0, 2, 120_200, 120_300);
  set(1, 3, 180_050, 180_700);
  set(2, 1, 180_400, 180_400);
  c.observeCells(cells, at);
  t.equal(c.streamMs, 180_700, 'confirmed by the later minute\'s records: stream time is its latest');
  t.equal(c.heldRecords, 0);
});
