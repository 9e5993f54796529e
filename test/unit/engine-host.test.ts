// The engine as a lane host, through the calls a source makes (LaneHost): open at a restored point,
// submit, status, advanceIdle, closeDirty. status() is a copy, batches of a lane closed dirty are not
// applied, and opening a lane number again replaces the lane. A real in-thread pool and decoder; only
// the sink is ours (it records what it was given).
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { BatchBuilder } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { Engine } from '../../src/engine/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { DecodePool } from '../../src/pool/index.js';
import { WRITTEN_ALL, type Sink, type SinkCommit } from '../../src/sinks/types.js';
import type { LaneHost, SourceBatch } from '../../src/sources/types.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);
const ID = { topic: 'in', partition: 5 };

/** `n` messages of lane `lane` in window k, at positions from `pos`, with source timestamps `tsMs`. */
function batch(lane: number, k: number, n: number, pos: number, tsMs = T0): SourceBatch {
  const b = new BatchBuilder(n * 200);
  for (let i = 0; i < n; i++) b.pushString(JSON.stringify(monascaRecord({ name: 'cpu', timestamp: T0 + k * W + 1000, value: i, dimensions: { h: `host-${i}` } })));
  const { data, offsets } = b.take();
  return { lane, data, offsets, positions: Array.from({ length: n }, (_, i) => String(pos + i)), startPosition: pos, endPosition: pos + n, firstTimestampMs: tsMs, lastTimestampMs: tsMs + n };
}

function host(t: Test) {
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 0, maxInFlight: 2, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
  t.teardown(() => pool.close(1000));
  const writes: Array<{ rows: number; commit: SinkCommit | undefined }> = [];
  const sink: Sink = { describe: 'recording', write: async (b, commit) => { writes.push({ rows: b.rows.length, commit }); return WRITTEN_ALL; }, close: async () => {} };
  const engine = new Engine({
    pool, sink, deadLetter: { describe: 'none', write: async () => {}, close: async () => {} }, metrics: createMetrics(new Registry()),
    logger: pino({ level: 'silent' }), sourceName: 'test', windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1,
    maxSeries: 10_000, decoder: new Decoder(s), autoOpenLanes: false,
  });
  const lanes: LaneHost = engine;
  return { lanes, engine, writes };
}

t.test('open, submit, status: the lane\'s figures as a copy; the point after its rows are written', async (t) => {
  const { lanes, writes } = host(t);
  t.equal(lanes.status(1), null, 'a lane not open has no status');
  const before = Date.now();
  lanes.open(1, { identity: ID, watermarkMs: T0 - W, appliedEnd: 0 });
  const opened = lanes.status(1)!;
  t.same({ ...opened, lastActivityMs: 0 }, { commitPoint: null, appliedEnd: null, oldestPendingMs: null, lastAppliedTimestampMs: null, lastActivityMs: 0 }, 'opened, nothing applied');
  t.ok(opened.lastActivityMs >= before, 'activity counts from the open');
  await lanes.submit(batch(1, 0, 3, 10, T0 + 5));
  await lanes.submit(batch(1, 2, 2, 13, T0 + 9));
  await lanes.drain();
  const s = lanes.status(1)!;
  t.equal(s.appliedEnd, 15, 'applied up to the end of the second batch');
  t.equal(s.lastAppliedTimestampMs, T0 + 9 + 2);
  t.equal(s.oldestPendingMs, null, 'nothing pending once drained');
  t.same(s.commitPoint, { position: 13, watermarkMs: s.commitPoint!.watermarkMs, appliedEnd: 15 }, 'window 0 written: the point names the open window 2\'s input');
  t.same(writes.map((w) => [w.rows, w.commit?.point.position, w.commit?.partition]), [[3, 13, 5]], 'the sink got window 0 with that point and the lane\'s identity');
  t.not(lanes.status(1), s, 'each status() is a new object');
  t.equal(opened.appliedEnd, null, 'an earlier copy is not changed by what happened since');
});

t.test('advanceIdle closes windows by the wall clock; closeDirty drops the lane and what is in flight for it', async (t) => {
  const { lanes, writes, engine } = host(t);
  lanes.open(2, { identity: ID });
  await lanes.submit(batch(2, 0, 2, 100));
  await lanes.drain();
  t.equal(writes.length, 0, 'window 0 open');
  await lanes.advanceIdle(2, T0 + 5 * W);
  t.same(writes.map((w) => w.rows), [2], 'idle: the wall clock closed window 0');
  t.equal(lanes.status(2)!.commitPoint!.position, 102, 'nothing open: the point is the applied end');

  // Dispatched (submit resolved), not yet applied: its apply is queued behind the pool's answer.
  await lanes.submit(batch(2, 9, 4, 102));
  await lanes.closeDirty(2);
  await lanes.drain();
  t.equal(lanes.status(2), null, 'closed dirty: gone from the host');
  t.equal(engine.totals.ok, 2, 'the batch in flight when it closed was not applied');
  t.same(writes.map((w) => w.rows), [2], 'nor anything written for it');
  await lanes.submit(batch(2, 9, 1, 106));
  await lanes.drain();
  t.equal(lanes.status(2), null, 'a batch for a lane not open is ignored (not opened by it)');
  await lanes.advanceIdle(2, T0 + 99 * W);
  t.same(writes.map((w) => w.rows), [2], 'nor is an idle advance');
});

t.test('open on a lane number already open replaces the lane: the new one starts at its own point', async (t) => {
  const { lanes } = host(t);
  lanes.open(3, { identity: ID });
  await lanes.submit(batch(3, 0, 2, 0));
  await lanes.drain();
  t.equal(lanes.status(3)!.appliedEnd, 2);
  lanes.open(3, { identity: ID, watermarkMs: T0 + W, appliedEnd: 40 });
  t.equal(lanes.status(3)!.appliedEnd, null, 'the new lane applied nothing yet');
  await lanes.submit(batch(3, 0, 2, 0));
  await lanes.submit(batch(3, 3, 1, 41));
  await lanes.drain();
  t.same(lanes.status(3)!.commitPoint, { position: 41, watermarkMs: T0 + 3 * W + 1000, appliedEnd: 42 }, 'the replayed window 0 is late under the restored watermark; the point is the new lane\'s');
});
