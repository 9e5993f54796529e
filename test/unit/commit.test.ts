// The commit module: the metadata codec (a stable wire format) and how a lane's commit point
// follows what was applied and what the restore said.
import t from 'tap';
import { formatCommitMeta, parseCommitMeta } from '../../src/commit/meta.js';
import { Decoder } from '../../src/core/decode.js';
import { Lane, subBatch } from '../../src/engine/lane.js';
import { SeriesBudget } from '../../src/windows/store.js';
import { monascaRecord, pack, settings } from '../fixtures/gen.js';

t.test('commit metadata: round trip, the v1 wire format, and foreign metadata', async (t) => {
  const text = formatCommitMeta({ position: 42, watermarkMs: 1_600_000_000_000, appliedEnd: 57 });
  t.same(JSON.parse(text), { v: 1, wm: 1_600_000_000_000, hi: 57 }, 'the format older versions read');
  t.same(parseCommitMeta(text), { watermarkMs: 1_600_000_000_000, appliedEnd: 57 });
  t.same(parseCommitMeta(formatCommitMeta({ position: 0, watermarkMs: -Infinity, appliedEnd: 3 })), { watermarkMs: 0, appliedEnd: 3 }, 'no watermark yet is stored as 0');
  for (const foreign of [null, undefined, '', 'not json', '{"v":2,"wm":1,"hi":2}', '{"v":1,"wm":"1","hi":2}', '{"v":1,"wm":1}', '42']) {
    t.equal(parseCommitMeta(foreign), null, `not ours: ${String(foreign)}`);
  }
});

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);
const store = () => ({ windowMs: W, latenessMs: 0, budget: new SeriesBudget(1000), confirmRecords: 1, sketchAccuracy: 0 });

function decodeAt(tsMs: readonly number[]) {
  const msgs = tsMs.map((ts) => JSON.stringify(monascaRecord({ name: 'cpu', timestamp: ts, value: 1, dimensions: { h: 'a' } })));
  const { buffer, offsets } = pack(msgs);
  return { result: new Decoder(settings()).decodeBatch(buffer, offsets, T0 + 10 * W), buffer, offsets };
}

t.test('the commit point names the oldest position feeding an open window, and never less than the restore', async (t) => {
  const fresh = Lane.open(0, {}, store());
  t.equal(fresh.prepareCommit(), null, 'nothing positioned applied: no point');
  fresh.apply(decodeAt([T0 + 1000, T0 + 2000]).result, { start: 100, end: 102 }, undefined);
  t.same(fresh.prepareCommit(), { position: 100, watermarkMs: fresh.watermarkMs, appliedEnd: 102 }, 'open window fed from 100');
  fresh.apply(decodeAt([T0 + 3 * W]).result, { start: 102, end: 103 }, undefined);
  fresh.takeClosed();
  t.equal(fresh.prepareCommit()?.position, 102, 'the first window closed and emitted: only the open one replays');

  const restored = Lane.open(1, { watermarkMs: T0 + W, appliedEnd: 500, identity: { topic: 'in', partition: 3 } }, store());
  t.equal(restored.watermarkMs, T0 + W, 'the restored watermark keeps emitted windows closed');
  t.same(restored.identity, { topic: 'in', partition: 3 });
  restored.apply(decodeAt([T0 + 2 * W]).result, { start: 450, end: 460 }, undefined);
  t.equal(restored.prepareCommit()?.appliedEnd, 500, 'a replay below the restored appliedEnd does not lower it');
});

t.test('isReplay and subBatch', async (t) => {
  const s = Lane.open(0, { appliedEnd: 11 }, store());
  const { buffer, offsets } = decodeAt([T0, T0 + 1, T0 + 2]);
  const batch = { lane: 0, seq: 4, data: Buffer.from(buffer), offsets, positions: ['10', '11', '12'], startPosition: 10, endPosition: 13, oversized: new Map([[2, { bytes: 9 }]]) };
  t.same([0, 1, 2].map((m) => s.isReplay(batch, m)), [true, false, false], 'below appliedEnd 11 only');
  t.notOk(Lane.open(0, {}, store()).isReplay(batch, 0), 'no restore: nothing is a replay');
  const tail = subBatch(batch, 1, 3);
  t.same(tail.positions, ['11', '12']);
  t.equal(tail.startPosition, 11);
  t.equal(tail.endPosition, 13, 'the last part ends where the batch ended');
  t.equal(subBatch(batch, 0, 1).endPosition, 11, 'an inner part ends at the next message');
  t.same([...(tail.oversized ?? new Map())], [[1, { bytes: 9 }]], 'oversized indexes follow the cut');
  t.equal(tail.data.toString(), Buffer.from(buffer).subarray(offsets[1]!, offsets[3]!).toString());
});
