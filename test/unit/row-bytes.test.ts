// ndjsonBytes() without sketches writes each row's numbers and times as bytes (src/windows/row-bytes.ts):
// it must be the UTF-8 of ndjson(), and each line JSON.stringify of its row, for any double.
import t from 'tap';
import { seriesKey } from '../../src/core/series.js';
import { RowFormatter } from '../../src/windows/row.js';
import { ClosedCells, STAT } from '../../src/windows/cells.js';
import { Rng } from '../fixtures/gen.js';

const EDGES = [0, -0, 1, -1, 9, 10, 99, 100, 0.1, -0.5, 1e15 - 1, 1e15, -1e15, 1e15 + 2, 2 ** 53, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308, 123456.789, 1 / 3];

function value(rng: Rng): number {
  switch (rng.int(0, 3)) {
    case 0: return EDGES[rng.int(0, EDGES.length - 1)]!;
    case 1: return rng.int(-1_000_000, 1_000_000);
    case 2: return (rng.next() - 0.5) * 10 ** rng.int(-12, 20);
    default: return rng.int(-1000, 1000) / 8;
  }
}

t.test('ndjsonBytes() of rows without sketches: the UTF-8 of ndjson(), each line JSON.stringify(row)', async (t) => {
  const rng = new Rng(41);
  const f = new RowFormatter(60_000, 1000);
  for (let round = 0; round < 30; round++) {
    const n = rng.int(1, 200);
    const keys: string[] = [];
    const starts = new Float64Array(n);
    const stats = new Float64Array(n * STAT.STRIDE);
    for (let i = 0; i < n; i++) {
      keys.push(seriesKey(`m${rng.int(0, 20)}${round % 3 === 0 ? 'é€😀' : ''}`, rng.next() < 0.5 ? null : 'ms', [['host', `h${rng.int(0, 5)}`]], null));
      // Windows in order, as a close hands them out; occasionally far in the past or future.
      starts[i] = 1_581_425_000_000 + 60_000 * Math.floor((i * 4) / n) + (round % 5 === 0 ? -1_500_000_000_000 : 0);
      const o = i * STAT.STRIDE;
      const ts = starts[i]! + rng.int(0, 59_999) + (rng.next() < 0.2 ? rng.next() : 0);
      stats[o + STAT.COUNT] = rng.int(1, 1e6);
      stats[o + STAT.MEAN] = value(rng);
      stats[o + STAT.M2] = rng.next() < 0.1 ? -1e-9 : Math.abs(value(rng));
      stats[o + STAT.MIN] = value(rng);
      stats[o + STAT.MAX] = value(rng);
      stats[o + STAT.SUM] = value(rng);
      stats[o + STAT.TS_MIN] = ts;
      stats[o + STAT.TS_MAX] = ts + rng.int(0, 30_000);
    }
    const where = round % 2 === 0 ? undefined : { topic: round % 4 === 1 ? 'tópico.😀' : 'plain', partition: round };
    const b = f.format(new ClosedCells(keys, starts, stats, null), where);
    const text = b.ndjson();
    t.equal(b.ndjsonBytes!().toString('utf8'), text, `round ${round}: bytes`);
    t.equal(text, b.rows.map((r) => `${JSON.stringify(r)}\n`).join(''), `round ${round}: JSON.stringify`);
  }
});

/** Decimals of 0..8 places around the bounds of the digit-by-digit path (1e-6, 1e9) and the doubles next to them. */
function decimal(rng: Rng): number {
  const places = rng.int(0, 8);
  const scale = 10 ** rng.int(-3, 13);
  let x = Math.round((rng.next() - 0.5) * scale * 10 ** places) / 10 ** places;
  switch (rng.int(0, 5)) {
    case 0: x = [1e-6, -1e-6, 1e-7, 1e9, -1e9, 1e9 - 1e-6, 999_999_999.999999, 0.000001, 0.0000015, 1e9 + 0.5, 0.1 + 0.2, 1 - 1e-16][rng.int(0, 11)]!; break;
    case 1: x += Number.EPSILON * Math.abs(x) * (rng.next() < 0.5 ? -1 : 1); break;
    default: break;
  }
  return x;
}

t.test('short decimals and event times written digit by digit: each line JSON.stringify(row)', async (t) => {
  const rng = new Rng(43);
  const f = new RowFormatter(3_600_000, 1000);
  const MAX_MS = 253402300799999;
  for (let round = 0; round < 40; round++) {
    const n = rng.int(1, 300);
    const keys: string[] = [];
    const starts = new Float64Array(n);
    const stats = new Float64Array(n * STAT.STRIDE);
    for (let i = 0; i < n; i++) {
      keys.push(seriesKey(`m${rng.int(0, 50)}`, null, [['host', `h${rng.int(0, 5)}`]], null));
      // Hourly windows: rows of one window span many minutes; now and then the first and last ms there are.
      const edge = round % 7 === 0 ? [0, MAX_MS - 3_599_999][rng.int(0, 1)]! : undefined;
      starts[i] = edge ?? 1_581_422_400_000 + 3_600_000 * Math.floor((i * 3) / n);
      const o = i * STAT.STRIDE;
      const ts = starts[i]! + rng.int(0, 3_599_999) + (rng.next() < 0.2 ? rng.next() : 0);
      stats[o + STAT.COUNT] = rng.int(1, 1e6);
      stats[o + STAT.MEAN] = decimal(rng);
      stats[o + STAT.M2] = Math.abs(decimal(rng)) * (rng.next() < 0.5 ? 1 : 1e6);
      stats[o + STAT.MIN] = decimal(rng);
      stats[o + STAT.MAX] = decimal(rng);
      stats[o + STAT.SUM] = decimal(rng);
      stats[o + STAT.TS_MIN] = edge === 0 && rng.next() < 0.3 ? 0 : ts;
      stats[o + STAT.TS_MAX] = Math.min(MAX_MS, ts + rng.int(0, 60_000) + (rng.next() < 0.3 ? rng.next() : 0));
    }
    const b = f.format(new ClosedCells(keys, starts, stats, null));
    const lines = b.ndjsonBytes!().toString('utf8').split('\n');
    t.equal(lines.pop(), '', `round ${round}: ends with a newline`);
    const rows = b.rows;
    let bad = 0;
    for (let i = 0; i < n; i++) if (lines[i] !== JSON.stringify(rows[i])) bad++;
    t.equal(bad, 0, `round ${round}: ${n} rows as JSON.stringify writes them`);
  }
});
