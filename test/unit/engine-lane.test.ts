// The lane's lifecycle: open at its restored point, apply, advance idle, take closed, prepare and post
// commit, close clean or dirty, rebuild from its point. Verbs in a state that does not allow them are
// refused with an error that names the lane, the verb, the state and the states that allow it. A
// rebuild from the commit point is a fresh open at that point, and replaying the input from there
// emits what an undisturbed lane emits after that point.
import t from 'tap';
import type { CommitPoint } from '../../src/commit/types.js';
import type { DecodeResult } from '../../src/core/messages.js';
import { Decoder } from '../../src/core/decode.js';
import { Lane, LaneStateError } from '../../src/engine/lane.js';
import { SeriesBudget, type ClosedCells } from '../../src/windows/store.js';
import { monascaRecord, pack, settings } from '../fixtures/gen.js';

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);
const ID = { topic: 'in', partition: 2 };
const storeSettings = (budget = new SeriesBudget(1000)) => ({ windowMs: W, latenessMs: 0, budget, confirmRecords: 1, sketchAccuracy: 0 });
const decoder = new Decoder(settings());

/** Batch k of the input: 4 messages, two hosts, at positions 10k..10k+4, event time k * W / 2 on. */
interface Input {
  readonly result: DecodeResult;
  readonly positions: { start: number; end: number };
  readonly lastTimestampMs: number;
}
function input(k: number): Input {
  const ts = T0 + (k * W) / 2;
  const msgs = [0, 1, 2, 3].map((i) => JSON.stringify(monascaRecord({ name: 'cpu', timestamp: ts + i * 1000, value: k * 10 + i, dimensions: { h: `host-${i % 2}` } })));
  const { buffer, offsets } = pack(msgs);
  return { result: decoder.decodeBatch(buffer, offsets, T0 + 1000 * W), positions: { start: 10 * k, end: 10 * k + 4 }, lastTimestampMs: ts + 3000 };
}
const INPUT = Array.from({ length: 12 }, (_, k) => input(k));
const apply = (lane: Lane, k: number) => lane.apply(INPUT[k]!.result, INPUT[k]!.positions, INPUT[k]!.lastTimestampMs);

function rows(c: ClosedCells): Array<[string, number, unknown]> {
  const out: Array<[string, number, unknown]> = [];
  for (let i = 0; i < c.length; i++) out.push([c.keys[i]!, c.starts[i]!, c.moments(i)]);
  return out;
}

/** The engine's emission, without a sink: take what closed, prepare the point, and post it as written. */
function emit(lane: Lane): { rows: Array<[string, number, unknown]>; point: CommitPoint | null } {
  const closed = rows(lane.takeClosed());
  const point = lane.prepareCommit();
  if (point !== null) lane.postCommit(point);
  return { rows: closed, point };
}

t.test('a running lane: apply, advance idle, take closed, prepare and post commit', async (t) => {
  const lane = Lane.open(7, { identity: ID, watermarkMs: T0 - W, appliedEnd: 3 }, storeSettings());
  t.equal(lane.state, 'running', 'opened at its restored point, ready to apply');
  t.equal(lane.watermarkMs, T0 - W, 'the restored watermark');
  t.same(lane.identity, ID);
  t.equal(lane.prepareCommit(), null, 'nothing positioned applied yet: no point to commit');
  t.equal(lane.commitPoint, null);
  apply(lane, 0);
  apply(lane, 1);
  t.equal(lane.appliedEnd, 14, 'the applied end is after the last applied batch');
  t.equal(lane.lastAppliedTimestampMs, INPUT[1]!.lastTimestampMs);
  const prepared = lane.prepareCommit();
  t.same(prepared, { position: 0, watermarkMs: lane.watermarkMs, appliedEnd: 14 }, 'the open window is fed from position 0');
  t.equal(lane.commitPoint, null, 'prepared is not committed: the rows are not written yet');
  lane.postCommit(prepared!);
  t.same(lane.commitPoint, prepared, 'posted once written');
  t.equal(lane.takeClosed().length, 0, 'window 0 is still open at T0 + 33 s');
  lane.advanceIdle(T0 + 3 * W);
  t.equal(lane.watermarkMs, T0 + 3 * W, 'idle: the watermark follows the wall clock (lateness 0)');
  t.equal(lane.takeClosed().length, 2, 'window 0 of both hosts closed by the wall clock');
  t.equal(lane.prepareCommit()?.position, 14, 'nothing open: the point is the applied end');
});

t.test('verbs outside their states are refused with an error naming lane, verb, state and the states allowed', async (t) => {
  const budget = new SeriesBudget(1000);
  const lane = Lane.open(3, { identity: ID }, storeSettings(budget));
  apply(lane, 0);
  t.equal(budget.open, 2, 'two series open');
  t.throws(() => lane.rebuild(), new LaneStateError(3, 'rebuild', 'running', ['closed-dirty']));
  t.throws(() => lane.rebuild(), { name: 'LaneStateError', code: 'STREAMSTATS_LANE_STATE', message: 'lane 3: rebuild() is not allowed when the lane is running (only when closed-dirty)' });

  const cells = lane.closeClean();
  t.equal(lane.state, 'closed-clean');
  t.equal(cells.length, 2, 'closing clean hands over every open window');
  t.equal(budget.open, 0, 'and their series leave the budget');
  for (const [verb, call] of [
    ['apply', () => apply(lane, 1)],
    ['advanceIdle', () => lane.advanceIdle(T0)],
    ['takeClosed', () => lane.takeClosed()],
    ['prepareCommit', () => lane.prepareCommit()],
    ['closeClean', () => lane.closeClean()],
  ] as const) {
    t.throws(call, { message: `lane 3: ${verb}() is not allowed when the lane is closed-clean (only when running)` }, `${verb} after closeClean`);
  }
  lane.closeDirty();
  t.equal(lane.state, 'closed-dirty', 'a clean-closed lane may still be closed dirty (dropped)');
  t.ok(lane.dropped);
  t.throws(() => lane.closeDirty(), { message: 'lane 3: closeDirty() is not allowed when the lane is closed-dirty (only when running or closed-clean)' });
  t.throws(() => apply(lane, 1), { message: /apply\(\) is not allowed when the lane is closed-dirty/ });

  const dirty = Lane.open(4, {}, storeSettings(budget));
  apply(dirty, 0);
  dirty.closeDirty();
  t.equal(budget.open, 0, 'closing dirty discards the open windows and frees their series');
  dirty.postCommit({ position: 0, watermarkMs: 0, appliedEnd: 4 });
  t.same(dirty.commitPoint, { position: 0, watermarkMs: 0, appliedEnd: 4 }, 'a write that settles after the close still posts its point');
  const again = dirty.rebuild();
  t.equal(again.state, 'running', 'a dirty-closed lane rebuilds into a running one');
  t.equal(dirty.state, 'closed-dirty', 'the old one stays closed');
});

t.test('rebuild from the commit point equals a fresh open at that point, and replays to the undisturbed rows', async (t) => {
  // The undisturbed lane: every batch, emitting after each.
  const whole = Lane.open(1, { identity: ID }, storeSettings());
  const wholeRows: Array<Array<[string, number, unknown]>> = [];
  for (let k = 0; k < INPUT.length; k++) {
    apply(whole, k);
    wholeRows.push(emit(whole).rows);
  }
  wholeRows.push(rows(whole.closeClean()));

  // The same lane that fails: emits up to batch 5, applies 6 and 7 without their rows being written, dies.
  const failing = Lane.open(1, { identity: ID }, storeSettings());
  let point: CommitPoint | null = null;
  for (let k = 0; k <= 5; k++) {
    apply(failing, k);
    point = emit(failing).point;
  }
  apply(failing, 6);
  apply(failing, 7);
  failing.closeDirty();
  t.ok(point !== null && point.position > 0 && point.position < 60, `the point is inside the input (position ${point?.position})`);
  t.same(failing.restartPoint(), { identity: ID, ...point }, 'a rebuild starts from the commit point, not from what was applied after it');

  const rebuilt = failing.rebuild();
  const fresh = Lane.open(1, { identity: ID, ...point! }, storeSettings());
  t.equal(rebuilt.watermarkMs, fresh.watermarkMs);
  t.same(rebuilt.restored, fresh.restored);
  const replayFrom = INPUT.findIndex((b) => b.positions.start === point!.position);
  t.ok(replayFrom > 0, `the point is a batch start (batch ${replayFrom})`);
  const got: Array<{ rebuilt: unknown; fresh: unknown }> = [];
  const replayRows: Array<Array<[string, number, unknown]>> = [];
  for (let k = replayFrom; k < INPUT.length; k++) {
    const a = apply(rebuilt, k);
    const b = apply(fresh, k);
    const ea = emit(rebuilt);
    const eb = emit(fresh);
    got.push({ rebuilt: [a, ea], fresh: [b, eb] });
    replayRows.push(ea.rows);
    if (k < 6) t.ok(a.late.length > 0 || ea.rows.length === 0, `batch ${k} was emitted before: late or still open, never emitted again`);
  }
  for (const g of got) t.same(g.rebuilt, g.fresh, 'the rebuilt lane and the fresh one agree batch by batch (outcome, rows, point)');
  t.same(rows(rebuilt.closeClean()), rows(fresh.closeClean()), 'and at the end');
  t.ok(wholeRows.slice(6, INPUT.length).flat().length >= 4, 'windows closed after the point');
  t.same(replayRows.slice(6 - replayFrom).flat(), wholeRows.slice(6, INPUT.length).flat(), 'what the replay emits after the point is what the undisturbed lane emitted after it');
  t.ok(INPUT.slice(0, replayFrom).every((b) => b.positions.end <= point!.appliedEnd), 'input below the restored applied end is a replay');
});
