// The PositionStore contract as the pipeline sees it: a sink that stores commit points with its rows
// exposes itself as `positions` (PostgreSQL always, Kafka in exactly-once mode only), and what it
// stores for a lane comes back through that contract, per lane, for the lanes asked for.
import { pino } from 'pino';
import t from 'tap';
import type { PositionStore, SinkCommit } from '../../src/commit/types.js';
import { KafkaSink } from '../../src/sinks/kafka/index.js';
import type { Sink } from '../../src/sinks/types.js';
import type { RowBatch } from '../../src/windows/row.js';
import { client, uid } from '../fixtures/kafka.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const empty: RowBatch = { rows: [], ndjson: () => '' };
const logger = pino({ level: 'silent' });

t.test('PostgreSQL: the sink is its own PositionStore; points come back per lane', async (t) => {
  const { url } = await testSchema(t);
  const sink: Sink = await openSink(t, url);
  const store: PositionStore | undefined = sink.positions;
  t.equal(store, sink, 'positions is the sink itself');
  const commit = (topic: string, partition: number, position: number): SinkCommit => ({ topic, partition, point: { position, watermarkMs: 1_600_000_000_000 + position, appliedEnd: position + 5 } });
  await sink.write(empty, commit('events', 0, 10));
  await sink.write(empty, commit('events', 1, 20));
  await sink.write(empty, commit('events', 1, 30));
  await sink.write(empty, commit('other', 0, 99));
  const got = await store!.readPositions('events', [0, 1, 2]);
  t.same([...got].sort(), [[0, { position: 10, watermarkMs: 1_600_000_000_010, appliedEnd: 15 }], [1, { position: 30, watermarkMs: 1_600_000_000_030, appliedEnd: 35 }]], 'the latest point per lane; a lane never written is absent');
  t.same([...(await store!.readPositions('events', [1]))].map(([p]) => p), [1], 'only the lanes asked for');
  t.equal((await store!.readPositions('nothing', [0])).size, 0);
});

t.test('Kafka: a PositionStore in exactly-once mode only', async (t) => {
  const atLeastOnce = new KafkaSink({ kafka: client(), topic: uid('out'), exactlyOnce: false, groupId: uid('g'), logger });
  const exactlyOnce = new KafkaSink({ kafka: client(), topic: uid('out'), exactlyOnce: true, groupId: uid('g'), logger });
  t.teardown(() => Promise.all([atLeastOnce.close(), exactlyOnce.close()]));
  t.equal(atLeastOnce.positions, undefined, 'at least once: the source commits to its group itself');
  t.equal(exactlyOnce.positions, exactlyOnce, 'exactly once: the offsets travel in the sink\'s transactions');
});
