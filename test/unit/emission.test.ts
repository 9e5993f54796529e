// Closed windows leave in bounded chunks; a sink that needs one write per emission
// still gets one batch, formatted chunk by chunk, that reads back exactly as one formatted whole.
import t from 'tap';
import { emptyMoments, mergeMoments } from '../../src/core/stats.js';
import { seriesKey } from '../../src/core/series.js';
import { RowFormatter } from '../../src/windows/row.js';
import type { ClosedCell } from '../../src/windows/store.js';
import { formatWhole, rowBytesEstimate, splitCells, windowCount } from '../../src/engine/emission.js';
import { ClosedCells, STAT } from '../../src/windows/cells.js';
import { Rng } from '../fixtures/gen.js';

function cells(n: number, valueBytes = 4): ClosedCell[] {
  return Array.from({ length: n }, (_, i) => {
    const m = emptyMoments();
    mergeMoments(m, { count: 1, mean: i, m2: 0, min: i, max: i, sum: i, tsMin: 1_700_000_000_000 + i, tsMax: 1_700_000_000_000 + i });
    const key = seriesKey(`m${i}`, null, [['host', 'x'.repeat(valueBytes)]], null);
    return { key, windowStart: i < n / 2 ? 1_699_999_980_000 : 1_700_000_040_000, moments: m };
  });
}

t.test('splitCells: every cell once, in order, no chunk over the row or byte limit', async (t) => {
  const all = cells(1003, 100);
  const byRows = splitCells(all, { rows: 100, bytes: Number.MAX_SAFE_INTEGER });
  t.equal(byRows.length, 11);
  t.same(byRows.flat(), all, 'concatenated: the input');
  t.ok(byRows.every((c) => c.length <= 100));
  const limit = 20 * rowBytesEstimate(all[0]!);
  const byBytes = splitCells(all, { rows: 10_000, bytes: limit });
  t.same(byBytes.flat(), all);
  t.ok(byBytes.every((c) => c.reduce((a, x) => a + rowBytesEstimate(x), 0) <= limit), 'each chunk within the byte estimate');
  t.same(splitCells(all.slice(0, 1), { rows: 1, bytes: 1 }).map((c) => c.length), [1], 'a row over the byte limit still goes, alone');
});

t.test('formatWhole: chunked formatting reads back as one formatted batch', async (t) => {
  const all = cells(2501);
  const where = { topic: 'in', partition: 3 };
  const one = new RowFormatter(60_000, 100, []).format(all, where);
  const fmt = new RowFormatter(60_000, 100, []);
  const whole = await formatWhole((c) => fmt.format(c, where), splitCells(all, { rows: 1000, bytes: Number.MAX_SAFE_INTEGER }), where);
  t.same(whole.where, where, 'the lane, without making rows');
  t.same(whole.rows, one.rows);
  t.equal(whole.ndjson(), one.ndjson());
  t.equal(whole.ndjsonBytes!().toString('utf8'), one.ndjson(), 'ndjsonBytes too');
  for (const i of [0, 999, 1000, 1001, 2500]) {
    t.equal(whole.json!(i), one.json!(i), `json(${i})`);
    t.equal(whole.identityKey!(i), one.identityKey!(i), `identityKey(${i})`);
  }
});

t.test('formatWhole yields to the event loop between chunks', async (t) => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 0);
  const all = cells(200_000);
  const startTicks = ticks;
  const fmt = new RowFormatter(60_000, 1000, []);
  await formatWhole((c) => fmt.format(c), splitCells(all, { rows: 5_000, bytes: Number.MAX_SAFE_INTEGER }), undefined);
  clearInterval(timer);
  t.ok(ticks - startTicks >= 5, `timers ran while 40 chunks were formatted (${ticks - startTicks} ticks)`);
});

t.test('windowCount: the distinct window starts, whatever the order of the cells', async (t) => {
  const rng = new Rng(7);
  for (let round = 0; round < 200; round++) {
    const n = rng.int(0, 60);
    const starts = Array.from({ length: n }, () => 1_581_424_920_000 + 60_000 * rng.int(0, 6));
    // Mostly as a close hands them out (sorted); sometimes in any order.
    if (round % 3 !== 0) starts.sort((a, b) => a - b);
    const cells = new ClosedCells(starts.map((_, i) => `k${i}`), Float64Array.from(starts), new Float64Array(n * STAT.STRIDE), null);
    t.equal(windowCount(cells), new Set(starts).size, `round ${round}: ${n} cells`);
  }
});
