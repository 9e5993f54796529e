// Commits of the lanes' commit points without a broker: the piece calls commitOffsets on the
// consumer and status() on the lane host, nothing else.
import t from 'tap';
import pino from 'pino';
import { Registry } from 'prom-client';
import { sleep } from '../../src/async/index.js';
import { parseCommitMeta } from '../../src/commit/meta.js';
import type { CommitPoint, PositionStore } from '../../src/commit/types.js';
import type { LaneStatus } from '../../src/sources/types.js';
import { createMetrics } from '../../src/metrics/index.js';
import { Assignment } from '../../src/sources/kafka/assignment.js';
import { Committer } from '../../src/sources/kafka/commits.js';

const laneStatus = (commitPoint: CommitPoint | null): LaneStatus => ({ commitPoint, appliedEnd: null, oldestPendingMs: null, lastAppliedTimestampMs: null, lastActivityMs: 0 });

type Offsets = Array<{ topic: string; partition: number; offset: string; metadata: string }>;

function setup(o: { from?: 'lanes' | 'none' | PositionStore; failFirst?: number; slowMs?: number } = {}) {
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const table = new Assignment();
  const held = table.open([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 'u', partition: 0 }]);
  const points = new Map<number, CommitPoint | null>();
  const sent: Offsets[] = [];
  let inFlight = 0;
  let overlapped = false;
  let calls = 0;
  const consumer = {
    commitOffsets: async (offsets: Offsets) => {
      calls++;
      inFlight++;
      if (inFlight > 1) overlapped = true;
      await sleep(o.slowMs ?? 0);
      inFlight--;
      if (calls <= (o.failFirst ?? 0)) throw new Error('coordinator moved');
      sent.push(offsets.map((x) => ({ ...x })));
    },
  };
  let connected: typeof consumer | null = consumer;
  const c = new Committer({
    lanes: { status: (id) => laneStatus(points.get(id) ?? null) },
    metrics, logger: pino({ level: 'silent' }),
    consumer: () => connected,
    held: () => table.values(),
    from: o.from ?? 'lanes',
  });
  return { c, held, points, sent, metrics, overlapped: () => overlapped, disconnect: () => (connected = null) };
}

t.test('commits exactly the engine\'s safe point of each held partition, with the boundary as metadata', async (t) => {
  const s = setup();
  s.points.set(s.held[0]!.id, { position: 40, watermarkMs: 60_000, appliedEnd: 55 });
  s.points.set(s.held[2]!.id, { position: 7, watermarkMs: 0, appliedEnd: 9 });
  await s.c.commit('interval');
  t.equal(s.sent.length, 1);
  t.same(s.sent[0]!.map((x) => [x.topic, x.partition, x.offset]), [['t', 0, '40'], ['u', 0, '7']], 'no point yet: partition t:1 is not committed');
  t.same(parseCommitMeta(s.sent[0]![0]!.metadata), { watermarkMs: 60_000, appliedEnd: 55 });
  t.equal(await s.metrics.commits.get().then((m) => m.values.find((v) => v.labels.result === 'ok')?.value), 1);
});

t.test('never names a position past the safe point as the engine moves it, and sends an unchanged point once', async (t) => {
  const s = setup();
  const id = s.held[0]!.id;
  let point = 0;
  let changes = 0;
  for (let round = 0; round < 20; round++) {
    // The engine's point moves on (or stays) between commits; each commit must name what it says now.
    if (round % 3 !== 2) {
      point += 1 + (round * 7) % 5;
      changes++;
    }
    s.points.set(id, { position: point, watermarkMs: point * 1000, appliedEnd: point + 3 });
    await s.c.commit('interval');
    const last = s.sent.at(-1)!.find((x) => x.partition === 0)!;
    t.ok(Number(last.offset) <= point, `round ${round}: committed ${last.offset} <= safe point ${point}`);
  }
  const offsets = s.sent.map((b) => Number(b[0]!.offset));
  t.same(offsets, [...new Set(offsets)], 'an unchanged point is not committed again');
  t.equal(offsets.length, changes, 'one commit per change of the point');
});

t.test('a failed commit is counted and the same point is sent again next time; commits never overlap', async (t) => {
  const s = setup({ failFirst: 1, slowMs: 5 });
  s.points.set(s.held[1]!.id, { position: 10, watermarkMs: 0, appliedEnd: 10 });
  await Promise.all([s.c.commit('interval'), s.c.commit('rebalance'), s.c.commit('shutdown')]);
  t.notOk(s.overlapped(), 'one commit at a time');
  t.same(s.sent.map((b) => b[0]!.offset), ['10'], 'the second call retried the point the first failed on; the third had nothing new');
  const v = (await s.metrics.commits.get()).values;
  t.same(v.map((x) => [x.labels.result, x.value]).sort(), [['error', 1], ['ok', 1]]);
});

t.test('nothing is committed between sessions, nor for a sink that stores its positions itself', async (t) => {
  const a = setup({ from: 'none' });
  a.points.set(a.held[0]!.id, { position: 10, watermarkMs: 0, appliedEnd: 10 });
  await a.c.commit('interval');
  t.same(a.sent, []);
  const b = setup();
  b.points.set(b.held[0]!.id, { position: 10, watermarkMs: 0, appliedEnd: 10 });
  b.disconnect();
  await b.c.commit('interval');
  t.same(b.sent, []);
});

t.test('with a position store that is not the group, the group trails what the store holds', async (t) => {
  const stored = new Map<string, Map<number, CommitPoint>>([['t', new Map([[0, { position: 30, watermarkMs: 60_000, appliedEnd: 35 }]])]]);
  const asked: Array<[string, number[]]> = [];
  let failReads = 0;
  const store: PositionStore = {
    readPositions: async (topic, lanes) => {
      asked.push([topic, [...lanes]]);
      if (failReads-- > 0) throw new Error('connection terminated');
      return new Map(stored.get(topic) ?? []);
    },
  };
  const s = setup({ from: store });
  // The engine is further on than the store: rows of its later windows are still in flight.
  s.points.set(s.held[0]!.id, { position: 50, watermarkMs: 120_000, appliedEnd: 60 });
  await s.c.commit('interval');
  t.same(asked, [['t', [0, 1]], ['u', [0]]], 'one read per topic, for the held partitions');
  t.same(s.sent.map((b) => b.map((x) => [x.topic, x.partition, x.offset])), [[['t', 0, '30']]], 'the stored point, not the engine\'s');
  t.same(parseCommitMeta(s.sent[0]![0]!.metadata), { watermarkMs: 60_000, appliedEnd: 35 });
  failReads = 1;
  stored.get('t')!.set(0, { position: 40, watermarkMs: 60_000, appliedEnd: 45 });
  await s.c.commit('interval');
  t.equal(s.sent.length, 1, 'the store could not be read: nothing committed');
  t.equal((await s.metrics.commits.get()).values.find((v) => v.labels.result === 'error')?.value, 1, 'counted as a failed commit');
  await s.c.commit('interval');
  t.same(s.sent.at(-1)!.map((x) => x.offset), ['40'], 'the next commit caught up with the store');
});
