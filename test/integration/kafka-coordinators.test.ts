// A transactional producer's coordinator lookups (src/kafka/coordinators.ts): kafkajs 2.2.4 sent a
// FindCoordinator before each of AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
// Remembered, a transaction after the first asks for none; after a coordinator request failed, the
// next transaction looks its coordinator up again. Real broker; requests counted by kafkajs's own
// instrumentation events.
import t, { type Test } from 'tap';
import type { Producer } from 'kafkajs';
import { patchCoordinatorLookups } from '../../src/kafka/coordinators.js';
import { client, createTopic, uid } from '../fixtures/kafka.js';

t.equal(patchCoordinatorLookups(), true, 'installed on kafkajs 2.2.4');

/** A connected transactional producer, and the API names of the requests it sent since the last take(). */
async function transactional(t: Test, transactionalId = uid('tx')): Promise<{ producer: Producer; take(): string[] }> {
  const producer = client().producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  let sent: string[] = [];
  producer.on(producer.events.REQUEST, (e) => sent.push(e.payload.apiName));
  await producer.connect();
  t.teardown(() => producer.disconnect());
  // InitProducerId now, as the sink does (src/kafka/transactions.ts claimTransactionalId).
  await (await producer.transaction()).abort();
  return {
    producer,
    take: () => {
      const s = sent;
      sent = [];
      return s;
    },
  };
}

async function oneTransaction(producer: Producer, topic: string, groupId: string, offset: number): Promise<void> {
  const tx = await producer.transaction();
  await tx.send({ topic, messages: [{ key: 'k', value: String(offset) }] });
  await tx.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] });
  await tx.commit();
}

const lookups = (names: readonly string[]): number => names.filter((n) => n === 'GroupCoordinator').length;

t.test('a transaction after the first sends no FindCoordinator', async (t) => {
  const topic = await createTopic(t, 1);
  const groupId = uid('g');
  const p = await transactional(t);
  await oneTransaction(p.producer, topic, groupId, 1);
  t.ok(lookups(p.take()) >= 1, 'the first transaction looks its coordinators up');
  for (let i = 2; i <= 4; i++) {
    await oneTransaction(p.producer, topic, groupId, i);
    const sent = p.take();
    t.equal(lookups(sent), 0, `transaction ${i}: no FindCoordinator`);
    // A request the coordinator answered CONCURRENT_TRANSACTIONS (right after a commit) is sent again,
    // after kafkajs's retry refreshed the metadata.
    const firsts = sent.filter((n, j) => n !== 'Produce' && n !== 'Metadata' && sent.indexOf(n) === j);
    t.same(firsts, ['AddPartitionsToTxn', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn'], `transaction ${i}: the coordinator requests, nothing else`);
  }
});

t.test('after a coordinator request failed, the coordinator is looked up again', async (t) => {
  const topic = await createTopic(t, 1);
  const groupId = uid('g');
  const transactionalId = uid('tx');
  const a = await transactional(t, transactionalId);
  await oneTransaction(a.producer, topic, groupId, 1);
  await oneTransaction(a.producer, topic, groupId, 2);
  // A second producer with the same transactional id fences the first: its next AddPartitionsToTxn,
  // a request to the remembered coordinator, fails.
  await transactional(t, transactionalId);
  a.take();
  const tx = await a.producer.transaction();
  await t.rejects(tx.send({ topic, messages: [{ key: 'k', value: 'x' }] }), 'the fenced producer\'s send fails');
  t.ok(a.take().includes('AddPartitionsToTxn'), 'it failed at AddPartitionsToTxn');
  await t.rejects(tx.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '3' }] }] }));
  const sent = a.take();
  t.equal(sent[0], 'GroupCoordinator', 'the next coordinator request is preceded by a lookup');
  t.ok(sent.includes('AddOffsetsToTxn'), 'then sent to the coordinator found');
});

t.test('an idempotent producer and an admin are left as they were', async (t) => {
  const topic = await createTopic(t, 1);
  const admin = client().admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  let asked = 0;
  admin.on(admin.events.REQUEST, (e) => {
    if (e.payload.apiName === 'GroupCoordinator') asked++;
  });
  const groupId = uid('g');
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '0' }] });
  await admin.fetchOffsets({ groupId, topics: [topic] });
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '0' }] });
  t.ok(asked >= 2, `every group lookup of an admin is a FindCoordinator (${asked})`);
});
