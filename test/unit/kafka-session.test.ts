// One consumer-group session without a broker: the session's contract with kafkajs is a client
// making a consumer (on/events/connect/subscribe/run/disconnect) and an admin (connect/disconnect);
// a small scripted object plays both, and the test drives the group's events itself.
import t from 'tap';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Kafka } from 'kafkajs';
import { Signal, sleep } from '../../src/async/index.js';
import { parseConfig } from '../../src/config/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { GroupSession } from '../../src/sources/kafka/session.js';
import type { TopicPartition } from '../../src/sources/kafka/assignment.js';

const EVENTS = { GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash', REBALANCING: 'consumer.rebalancing' } as const;

function fakeClient() {
  const calls: string[] = [];
  const listeners = new Map<string, (e: { payload: never }) => void>();
  const consumer = {
    events: EVENTS,
    on: (name: string, fn: (e: { payload: never }) => void) => listeners.set(name, fn),
    connect: async () => void calls.push('consumer.connect'),
    subscribe: async () => void calls.push('consumer.subscribe'),
    run: async () => void calls.push('consumer.run'),
    disconnect: async () => void calls.push('consumer.disconnect'),
  };
  const admin = { connect: async () => void calls.push('admin.connect'), disconnect: async () => void calls.push('admin.disconnect') };
  const emit = (name: string, payload: unknown) => listeners.get(name)!({ payload: payload as never });
  return { client: { consumer: () => consumer, admin: () => admin } as unknown as Pick<Kafka, 'consumer' | 'admin'>, calls, emit };
}

function setup() {
  const f = fakeClient();
  const metrics = createMetrics(new Registry(), { defaultMetrics: false });
  const stop = new Signal();
  const joins: TopicPartition[][] = [];
  const ends: boolean[] = [];
  const kafka = parseConfig({ SOURCE: 'kafka', KAFKA_BROKERS: '127.0.0.1:1', KAFKA_TOPICS: 'm' }).kafka;
  const s = new GroupSession(f.client, {
    kafka, logger: pino({ level: 'silent' }), metrics, stop,
    handlers: {
      onJoin: (tps) => joins.push(tps),
      onRebalancing: () => f.calls.push('rebalancing'),
      onCrash: (restart) => f.calls.push(`crash restart=${restart}`),
      onBatch: async () => {},
      onEnd: async (stopping) => {
        ends.push(stopping);
        f.calls.push(`end stopping=${stopping}`);
      },
    },
  });
  const connected = async () => (await metrics.kafkaConnected.get()).values[0]?.value;
  const reconnects = async () => (await metrics.kafkaReconnects.get()).values[0]?.value;
  return { ...f, s, stop, joins, ends, connected, reconnects };
}

t.test('a join is reported flattened; stop() ends the session: drain (onEnd) before the group is left', async (t) => {
  const x = setup();
  const run = x.s.run();
  await sleep(5);
  t.same(x.calls, ['admin.connect', 'consumer.connect', 'consumer.subscribe', 'consumer.run']);
  t.notOk(x.s.joined);
  x.emit(EVENTS.GROUP_JOIN, { memberId: 'm1', memberAssignment: { m: [0, 2], n: [1] } });
  t.ok(x.s.joined);
  t.equal(await x.connected(), 1);
  t.same(x.joins, [[{ topic: 'm', partition: 0 }, { topic: 'm', partition: 2 }, { topic: 'n', partition: 1 }]]);
  t.ok(x.s.consumer !== null && x.s.admin !== null, 'connected: commits and reads may go through it');
  x.stop.raise();
  await run;
  t.same(x.calls.slice(4), ['end stopping=true', 'consumer.disconnect', 'admin.disconnect'], 'the final commit happens before disconnect()');
  t.notOk(x.s.joined);
  t.equal(await x.connected(), 0);
  t.ok(x.s.ended.raised);
  t.equal(x.s.consumer, null);
});

t.test('a crash kafkajs restarts stays in the session; one it does not ends it with the error', async (t) => {
  const x = setup();
  const run = x.s.run();
  await sleep(5);
  x.emit(EVENTS.GROUP_JOIN, { memberId: 'm1', memberAssignment: { m: [0] } });
  x.emit(EVENTS.CRASH, { error: new Error('connection lost'), restart: true });
  t.notOk(x.s.joined, 'not in the group until kafkajs has rejoined');
  t.equal(await x.connected(), 0);
  t.equal(await x.reconnects(), 1, 'kafkajs reconnecting on its own counts as a reconnect attempt');
  t.ok(x.calls.includes('crash restart=true'), 'the owner is told (the lag goes away-mode)');
  await sleep(5);
  t.same(x.ends, [], 'still running');
  x.emit(EVENTS.CRASH, { error: new Error('group authorization failed'), restart: false });
  await t.rejects(run, /group authorization failed/);
  t.same(x.ends, [false], 'ended without a drain: not stopping');
  t.equal(await x.reconnects(), 1, 'a crash for good is the supervisor\'s to count (when it reconnects)');
  t.same(x.calls.slice(-2), ['consumer.disconnect', 'admin.disconnect']);
});

t.test('stopped before it started: no connection is made', async (t) => {
  const x = setup();
  x.stop.raise();
  await x.s.run();
  t.same(x.calls, ['end stopping=false', 'consumer.disconnect', 'admin.disconnect']);
});
