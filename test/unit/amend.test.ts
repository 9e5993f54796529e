// LATE_RECORDS=amend in the window store and the lane: late cells merge into kept closed windows,
// which come out again as a higher revision of the same row; the newest revision per identity equals
// a run where nothing was late. Beyond the horizon, or without kept state, a late cell is refused
// as before (and says why); kept state stays within its byte budget; a restart rebuilds kept
// windows from the replay without emitting them, and the commit position never passes them.
import t from 'tap';
import { CELL, type DecodeResult } from '../../src/core/messages.js';
import { CLOSED_BY, type ClosedCells } from '../../src/windows/cells.js';
import { SeriesBudget, SharedSeriesBudget, WindowStore } from '../../src/windows/store.js';
import { keptCellBytes, KEPT_WINDOW_BYTES } from '../../src/windows/kept.js';
import { Lane } from '../../src/engine/lane.js';
import { Rng } from '../fixtures/gen.js';
import { seriesKey } from '../../src/core/series.js';

const W = 60_000;
const BASE = Date.UTC(2024, 0, 1);
const HOUR = 3_600_000;

interface Point {
  readonly key: string;
  readonly ts: number;
  readonly v: number;
}

/** One cell per point (what a worker sends for a batch of one record per series and window). */
function result(points: readonly Point[]): DecodeResult {
  const keys = [...new Set(points.map((p) => p.key))];
  const cells = new Float64Array(points.length * CELL.STRIDE);
  points.forEach((p, j) => {
    const o = j * CELL.STRIDE;
    cells[o + CELL.SERIES] = keys.indexOf(p.key);
    cells[o + CELL.WINDOW_START] = Math.floor(p.ts / W) * W;
    cells[o + CELL.COUNT] = 1;
    cells[o + CELL.MEAN] = p.v;
    cells[o + CELL.M2] = 0;
    cells[o + CELL.MIN] = p.v;
    cells[o + CELL.MAX] = p.v;
    cells[o + CELL.SUM] = p.v;
    cells[o + CELL.TS_MIN] = p.ts;
    cells[o + CELL.TS_MAX] = p.ts;
  });
  return { kind: 'partials', records: points.length, ok: points.length, series: keys, cells, rejects: [], maxEventMs: Math.max(...points.map((p) => p.ts)), decodeSeconds: 0 };
}

interface Row {
  key: string;
  ws: number;
  count: number;
  mean: number;
  m2: number;
  min: number;
  max: number;
  revision: number;
  closedBy: string;
  late: number;
}

function rows(c: ClosedCells): Row[] {
  const out: Row[] = [];
  for (let i = 0; i < c.length; i++) {
    const m = c.moments(i);
    const q = c.quality;
    out.push({ key: c.keys[i]!, ws: c.starts[i]!, count: m.count, mean: m.mean, m2: m.m2, min: m.min, max: m.max, revision: q?.revision[i] ?? -1, closedBy: q === null ? 'none' : CLOSED_BY[q.closedBy[i]!]!, late: q?.lateRecords[i] ?? -1 });
  }
  return out;
}

/** A reader of appended rows: the highest revision per identity. */
function newest(all: readonly Row[]): Map<string, Row> {
  const m = new Map<string, Row>();
  for (const r of all) {
    const id = `${r.key}|${r.ws}`;
    const had = m.get(id);
    if (had === undefined || r.revision > had.revision) m.set(id, r);
  }
  return m;
}

function close(a: number, b: number): boolean {
  return a === b || Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
}

/** Two agents, a point every 30 s each for 3 hours; agent b's first two hours held back (an outage). */
function outage(rng: Rng): { onTime: Point[]; arrival: Point[] } {
  const onTime: Point[] = [];
  for (let s = 0; s < 3 * 3600; s += 30) {
    onTime.push({ key: 'cpu|a', ts: BASE + s * 1000, v: rng.int(0, 10_000) / 7 });
    onTime.push({ key: 'cpu|b', ts: BASE + s * 1000 + 1, v: 1e6 + rng.int(0, 10_000) / 3 });
  }
  const held = onTime.filter((p) => p.key === 'cpu|b' && p.ts < BASE + 2 * HOUR);
  const rest = onTime.filter((p) => !held.includes(p));
  // The outage ends at 2 h 10 min: b's backlog arrives then, in order, among the live points.
  const cut = rest.findIndex((p) => p.ts >= BASE + 2 * HOUR + 600_000);
  return { onTime, arrival: [...rest.slice(0, cut), ...held, ...rest.slice(cut)] };
}

function drive(store: WindowStore, points: readonly Point[], per: number, startPos = 0): { emitted: Row[]; late: number; beyond: string[]; amended: number } {
  const emitted: Row[] = [];
  let late = 0;
  let amended = 0;
  const beyond: string[] = [];
  for (let i = 0; i < points.length; i += per) {
    const part = points.slice(i, i + per);
    const out = store.apply(result(part), { start: startPos + i, end: startPos + i + part.length });
    for (const c of out.late) {
      late += c.count;
      beyond.push(c.beyond ?? 'none');
    }
    amended += out.amended;
    emitted.push(...rows(store.takeClosed()));
  }
  return { emitted, late, beyond, amended };
}

t.test('an outage replayed late: the newest revision per identity equals the on-time run', async (t) => {
  const { onTime, arrival } = outage(new Rng(7));
  const ref = new WindowStore({ windowMs: W, latenessMs: 5_000, budget: new SeriesBudget(1000), confirmRecords: 1 });
  const want = drive(ref, onTime, 16);
  want.emitted.push(...rows(ref.takeAll()));
  t.equal(want.late, 0, 'nothing late on time');

  const store = new WindowStore({ windowMs: W, latenessMs: 5_000, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: 3 * HOUR } });
  const got = drive(store, arrival, 16);
  got.emitted.push(...rows(store.takeAll('end_of_input')));
  t.equal(got.late, 0, 'no late record refused within the horizon');
  t.equal(got.amended, 240, "all of b's held-back points amended their windows");

  const w = newest(want.emitted);
  const g = newest(got.emitted);
  t.equal(g.size, w.size, 'one row per identity, as on time');
  let bad = 0;
  for (const [id, r] of w) {
    const h = g.get(id);
    if (h === undefined || h.count !== r.count || !close(h.mean, r.mean) || !close(h.m2, r.m2) || h.min !== r.min || h.max !== r.max) bad++;
  }
  t.equal(bad, 0, 'every newest row equals the on-time row to 1e-9 relative');
  const amendedRows = got.emitted.filter((r) => r.closedBy === 'amended');
  t.ok(amendedRows.length >= 120, 'each of b\'s held-back windows came out again');
  t.ok(amendedRows.every((r) => r.revision > 0 && r.late > 0 && r.key === 'cpu|b'), 'amended rows: revision > 0, late records counted, only b');
  t.ok(got.emitted.filter((r) => r.closedBy !== 'amended').every((r) => r.revision === 0 && r.late === 0), 'first emissions: revision 0, nothing late');
  t.ok(got.emitted.some((r) => r.closedBy === 'watermark') && got.emitted.some((r) => r.closedBy === 'end_of_input'), 'closed_by says watermark, or end_of_input for the last');
  // Positions: a revision is the position after the batch that amended the row, above any before.
  const revs = new Map<string, number>();
  let increasing = true;
  for (const r of got.emitted) {
    const id = `${r.key}|${r.ws}`;
    if (revs.has(id) && r.revision <= revs.get(id)!) increasing = false;
    revs.set(id, r.revision);
  }
  t.ok(increasing, 'revisions of a row strictly increase');
});

t.test('beyond the horizon a late cell is refused as late, and says so; before it, kept state is dropped', async (t) => {
  const store = new WindowStore({ windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: 10 * W } });
  drive(store, [{ key: 'k', ts: BASE, v: 1 }, { key: 'k', ts: BASE + 5 * W, v: 1 }], 1);
  t.equal(store.keptWindows, 1, 'the closed window is kept');
  const within = store.apply(result([{ key: 'k', ts: BASE + 10, v: 2 }]), { start: 10, end: 11 });
  t.equal(within.amended, 1, 'within the horizon: amended');
  drive(store, [{ key: 'k', ts: BASE + 12 * W, v: 1 }], 1, 20);
  t.equal(store.keptWindows, 1, 'the first window passed its horizon and was dropped (the next closed is kept)');
  const after = store.apply(result([{ key: 'k', ts: BASE + 20, v: 3 }]), { start: 30, end: 31 });
  t.same(after.late.map((c) => [c.windowStart, c.beyond]), [[BASE, 'horizon']], 'beyond the horizon: late, beyond horizon');
  t.equal(after.amended, 0);
});

t.test('kept state stays within MAX_STATE_MB: the oldest kept windows are evicted, open series come first', async (t) => {
  const keys = Array.from({ length: 50 }, (_, i) => `series-${String(i).padStart(4, '0')}`);
  const perWindow = KEPT_WINDOW_BYTES + keys.reduce((a, k) => a + keptCellBytes(k), 0);
  const open = keys.reduce((a, k) => a + 512 + 6 * k.length, 0);
  // Room for the open series and about three kept windows.
  const budget = new SeriesBudget(1_000_000, open + 3.5 * perWindow);
  const store = new WindowStore({ windowMs: W, latenessMs: 0, budget, confirmRecords: 1, amend: { horizonMs: 1000 * W } });
  let peak = 0;
  for (let w = 0; w < 40; w++) {
    store.apply(result(keys.map((key) => ({ key, ts: BASE + w * W, v: w }))), { start: w * 100, end: w * 100 + 50 });
    store.takeClosed();
    peak = Math.max(peak, budget.bytes);
  }
  t.ok(peak <= budget.maxBytes, `state bytes ${peak} within the bound ${budget.maxBytes}`);
  t.ok(store.keptWindows >= 2 && store.keptWindows <= 3, `only the newest windows are kept (${store.keptWindows})`);
  t.ok(store.evictedWindows > 30, 'older ones were evicted');
  // A flood of late records into evicted windows: refused (state), nothing grows.
  const before = budget.bytes;
  const flood: Point[] = [];
  for (let w = 0; w < 30; w++) for (const key of keys) flood.push({ key, ts: BASE + w * W + 1, v: 1 });
  const out = store.apply(result(flood), { start: 5000, end: 5000 + flood.length });
  t.equal(out.amended, 0, 'nothing amended in evicted windows');
  t.ok(out.late.every((c) => c.beyond === 'state'), 'refused: its state is not kept');
  t.ok(budget.bytes <= before, 'the flood adds no state');
  // New open series need room: the kept windows give it back.
  const fresh = Array.from({ length: 3 }, (_, i) => `fresh-${i}-${'x'.repeat(200)}`);
  const r = store.apply(result(fresh.map((key) => ({ key, ts: BASE + 39 * W + 2, v: 1 }))), { start: 9000, end: 9003 });
  t.equal(r.overLimit.length, 0, 'open series admitted by evicting kept windows');
  t.ok(budget.bytes <= budget.maxBytes, 'still within the bound');
  // The commit position never passes a kept window's first record.
  const kept = store.keptFromMs!;
  t.ok(kept > BASE, 'the kept set starts after the evicted windows');
});

t.test('a restart: the replay rebuilds kept windows silently, the next late record amends with a higher revision', async (t) => {
  const budget = new SeriesBudget(1000);
  const settings = { windowMs: W, latenessMs: 0, budget, confirmRecords: 1, amend: { horizonMs: 100 * W } };
  const lane = Lane.open(1, {}, settings);
  const pts: Point[] = [];
  for (let i = 0; i < 10; i++) pts.push({ key: 'k', ts: BASE + i * W + 1000, v: i });
  const apply = (l: Lane, ps: readonly Point[], at: number): ClosedCells => {
    l.apply(result(ps), { start: at, end: at + ps.length }, undefined);
    return l.takeClosed();
  };
  for (let i = 0; i < pts.length; i++) apply(lane, [pts[i]!], i);
  // A late point for window 2 at position 10: amended, revision 11.
  const amended = rows(apply(lane, [{ key: 'k', ts: BASE + 2 * W + 5, v: 100 }], 10));
  t.same(amended.map((r) => [r.ws, r.closedBy, r.revision, r.count, r.late]), [[BASE + 2 * W, 'amended', 11, 2, 1]], 'amended: revision = position after its batch');
  const point = lane.prepareCommit()!;
  t.equal(point.position, 0, 'the commit position covers the first record of the oldest kept window');
  t.ok(Number.isFinite(point.keptFromMs!), 'the point names where the kept windows start');
  lane.postCommit(point);
  lane.closeDirty();
  t.equal(budget.bytes, 0, 'a lane closed dirty gives its kept state back');

  const again = lane.rebuild();
  const replayed: Row[] = [];
  for (let i = 0; i < 10; i++) replayed.push(...rows(apply(again, [pts[i]!], i)));
  replayed.push(...rows(apply(again, [{ key: 'k', ts: BASE + 2 * W + 5, v: 100 }], 10)));
  t.same(replayed, [], 'the replay emits nothing (every window was emitted, the amendment too)');
  t.ok(again.keptWindows >= 9, 'the replay rebuilt the kept windows');
  const next = rows(apply(again, [{ key: 'k', ts: BASE + 2 * W + 7, v: 50 }], 11));
  t.same(next.map((r) => [r.ws, r.revision, r.count, r.late]), [[BASE + 2 * W, 12, 3, 1]], 'a new late record: the whole window (3 points), a higher revision; late_records counts since the restart');
  t.ok(close(next[0]!.mean, (2 + 100 + 50) / 3), 'the full merged statistics');
});

t.test('a point stored without keptFromMs: closed windows are not rebuilt from a partial replay', async (t) => {
  const settings = { windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: 100 * W } };
  const lane = Lane.open(1, { position: 5, watermarkMs: BASE + 5 * W, appliedEnd: 6 }, settings);
  lane.apply(result([{ key: 'k', ts: BASE + 3 * W, v: 1 }]), { start: 5, end: 6 }, undefined);
  t.equal(lane.keptWindows, 0, 'a replayed record of a window closed before the restart rebuilds nothing');
  const out = lane.apply(result([{ key: 'k', ts: BASE + 3 * W, v: 1 }]), { start: 6, end: 7 }, undefined);
  t.same(out.late.map((c) => c.beyond), ['state'], 'a new late record for it is refused: its state is not kept');
});

t.test('quality columns: the same bytes from every row path, and none without amendment', async (t) => {
  const { RowFormatter } = await import('../../src/windows/row.js');
  const { ClosedCells: CC, firstEmission } = await import('../../src/windows/cells.js');
  const store = new WindowStore({ windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: HOUR } });
  store.apply(result([{ key: seriesKey('cpu', null, [['host', 'a']], null), ts: BASE + 1, v: 1.5 }, { key: seriesKey('cpu', null, [['host', 'b']], null), ts: BASE + 2, v: 2 }]), { start: 0, end: 2 });
  store.apply(result([{ key: seriesKey('cpu', null, [['host', 'a']], null), ts: BASE + W + 1, v: 1 }]), { start: 2, end: 3 });
  const first = store.takeClosed('idle');
  store.apply(result([{ key: seriesKey('cpu', null, [['host', 'a']], null), ts: BASE + 7, v: 0.25 }]), { start: 3, end: 4 });
  const amended = store.takeClosed();
  const fmt = new RowFormatter(W, 100);
  for (const [cells, where] of [[first, undefined], [amended, { topic: 't', partition: 3 }]] as const) {
    const b = fmt.format(cells, where);
    const viaObjects = b.rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
    t.equal(b.ndjson(), viaObjects, 'ndjson() = JSON.stringify of the row objects');
    t.equal(b.ndjsonBytes!().toString(), viaObjects, 'ndjsonBytes() = the same bytes');
  }
  const r0 = fmt.format(first).rows[0]!;
  t.same([r0.revision, r0.closed_by, r0.late_records], [0, 'idle', 0], 'first emission by an idle lane');
  const r1 = fmt.format(amended).rows[0]!;
  t.same([r1.revision, r1.closed_by, r1.late_records, r1.count], [4, 'amended', 1, 2], 'the amendment: revision 4 (position after its batch), one late record, the whole window');
  const plain = new CC([seriesKey('m', null, [], null)], Float64Array.from([BASE]), new Float64Array(8), null);
  t.notMatch(fmt.format(plain).ndjson(), /revision/, 'no quality columns without amendment');
  t.match(fmt.format(plain.withQuality(firstEmission(1, 'shutdown'))).ndjson(), /"revision":0,"closed_by":"shutdown","late_records":0\}/);
});

t.test('commit metadata carries keptFromMs only when there is one', async (t) => {
  const { formatCommitMeta, parseCommitMeta } = await import('../../src/commit/meta.js');
  const plain = { position: 5, watermarkMs: 1000, appliedEnd: 9 };
  t.equal(formatCommitMeta(plain), '{"v":1,"wm":1000,"hi":9}', 'without amendment: the metadata as before');
  t.same(parseCommitMeta(formatCommitMeta(plain)), { watermarkMs: 1000, appliedEnd: 9 });
  const kept = { ...plain, keptFromMs: 600 };
  t.equal(formatCommitMeta(kept), '{"v":1,"wm":1000,"hi":9,"kf":600}');
  t.same(parseCommitMeta(formatCommitMeta(kept)), { watermarkMs: 1000, appliedEnd: 9, keptFromMs: 600 }, 'read back');
});

t.test('a flood of late records across 200,000 closed rows: state never passes its byte bound', async (t) => {
  const keys = Array.from({ length: 2000 }, (_, i) => `host-${String(i).padStart(5, '0')}`);
  const perWindow = KEPT_WINDOW_BYTES + keys.reduce((a, k) => a + keptCellBytes(k), 0);
  const open = keys.reduce((a, k) => a + 512 + 6 * k.length, 0);
  const budget = new SeriesBudget(1_000_000, 2 * open + 20 * perWindow);
  const store = new WindowStore({ windowMs: W, latenessMs: 0, budget, confirmRecords: 1, amend: { horizonMs: 10_000 * W } });
  let peak = 0;
  let pos = 0;
  let amended = 0;
  let refused = 0;
  const rng = new Rng(5);
  for (let w = 0; w < 100; w++) {
    const pts = keys.map((key) => ({ key, ts: BASE + w * W + 5, v: rng.int(0, 100) }));
    // Each batch also brings late records for 500 random earlier windows' series.
    if (w > 0) for (let j = 0; j < 500; j++) pts.push({ key: keys[rng.int(0, keys.length - 1)]!, ts: BASE + rng.int(0, w - 1) * W + 9, v: 1 });
    const out = store.apply(result(pts), { start: pos, end: pos + pts.length });
    pos += pts.length;
    amended += out.amended;
    for (const c of out.late) refused += c.count;
    store.takeClosed();
    peak = Math.max(peak, budget.bytes);
  }
  t.comment(`closed rows: ${100 * keys.length}; late records amended ${amended}, refused (state not kept) ${refused}; peak ${peak} of ${budget.maxBytes} bytes; kept ${store.keptWindows} windows, evicted ${store.evictedWindows}`);
  t.ok(peak <= budget.maxBytes, 'the state bytes never passed MAX_STATE_MB');
  t.ok(amended > 0 && refused > 0, 'recent windows amended, evicted ones refused');
  t.ok(store.keptWindows < 30 && store.evictedWindows >= 70, 'only what fits is kept: the oldest were evicted');
});

t.test('rows formatted in a worker carry the quality columns, byte for byte as on the main thread', async (t) => {
  const { RowFormatter } = await import('../../src/windows/row.js');
  const { RowWorkshop, rowsTask } = await import('../../src/windows/row-task.js');
  const store = new WindowStore({ windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: HOUR } });
  const keys = Array.from({ length: 40 }, (_, i) => seriesKey('cpu', null, [['host', `h${i}`]], null));
  store.apply(result(keys.map((key) => ({ key, ts: BASE + 1, v: 1.25 }))), { start: 0, end: 40 });
  store.apply(result([{ key: keys[0]!, ts: BASE + W + 1, v: 1 }]), { start: 40, end: 41 });
  store.takeClosed();
  store.apply(result(keys.map((key) => ({ key, ts: BASE + 3, v: 7 }))), { start: 41, end: 81 });
  const cells = store.takeClosed();
  t.equal(cells.length, 40, 'forty amended rows');
  const where = { topic: 'in', partition: 2 };
  const here = new RowFormatter(W, 1000).format(cells, where).ndjsonBytes!();
  const wire = new RowWorkshop().format(rowsTask(cells, { windowMs: W, maxEntries: 1000 }, where, true).task);
  t.equal(Buffer.from(wire.ndjson).toString(), here.toString(), 'the same NDJSON');
  t.match(here.toString(), /"revision":81,"closed_by":"amended","late_records":1\}/);
});

t.test('after a restart a batch is split where new messages start, and a replayed part is known by its messages (offsets with gaps)', async (t) => {
  const { subBatch } = await import('../../src/engine/lane.js');
  const settings = { windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, amend: { horizonMs: HOUR } };
  const lane = Lane.open(1, { position: 0, watermarkMs: BASE, appliedEnd: 10 }, settings);
  const batch = { lane: 1, seq: 0, data: Buffer.from('abc'), offsets: Uint32Array.from([0, 1, 2, 3]), positions: ['5', '7', '12'], startPosition: 5, endPosition: 13 };
  t.equal(lane.replaySplit(batch), 2, 'split before the first message at or after the restored applied end');
  const first = subBatch(batch, 0, 2);
  t.equal(first.endPosition, 12, 'the replayed part ends where the new one starts (a gap: 12, past the applied end 10)');
  t.ok(lane.allReplayed(first), 'yet all of its messages are replays');
  t.notOk(lane.allReplayed(subBatch(batch, 2, 3)), 'the new part is not');
  const dl = Lane.open(2, { position: 0, watermarkMs: BASE, appliedEnd: 10 }, { ...settings, amend: undefined });
  t.equal(dl.replaySplit(batch), -1, 'LATE_RECORDS=dead-letter: batches are never split');
});

t.test('LANE_STATE=worker: kept windows of two owners in one shared budget, each owner\'s evicted for its own open series only', async (t) => {
  const keys = Array.from({ length: 50 }, (_, i) => `series-${String(i).padStart(4, '0')}`);
  const perWindow = KEPT_WINDOW_BYTES + keys.reduce((a, k) => a + keptCellBytes(k), 0);
  const open = keys.reduce((a, k) => a + 512 + 6 * k.length, 0);
  // Each owner maps the same counters: room for both owners' open series and about six kept windows.
  const a = new SharedSeriesBudget(1_000_000, 2 * open + 6.5 * perWindow);
  const b = new SharedSeriesBudget(1_000_000, a.maxBytes, a.buffer);
  const storeA = new WindowStore({ windowMs: W, latenessMs: 0, budget: a, confirmRecords: 1, amend: { horizonMs: 1000 * W } });
  const storeB = new WindowStore({ windowMs: W, latenessMs: 0, budget: b, confirmRecords: 1, amend: { horizonMs: 1000 * W } });
  let peak = 0;
  for (let w = 0; w < 20; w++) {
    for (const [store, p] of [[storeA, 'a'], [storeB, 'b']] as const) {
      store.apply(result(keys.map((key) => ({ key: `${p}${key}`, ts: BASE + w * W, v: w }))), { start: w * 100, end: w * 100 + 50 });
      store.takeClosed();
      peak = Math.max(peak, a.bytes);
    }
  }
  t.ok(peak <= a.maxBytes, `shared state bytes ${peak} within the bound ${a.maxBytes}`);
  // Each owner's keys carry its letter: 6 bytes more a series.
  t.equal(a.bytes, storeA.keptBytes + storeB.keptBytes + 2 * (open + 6 * keys.length), 'the shared count is both owners\' open series and kept windows');
  t.ok(storeA.evictedWindows > 10 && storeB.evictedWindows > 10, `each owner evicted its oldest (${storeA.evictedWindows}, ${storeB.evictedWindows})`);
  // A late record amends its kept window in the owner, and the amendment's bytes are in the shared count.
  const ws = storeA.keptFromMs!;
  const amended = storeA.apply(result([{ key: `a${keys[0]}`, ts: ws + 7, v: 1 }]), { start: 5000, end: 5001 });
  t.equal(amended.amended, 1, 'amended in its owner');
  t.equal(storeA.takeClosed().quality?.closedBy[0], CLOSED_BY.indexOf('amended'), 'and emitted as a revision');
  // New series in owner B: it can evict B's kept windows, never A's (A's are A's to give back).
  const keptA = storeA.keptWindows;
  const fresh = Array.from({ length: 3 }, (_, i) => `fresh-${i}-${'x'.repeat(200)}`);
  const r = storeB.apply(result(fresh.map((key) => ({ key, ts: BASE + 19 * W + 2, v: 1 }))), { start: 9000, end: 9003 });
  t.equal(r.overLimit.length, 0, 'owner B: open series admitted by evicting its own kept windows');
  t.equal(storeA.keptWindows, keptA, 'owner A kept its windows');
  t.ok(a.bytes <= a.maxBytes, 'still within the bound');
  storeA.takeAll();
  storeA.dispose();
  storeB.takeAll();
  storeB.dispose();
  t.equal(a.bytes, 0, 'both owners\' lanes closed: every byte given back');
  t.equal(a.open, 0);
});
