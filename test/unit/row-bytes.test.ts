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
