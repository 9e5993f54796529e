// Against a real Kafka broker: a client made from our settings reads each response into a buffer of
// its own (src/kafka/socket.ts, framing.ts), and a consumer gets every message as it was produced,
// in order, keys and values byte for byte, from fetch responses of several hundred KiB (read in
// place) and the small responses around them (metadata, offsets, heartbeats: copied out of scratch).
import { pino } from 'pino';
import t from 'tap';
import { kafkaClient } from '../../src/kafka/client.js';
import { framingCounts } from '../../src/kafka/framing.js';
import type { KafkaConfig } from '../../src/config/index.js';
import { brokers, createTopic, produce, uid } from '../fixtures/kafka.js';

t.test('a consumer on framed sockets reads every message of a topic, byte for byte', async (t) => {
  const topic = await createTopic(t, 2);
  const sent = Array.from({ length: 20_000 }, (_, i) => ({ key: `k${i % 97}`, value: `{"i":${i},"pad":"${'é✓x'.repeat(i % 50)}"}` }));
  await produce(topic, sent);
  const cfg = { brokers: brokers(), clientId: uid('framing'), ssl: null, sasl: null, retryMaxMs: 5000 } as unknown as KafkaConfig;
  const before = { ...framingCounts };
  const consumer = kafkaClient(cfg, pino({ level: 'silent' })).consumer({ groupId: uid('g'), maxBytesPerPartition: 512 * 1024 });
  await consumer.connect();
  t.teardown(() => consumer.disconnect());
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = new Map<number, Array<{ key: string; value: string }>>();
  let n = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${n} of ${sent.length} messages after 60 s`)), 60_000);
    consumer.run({
      eachBatch: async ({ batch }) => {
        const list = got.get(batch.partition) ?? [];
        for (const m of batch.messages) list.push({ key: m.key!.toString(), value: m.value!.toString() });
        got.set(batch.partition, list);
        n += batch.messages.length;
        if (n >= sent.length) {
          clearTimeout(timer);
          resolve();
        }
      },
    }).catch(reject);
  });
  t.equal(n, sent.length, 'every message, once');
  // Per key, the order produced (a key stays in one partition).
  const byKey = (list: ReadonlyArray<{ key: string; value: string }>) => {
    const m = new Map<string, string[]>();
    for (const x of list) m.set(x.key, [...(m.get(x.key) ?? []), x.value]);
    return m;
  };
  const want = byKey(sent);
  const have = byKey([...got.values()].flat());
  t.same([...have.keys()].sort(), [...want.keys()].sort(), 'the same keys');
  t.ok([...want].every(([k, v]) => JSON.stringify(have.get(k)) === JSON.stringify(v)), 'each key\'s values byte for byte, in the order produced');
  t.ok(framingCounts.ownBuffers - before.ownBuffers > 0, `fetch responses read in place (${framingCounts.ownBuffers - before.ownBuffers} buffers of their own)`);
  t.ok(framingCounts.responses - before.responses > framingCounts.ownBuffers - before.ownBuffers, `small responses framed too (${framingCounts.responses - before.responses} in all)`);
  t.equal(framingCounts.passedBytes - before.passedBytes, 0, 'nothing passed on unframed');
});
