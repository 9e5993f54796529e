// Lag and idle flush without a broker: lag reads three engine getters and, for polling, one admin
// call (fetchTopicOffsets); the gauges are real prom-client metrics read back from their registry.
import t from 'tap';
import pino from 'pino';
import { Registry } from 'prom-client';
import { createMetrics } from '../../src/metrics/index.js';
import { Assignment, type Held } from '../../src/sources/kafka/assignment.js';
import { flushIdle } from '../../src/sources/lanes/idle.js';
import { Lag } from '../../src/sources/kafka/lag.js';

function setup() {
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const table = new Assignment();
  const [a, b] = table.open([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]) as [Held, Held];
  const applied = new Map<number, number>();
  const pendingSince = new Map<number, number>();
  const lastTs = new Map<number, number>();
  const lag = new Lag({
    metrics, logger: pino({ level: 'silent' }),
    lanes: {
      status: (id) => ({ commitPoint: null, appliedEnd: applied.get(id) ?? null, oldestPendingMs: pendingSince.get(id) ?? null, lastAppliedTimestampMs: lastTs.get(id) ?? null, lastActivityMs: 0 }),
    },
  });
  const gauge = async (name: 'lagMessages' | 'lagSeconds', partition: string) =>
    (await metrics[name].get()).values.find((v) => v.labels.partition === partition)?.value;
  return { metrics, a, b, applied, pendingSince, lastTs, lag, gauge };
}

t.test('lag in messages is the high watermark minus the next position to process', async (t) => {
  const s = setup();
  s.lag.track(s.a, 100, 250);
  s.lag.track(s.b, null, 10);
  s.lag.update(1_000_000, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 150, 'nothing applied yet: from where the assignment started');
  t.equal(await s.gauge('lagMessages', '1'), undefined, 'start unknown: no figure rather than a wrong one');
  s.applied.set(s.a.id, 200);
  s.lag.sawHighWatermark(s.a.tp, 260);
  s.lag.sawHighWatermark({ topic: 't', partition: 9 }, 1e9);
  s.lag.update(1_000_000, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 60, 'applied up to 200 of 260');
  s.applied.set(s.a.id, 300);
  s.lag.update(1_000_000, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 0, 'never negative (the watermark seen is older than what was applied)');
});

t.test('lag in seconds: age of the oldest pending record, else of the last applied one; 0 when caught up', async (t) => {
  const s = setup();
  const now = 1_000_000;
  s.lag.track(s.a, 0, 100);
  s.applied.set(s.a.id, 50);
  s.pendingSince.set(s.a.id, now - 4000);
  t.same(s.lag.update(now, () => false), []);
  t.equal(await s.gauge('lagSeconds', '0'), 4);
  s.pendingSince.delete(s.a.id);
  s.lastTs.set(s.a.id, now - 9000);
  s.lag.update(now, () => false);
  t.equal(await s.gauge('lagSeconds', '0'), 9, 'paused with nothing submitted: the last applied record\'s age is a lower bound');
  s.applied.set(s.a.id, 100);
  t.same(s.lag.update(now, (h) => h === s.a), [], 'no lag but a batch in the intake: not caught up');
  const caught = s.lag.update(now, () => false);
  t.same(caught.map((h) => h.id), [s.a.id]);
  t.equal(await s.gauge('lagSeconds', '0'), 0);
});

t.test('poll() takes the high watermarks of the tracked topics from the admin; clear() removes the gauges', async (t) => {
  const s = setup();
  s.lag.track(s.a, 0, 0);
  s.lag.track(s.b, 0, 0);
  const asked: string[] = [];
  await s.lag.poll({ fetchTopicOffsets: async (topic: string) => { asked.push(topic); return [{ partition: 0, offset: '', high: '42', low: '0' }, { partition: 1, offset: '', high: '7', low: '0' }]; } });
  t.same(asked, ['t'], 'one request per topic');
  s.lag.update(0, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 42);
  t.equal(await s.gauge('lagMessages', '1'), 7);
  await s.lag.poll({ fetchTopicOffsets: async () => { throw new Error('broker down'); } });
  s.lag.update(0, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 42, 'a failed poll keeps the last figures');
  s.lag.clear();
  t.same((await s.metrics.lagMessages.get()).values, []);
  t.same((await s.metrics.lagSeconds.get()).values, []);
});

t.test('while the group is away, lag in seconds keeps growing and nothing is offered for an idle flush', async (t) => {
  const s = setup();
  const left = 1_000_000;
  s.lag.track(s.a, 0, 500);
  s.lag.track(s.b, 0, 300);
  s.applied.set(s.a.id, 400);
  s.lastTs.set(s.a.id, left - 2000);
  s.applied.set(s.b.id, 300);
  s.lastTs.set(s.b.id, left - 60_000);
  t.same(s.lag.update(left, () => false).map((h) => h.id), [s.b.id], 'b caught up before the outage');
  s.lag.detach(left);
  // The engine's state is gone with the session: the lag must not depend on it any more.
  s.applied.clear();
  s.lastTs.clear();
  const seen: number[][] = [];
  for (const after of [0, 5000, 30_000]) {
    t.same(s.lag.update(left + after, () => false), [], 'away: never caught up, never idle-flushed');
    seen.push([(await s.gauge('lagSeconds', '0'))!, (await s.gauge('lagSeconds', '1'))!, (await s.gauge('lagMessages', '0'))!]);
  }
  t.same(seen, [[2, 0, 100], [7, 5, 100], [32, 30, 100]], 'a: from its last applied record (it was behind); b: from when the group went away; messages: the last figure');
  s.lag.detach(left + 40_000);
  s.lag.update(left + 40_000, () => false);
  t.equal(await s.gauge('lagSeconds', '0'), 42, 'a second detach keeps the first reference');
  s.lag.clear();
  t.same((await s.metrics.lagSeconds.get()).values, [], 'the next join starts afresh');
});

t.test('idle flush advances only caught-up partitions that received nothing for idleFlushMs', async (t) => {
  const table = new Assignment();
  const [a, b, c] = table.open([0, 1, 2].map((partition) => ({ topic: 't', partition }))) as [Held, Held, Held];
  const now = 100_000;
  const activity = new Map([[a.id, now - 5000], [b.id, now - 500]]);
  const advanced: Array<[number, number]> = [];
  const flushed = await flushIdle([a, b, c], now, {
    idleFlushMs: 2000,
    lanes: {
      status: (id) => (activity.has(id) ? { commitPoint: null, appliedEnd: null, oldestPendingMs: null, lastAppliedTimestampMs: null, lastActivityMs: activity.get(id)! } : null),
      advanceIdle: async (id, wall) => { advanced.push([id, wall]); },
    },
  });
  t.same(advanced, [[a.id, now]], 'b was active 0.5 s ago; c never received anything');
  t.same(flushed, [a]);
});

t.test('a high watermark older than one already seen is ignored; totalMessages sums the partitions', async (t) => {
  const s = setup();
  s.lag.track(s.a, 0, 100);
  s.lag.track(s.b, 0, null);
  s.applied.set(s.a.id, 40);
  s.lag.sawHighWatermark(s.a.tp, 300);
  // A poll sent before that fetch and answered after it.
  s.lag.sawHighWatermark(s.a.tp, 200);
  s.lag.update(1_000_000, () => false);
  t.equal(await s.gauge('lagMessages', '0'), 260, 'the newer 300 stays');
  t.equal(s.lag.totalMessages(), 260, 'partition 1 has no high watermark yet: not counted');
  s.lag.sawHighWatermark(s.b.tp, 15);
  t.equal(s.lag.totalMessages(), 275);
  s.lag.track(s.a, 0, 50);
  t.equal(s.lag.totalMessages(), 25, 'a new assignment starts from the high watermark read then');
});
