// The PostgreSQL sink fed COPY tuples (what an owner worker makes with LANE_STATE=worker) against the
// same sink fed row objects, on the same closed cells: the same refusals with the same details, and
// the same stored tables, through every way a write takes (COPY, replay upsert, amendments,
// replacement of a row by a later write of the group, bisection). Real PostgreSQL.
import t, { type Test } from 'tap';
import { seriesKey } from '../../src/core/series.js';
import { ClosedCells, CLOSED_BY, STAT, type CellQuality } from '../../src/windows/cells.js';
import { RowFormatter, type RowBatch } from '../../src/windows/row.js';
import { FormattedElsewhere, rowsWire } from '../../src/windows/row-task.js';
import { CopyTupleWriter } from '../../src/sinks/postgres/tuples.js';
import type { SinkCommit, SinkWriteResult } from '../../src/sinks/types.js';
import { Rng } from '../fixtures/gen.js';
import { openSink, storedTables, testSchema } from '../fixtures/pg.js';

const WINDOW_MS = 60_000;
const T0 = Date.parse('2024-03-01T00:00:00Z');
const LANE = { topic: 'metrics', partition: 2 };

interface Cell {
  key: string;
  start: number;
  count?: number;
  value?: number;
  /** 'window': the event times at the window's end of 2024 (only the window start out of range). */
  times?: 'window';
}

function cells(list: readonly Cell[], quality?: CellQuality): ClosedCells {
  const stats = new Float64Array(list.length * STAT.STRIDE);
  list.forEach((c, i) => {
    const o = i * STAT.STRIDE;
    const n = c.count ?? 3;
    const v = c.value ?? i * 1.25;
    stats[o + STAT.COUNT] = n;
    stats[o + STAT.MEAN] = v;
    stats[o + STAT.M2] = n * 0.3;
    stats[o + STAT.MIN] = v - 1;
    stats[o + STAT.MAX] = v + 1;
    stats[o + STAT.SUM] = v * n;
    const at = c.times === 'window' ? T0 : c.start;
    stats[o + STAT.TS_MIN] = at + 1000.5;
    stats[o + STAT.TS_MAX] = at + 59_000;
  });
  return new ClosedCells(list.map((c) => c.key), Float64Array.from(list.map((c) => c.start)), stats, null, quality ?? null);
}

const key = (name: string, host: string, unit: string | null = null) => seriesKey(name, unit, [['hostname', host]], null);

/** Writers of both kinds over one formatter each, as the main thread and an owner have them. */
function kinds() {
  const fmtRows = new RowFormatter(WINDOW_MS, 1000);
  const fmtOwner = new RowFormatter(WINDOW_MS, 1000);
  const tuples = new CopyTupleWriter(WINDOW_MS, 1000);
  return {
    rows: (c: ClosedCells, where = LANE): RowBatch => fmtRows.format(c, where),
    tuples: (c: ClosedCells, where = LANE): RowBatch => {
      const wire = rowsWire(fmtOwner.format(c, where), c.length, false, 0);
      return new FormattedElsewhere({ ...wire, copy: tuples.tuples(c, where) }, where, () => fmtOwner.format(c, where));
    },
  };
}

const commit = (position: number): SinkCommit => ({ ...LANE, point: { position, watermarkMs: T0, appliedEnd: position } });

/** Runs `script` against a sink fed rows and one fed tuples; both must answer and store the same. */
async function bothWays(t: Test, script: (write: (c: ClosedCells, position?: number, where?: typeof LANE) => Promise<SinkWriteResult>) => Promise<void>): Promise<SinkWriteResult[]> {
  const k = kinds();
  const out: Record<string, { results: SinkWriteResult[]; tables: Record<string, string[]>; position: number | undefined }> = {};
  for (const kind of ['rows', 'tuples'] as const) {
    const s = await testSchema(t);
    const sink = await openSink(t, s.url);
    const results: SinkWriteResult[] = [];
    const pending: Array<Promise<void>> = [];
    await script((c, position, where) => {
      const batch = k[kind](c, where);
      t.equal(batch.copyTuples?.() != null, kind === 'tuples', `${kind}: ${kind === 'tuples' ? 'COPY tuples' : 'row objects'}`);
      const p = sink.write(batch, position === undefined ? undefined : commit(position));
      pending.push(p.then((r) => void results.push(r)));
      return p;
    });
    await Promise.all(pending);
    out[kind] = { results, tables: await storedTables(s.pool), position: (await sink.readPositions(LANE.topic, [LANE.partition])).get(LANE.partition)?.position };
  }
  t.same(out['tuples']!.results, out['rows']!.results, 'the same refusals, with the same details');
  t.same(out['tuples']!.tables, out['rows']!.tables, 'the same windows, series and rollups');
  t.equal(out['tuples']!.position, out['rows']!.position, 'the same commit point');
  return out['rows']!.results;
}

t.test('refused before sending, as a duplicate, and by bisection: the same rows, the same details', async (t) => {
  const list: Cell[] = [];
  for (let i = 0; i < 40; i++) list.push({ key: key(`m${i % 4}`, `h${i}`, i % 3 === 0 ? 'ms' : null), start: T0 + (i % 2) * WINDOW_MS });
  list[5] = { key: key('bad\u0000name', 'h5'), start: T0 };
  // A lone surrogate is stored as U+FFFD: the two rows are one identity as stored.
  list[9] = { key: key('x\ufffd', 'a'), start: T0 };
  list[10] = { key: key('x\ud800', 'a'), start: T0 };
  // A window no check foresees (the row's times are refused as text, its window start by the server).
  list[20] = { key: key('m0', 'far'), start: Date.parse('-010000-01-01T00:00:00Z') };
  list[21] = { key: key('m0', 'far2'), start: Date.parse('-010000-01-01T00:00:00Z'), times: 'window' };
  list[30] = { key: key('m1', 'h30'), start: T0, count: 2 ** 53 };
  // Either side of the years written as they are (1970 to 9999): the checks, not the shortcut, decide.
  // (Before 1970 the row formatter's event time is not valid ISO text, so the row is refused; the
  // decoder refuses such times as bad_timestamp, so only a crafted cell has one.)
  list[33] = { key: key('m1', 'h33'), start: Date.parse('1960-03-01T00:00:00Z') };
  list[34] = { key: key('m1', 'h34'), start: Date.parse('+010000-01-01T00:00:00Z') };
  list[35] = { key: key('m1', 'h35'), start: Date.parse('9999-12-31T23:00:00Z') };
  const [r] = await bothWays(t, async (write) => {
    await write(cells(list), 10);
  });
  t.same(r!.rejected.map((x) => x.index), [5, 10, 20, 21, 30, 33, 34], 'the NUL, the duplicate, the times and the window out of range, the count, 1960 and year 10000');
  t.match(r!.rejected[1]!.detail, /^postgres 21000: not sent: the same identity as row 9/);
  t.match(r!.rejected[2]!.detail, /^postgres: not sent: duration_start .* is not an ISO 8601 timestamp/);
  t.match(r!.rejected[3]!.detail, /^postgres 2200[89]/);
});

t.test('a topic over the btree limit: every row of its write refused by bisection, the other writes stored', async (t) => {
  // ~3,000 bytes of UTF-8 that do not compress: over the btree maximum.
  const rng = new Rng(5);
  let topic = '';
  for (let i = 0; i < 1000; i++) topic += String.fromCharCode(rng.int(0x21, 0xd7ff));
  const long = { topic, partition: 0 };
  const results = await bothWays(t, async (write) => {
    await write(cells([{ key: key('a', 'h'), start: T0 }, { key: key('b', 'h'), start: T0 }]), 1);
    await write(cells([{ key: key('a', 'h'), start: T0 }, { key: key('c', 'h'), start: T0 }]), undefined, long);
  });
  t.same(results[0]!.rejected, [], 'the first write stored');
  t.same(results[1]!.rejected.map((r) => r.index), [0, 1], 'both rows of the long topic refused');
  t.match(results[1]!.rejected[0]!.detail, /^postgres 54000: index row size/);
});

t.test('writes grouped in one transaction: a later write of the same identity replaces the earlier, a replay upserts, amendments update in place', async (t) => {
  const a = [0, 1, 2, 3].map((i) => ({ key: key('g', `h${i}`), start: T0 }));
  const quality = (n: number, revision: number): CellQuality => ({ revision: new Float64Array(n).fill(revision), closedBy: new Uint8Array(n).fill(revision > 0 ? CLOSED_BY.indexOf('amended') : 0), lateRecords: new Float64Array(n).fill(revision) });
  await bothWays(t, async (write) => {
    // The first write's transaction runs while the next three queue: those go in one group.
    const first = write(cells(a, quality(4, 0)), 1);
    const second = write(cells(a.map((c) => ({ ...c, value: 100 })), quality(4, 0)), 2);
    const third = write(cells(a.map((c) => ({ ...c, value: 200 })), quality(4, 0)), 3);
    const other = write(cells([{ key: key('g', 'h9'), start: T0 + WINDOW_MS }], quality(1, 0)), 4);
    await Promise.all([first, second, third, other]);
    // The same rows again (a replay after a restart), then amended.
    await write(cells(a, quality(4, 0)), 5);
    await write(cells(a.slice(0, 2).map((c) => ({ ...c, value: 300, count: 9 })), quality(2, 1)), 6);
  });
});
