// Against a real Kafka broker: with the Kafka source's decoder and Batch in kafkajs's place (the
// preload, first import, as in the CLI), a topic the source reads as record runs is cut into pool
// batches that are views of the responses (read into the frame pool), every value byte for byte; a consumer of another topic in the same process
// still gets every message as an object.
import '../../src/sources/kafka/preload.js';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { EachBatchPayload } from 'kafkajs';
import { kafkaClient } from '../../src/kafka/client.js';
import { messageBytes, messageCount } from '../../src/core/batch.js';
import type { KafkaConfig } from '../../src/config/index.js';
import { cutFetch, type Fetched } from '../../src/sources/kafka/fetch.js';
import { recordPaths } from '../../src/sources/kafka/records.js';
import { framePoolCounts } from '../../src/kafka/frame-pool.js';
import { useRuns } from '../../src/sources/kafka/runs.js';
import { brokers, createTopic, produce, uid } from '../fixtures/kafka.js';

const sent = Array.from({ length: 20_000 }, (_, i) => ({ key: `k${i % 97}`, value: `{"i":${i},"pad":"${'é✓x'.repeat(i % 50)}"}` }));

/** Reads `topic` from the start until every message of `sent` came, handing each fetch to onBatch. */
async function consume(t: Test, topic: string, onBatch: (b: EachBatchPayload['batch']) => number): Promise<number> {
  const cfg = { brokers: brokers(), clientId: uid('runs'), ssl: null, sasl: null, retryMaxMs: 5000 } as unknown as KafkaConfig;
  const consumer = kafkaClient(cfg, pino({ level: 'silent' })).consumer({ groupId: uid('g'), maxBytesPerPartition: 512 * 1024 });
  await consumer.connect();
  t.teardown(() => consumer.disconnect());
  await consumer.subscribe({ topic, fromBeginning: true });
  let n = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${n} of ${sent.length} messages after 60 s`)), 60_000);
    consumer.run({
      eachBatch: async ({ batch }) => {
        n += onBatch(batch);
        if (n >= sent.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  await consumer.stop();
  return n;
}

const byPartitionOrder = (values: Map<number, string[]>) => [...values.values()].flat().sort();

t.test('a topic read as runs: every value byte for byte, in views of the response that go back to the frame pool', async (t) => {
  const topic = await createTopic(t, 2);
  await produce(topic, sent);
  const release = useRuns([topic]);
  t.teardown(release);
  const runsBefore = recordPaths.runs;
  const returnedBefore = framePoolCounts.returned;
  const values = new Map<number, string[]>();
  let views = 0;
  let copies = 0;
  let odd = 0;
  const n = await consume(t, topic, (batch) => {
    const f = batch as unknown as Fetched;
    if (f.run === undefined) return 0;
    let got = 0;
    for (const b of cutFetch(batch.partition, f, { batchSize: 1000, batchMaxBytes: 1 << 20 })) {
      // A response longer than the framer's scratch is read into the frame pool: its batches are
      // views of it; a shorter one is copied out of the scratch, and its batches are copies.
      if (b.data.buffer === f.run.set.buffer && b.data.buffer instanceof SharedArrayBuffer && b.release !== undefined) views++;
      else if (b.data.buffer !== f.run.set.buffer && b.data.buffer instanceof SharedArrayBuffer) copies++;
      else odd++;
      const list = values.get(batch.partition) ?? [];
      for (let i = 0; i < messageCount(b); i++) list.push(messageBytes(b, i).toString());
      values.set(batch.partition, list);
      got += messageCount(b);
      b.release?.();
    }
    return got;
  });
  t.equal(n, sent.length, 'every message came as a run, once');
  t.ok(recordPaths.runs > runsBefore, `record sets decoded as runs (${recordPaths.runs - runsBefore})`);
  t.same(byPartitionOrder(values), sent.map((m) => m.value).sort(), 'every value, byte for byte');
  t.ok(views > 0 && odd === 0, `every batch a view of a pooled response (${views}) or a copy in shared memory (${copies}), none else`);
  t.ok(framePoolCounts.returned > returnedBefore, `responses went back to the pool once their batches were released (${framePoolCounts.returned - returnedBefore})`);
});

t.test('a topic not read as runs: every message an object, as kafkajs gives them', async (t) => {
  const topic = await createTopic(t, 2);
  await produce(topic, sent);
  const values: string[] = [];
  let runs = 0;
  const n = await consume(t, topic, (batch) => {
    if ((batch as unknown as Fetched).run !== undefined) runs++;
    for (const m of batch.messages) values.push(m.value!.toString());
    return batch.messages.length;
  });
  t.equal(n, sent.length);
  t.equal(runs, 0, 'no batch of it was a run');
  t.same(values.sort(), sent.map((m) => m.value).sort(), 'every value, byte for byte');
});
