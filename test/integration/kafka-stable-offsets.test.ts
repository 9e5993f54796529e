// Against a real Kafka broker (KAFKA_BROKERS; npm test starts one): stable committed offsets
// (OffsetFetch v7, require_stable) through kafkajs's admin, and the exactly-once restore reading them.
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { isUnstableOffsets, patchStableOffsetFetch, stableOffsets } from '../../src/kafka/offset-fetch.js';
import { KafkaSink } from '../../src/sinks/kafka/index.js';
import { sendOffsetWithMetadata } from '../../src/kafka/transactions.js';
import { transactionalId } from '../../src/sinks/kafka/transactions.js';
import { formatCommitMeta } from '../../src/commit/meta.js';
import { client, createTopic, uid } from '../fixtures/kafka.js';

const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

t.before(() => {
  t.ok(patchStableOffsetFetch(), 'installed on this kafkajs');
});

async function connected<T extends { connect(): Promise<void>; disconnect(): Promise<void> }>(t: Test, x: T): Promise<T> {
  await x.connect();
  t.teardown(() => x.disconnect());
  return x;
}

const offsetOf = async (p: Promise<Array<{ partitions: Array<{ partition: number; offset: string }> }>>, partition: number) =>
  (await p)[0]?.partitions.find((x) => x.partition === partition)?.offset;

t.test('a transaction holding offsets: the stable read is answered UNSTABLE_OFFSET_COMMIT, a plain one the commit before; after the commit both the new offset', async (t) => {
  const topic = await createTopic(t, 2);
  const groupId = uid('g');
  const admin = await connected(t, client().admin());
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '5' }, { partition: 1, offset: '6' }] });

  const producer = await connected(t, client().producer({ transactionalId: uid('tx'), idempotent: true, maxInFlightRequests: 1 }));
  const tx = await producer.transaction();
  await tx.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '17' }] }] });

  const unstable = await stableOffsets(() => admin.fetchOffsets({ groupId, topics: [topic] })).then(() => null, (e: unknown) => e);
  t.ok(isUnstableOffsets(unstable), `the stable read fails while the offsets are pending: ${String(unstable)}`);
  t.equal(await offsetOf(admin.fetchOffsets({ groupId, topics: [topic] }), 0), '5', 'a plain read (kafkajs\'s own v4) shows the commit before, without error');

  await tx.commit();
  // The commit resolves once the coordinator has logged it; its markers (and the group's copy of the
  // offsets) follow. The stable read waits that out by answering UNSTABLE until then.
  let got: string | undefined;
  let stable = false;
  const since = Date.now();
  let unstableAnswers = 0;
  for (let i = 0; i < 200 && got === undefined; i++) {
    try {
      const r = await stableOffsets(() => admin.fetchOffsets({ groupId, topics: [topic] }));
      stable = r.stable;
      got = r.result[0]?.partitions.find((x) => x.partition === 0)?.offset;
    } catch (err) {
      if (!isUnstableOffsets(err)) throw err;
      unstableAnswers++;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  t.comment(`stable after ${Date.now() - since} ms, ${unstableAnswers} UNSTABLE_OFFSET_COMMIT answers`);
  t.equal(stable, true, 'went out as v7 with require_stable');
  t.equal(got, '17', 'the stable read gives the transaction\'s offset');
  t.equal(await offsetOf(admin.fetchOffsets({ groupId, topics: [topic] }), 1), '6', 'the partition the transaction did not touch keeps its offset');
});

t.test('exactly-once restore right after each commit of the previous owner reads that commit (20 hand-overs)', async (t) => {
  const input = await createTopic(t, 1);
  const out = await createTopic(t, 1);
  const groupId = uid('g');
  const id = transactionalId(groupId, input, 0);
  for (let i = 1; i <= 20; i++) {
    // The previous owner: its own producer under the lane's transactional id, committing position i.
    const owner = client().producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1 });
    await owner.connect();
    try {
      const tx = await owner.transaction();
      await tx.send({ topic: out, messages: [{ key: String(i), value: String(i) }] });
      await sendOffsetWithMetadata(tx, groupId, { topic: input, partition: 0, offset: i * 10, metadata: formatCommitMeta({ position: i * 10, watermarkMs: i, appliedEnd: i * 10 + 3 }) });
      await tx.commit();
    } finally {
      await owner.disconnect();
    }
    // The next owner claims the partition at once (fencing the id) and reads where to resume.
    const next = new KafkaSink({ kafka: client(), topic: out, exactlyOnce: true, groupId, logger });
    try {
      const pos = await next.readPositions(input, [0]);
      if (pos.get(0)?.position !== i * 10) {
        t.fail(`hand-over ${i}: resumed at ${pos.get(0)?.position}, the commit was ${i * 10}`);
        return;
      }
      t.same(pos.get(0), { position: i * 10, watermarkMs: i, appliedEnd: i * 10 + 3 }, `hand-over ${i}`);
    } finally {
      await next.close();
    }
  }
});
