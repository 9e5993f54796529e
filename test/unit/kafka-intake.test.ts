// The Kafka intake without a broker: its contract with the consumer is pause/resume (FlowControl)
// and with the engine submit(); both are played here by small recorders.
import t from 'tap';
import { sleep } from '../../src/async/index.js';
import { Assignment, type Held } from '../../src/sources/kafka/assignment.js';
import { holdFrame, sharedFrame } from '../../src/kafka/frame-pool.js';
import { Intake } from '../../src/sources/kafka/intake.js';
import type { SourceBatch } from '../../src/sources/types.js';

function batchOf(lane: number, bytes: number, at = 0): SourceBatch {
  return {
    lane, data: Buffer.alloc(bytes), offsets: new Uint32Array([0, bytes]), positions: [String(at)], keys: [null],
    startPosition: at, endPosition: at + 1, firstTimestampMs: 0, lastTimestampMs: 0,
  };
}

/** A consumer's pause/resume, recorded as "pause t:0" / "resume t:0". */
function flow() {
  const calls: string[] = [];
  const rec = (what: string) => (tps: Array<{ topic: string; partitions: number[] }>) => {
    for (const { topic, partitions } of tps) for (const p of partitions) calls.push(`${what} ${topic}:${p}`);
  };
  return { calls, pause: rec('pause'), resume: rec('resume') };
}

/** An engine whose submit() resolves only when the test releases it. */
function gatedEngine() {
  const submitted: SourceBatch[] = [];
  const releases: Array<(err?: Error) => void> = [];
  return {
    submitted,
    submit: (b: SourceBatch) => new Promise<void>((resolve, reject) => {
      submitted.push(b);
      releases.push((err) => (err === undefined ? resolve() : reject(err)));
    }),
    release: async (err?: Error) => {
      releases.shift()!(err);
      await sleep(1);
    },
  };
}

function setup(maxBytes: number) {
  const table = new Assignment();
  const [a, b] = table.open([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]) as [Held, Held];
  const f = flow();
  const engine = gatedEngine();
  const fatal: Error[] = [];
  let pausedGauge = -1;
  const intake = new Intake({
    maxBytes,
    submit: engine.submit,
    isCurrent: (h) => table.isCurrent(h),
    onFatal: (err) => fatal.push(err),
    paused: { set: (v) => (pausedGauge = v) },
  });
  intake.attach(f);
  const pump = intake.run();
  return { table, a, b, f, engine, fatal, intake, pump, paused: () => pausedGauge };
}

t.test('pauses a partition that fetches at the byte budget and resumes it once the intake is at half', async (t) => {
  const s = setup(100);
  s.intake.push(s.a, [batchOf(s.a.id, 40)]);
  s.intake.push(s.a, [batchOf(s.a.id, 40)]);
  t.same(s.f.calls, [], 'below the budget: nothing paused');
  s.intake.push(s.a, [batchOf(s.a.id, 40)]);
  t.same(s.f.calls, ['pause t:0'], '120 bytes >= 100: the fetching partition is paused');
  t.equal(s.paused(), 1);
  s.intake.push(s.a, [batchOf(s.a.id, 10)]);
  t.same(s.f.calls, ['pause t:0'], 'an already paused partition is not paused again');
  await sleep(1);
  t.equal(s.engine.submitted.length, 1, 'the pump submits one batch at a time');
  t.equal(s.intake.bytes, 90, 'bytes count what still waits, not what is submitting');
  await s.engine.release();
  t.equal(s.intake.bytes, 50);
  await s.engine.release();
  t.same(s.f.calls, ['pause t:0', 'resume t:0'], 'resumed once at or below half the budget');
  t.equal(s.paused(), 0);
  t.equal(s.intake.bytes, 10);
  s.intake.stop();
  await s.engine.release();
  await s.pump;
});

t.test('has() tells whether a partition has batches waiting; idle() waits for the submit in flight', async (t) => {
  const s = setup(1000);
  s.intake.push(s.a, [batchOf(s.a.id, 10), batchOf(s.a.id, 10)]);
  t.ok(s.intake.has(s.a));
  t.notOk(s.intake.has(s.b));
  await sleep(1);
  let idle = false;
  const done = s.intake.idle().then(() => (idle = true));
  await s.engine.release();
  t.notOk(idle, 'the second batch is submitting');
  t.notOk(s.intake.has(s.a), 'nothing of it waits any more');
  await s.engine.release();
  await done;
  t.ok(idle, 'idle once the queue is empty and the last submit resolved');
  t.same(s.engine.submitted.map((b) => b.lane), [s.a.id, s.a.id]);
  s.intake.stop();
  await s.pump;
});

t.test('batches of a partition dropped meanwhile are skipped; reset() drops the queue and resumes what was paused', async (t) => {
  const s = setup(30);
  s.intake.push(s.a, [batchOf(s.a.id, 20)]);
  s.intake.push(s.b, [batchOf(s.b.id, 20)]);
  t.same(s.f.calls, ['pause t:1']);
  await sleep(1);
  s.table.clear();
  const [a2] = s.table.open([{ topic: 't', partition: 0 }]) as [Held];
  s.intake.reset();
  t.same(s.f.calls, ['pause t:1', 'resume t:1'], 'kafkajs keeps pause state over a rebalance: reset undoes ours');
  t.equal(s.intake.bytes, 0);
  t.equal(s.paused(), 0);
  s.intake.push(s.b, [batchOf(s.b.id, 5)]);
  s.intake.push(a2, [batchOf(a2.id, 5)]);
  await s.engine.release();
  t.same(s.engine.submitted.map((b) => b.lane), [s.a.id, a2.id], 'the dropped partition\'s batch was never submitted');
  s.intake.stop();
  await s.engine.release();
  await s.pump;
});

t.test('a submit that rejects is fatal: reported once, the queue dropped, nothing more taken', async (t) => {
  const s = setup(1000);
  s.intake.push(s.a, [batchOf(s.a.id, 10), batchOf(s.a.id, 10)]);
  await sleep(1);
  await s.engine.release(new Error('pool closed'));
  t.equal(s.fatal.length, 1);
  t.match(s.fatal[0]!.message, 'pool closed');
  s.intake.push(s.a, [batchOf(s.a.id, 10)]);
  await s.pump;
  t.equal(s.engine.submitted.length, 1, 'the second batch and later pushes were not submitted');
  t.equal(s.intake.bytes, 0);
});

t.test('detached from a consumer, the intake never pauses; a bad budget is refused', async (t) => {
  const s = setup(10);
  s.intake.attach(null);
  s.intake.push(s.a, [batchOf(s.a.id, 50)]);
  t.same(s.f.calls, []);
  t.equal(s.intake.pausedCount, 0);
  s.intake.stop();
  await s.pump;
  t.throws(() => new Intake({ maxBytes: 0, submit: async () => {}, isCurrent: () => true, onFatal: () => {}, paused: { set: () => {} } }), /maxBytes must be >= 1, got 0/);
});

t.test('views of a fetch response count the response once, whole, while any of them waits', async (t) => {
  const s = setup(10_000);
  // Two partitions' batches from one response of the frame pool: small views of a 4,096-byte response.
  const frame = sharedFrame(4000);
  const hold = holdFrame(frame)!;
  t.teardown(hold);
  const view = (h: Held, from: number): SourceBatch => ({ ...batchOf(h.id, 0), data: frame.subarray(from, from + 100), offsets: new Uint32Array([0, 100]) });
  s.intake.push(s.a, [view(s.a, 0), view(s.a, 100)]);
  s.intake.push(s.b, [view(s.b, 2000)]);
  t.equal(s.intake.bytes, frame.buffer.byteLength, 'three views of one response: the response, once');
  s.intake.push(s.b, [batchOf(s.b.id, 50)]);
  t.equal(s.intake.bytes, frame.buffer.byteLength + 50, 'a batch of its own bytes counts them');
  await sleep(1);
  // The pump took the first view (submitting: no longer waiting), then the second.
  await s.engine.release();
  t.equal(s.intake.bytes, frame.buffer.byteLength + 50, 'counted while a view of it still waits');
  await s.engine.release();
  t.equal(s.intake.bytes, 50, 'the last view taken: the response no more');
  s.intake.stop();
  await s.engine.release();
  await s.pump;
});
