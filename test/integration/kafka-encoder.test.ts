// Against a real Kafka broker: the statistics sink's record batches are ours (src/kafka/record-batch.ts
// under kafkajs's producer, src/kafka/produce-request.ts), in every codec this runtime produces and in
// both modes. The broker accepts them (it checks the CRC and the sequence numbers), and they read back
// byte for byte, keys and values as the rows' identity keys and JSON, with kafkajs's consumer and with
// Kafka's own Java consumer (CRC checked, the codec decompressed by the Java client).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { producibleCompressions, type KafkaCompression } from '../../src/kafka/compression.js';
import { preparedBatchesAccepted, producePaths } from '../../src/kafka/produce-request.js';
import { KafkaSink, rowIdentityKey } from '../../src/sinks/kafka/index.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { brokers, client, createTopic, uid } from '../fixtures/kafka.js';

const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const LIBS = process.env['KAFKA_CACHE_DIR'] ?? join(ROOT, '.cache', 'kafka', 'libs');
const READER = join(ROOT, 'test', 'fixtures', 'java', 'ReadTopic.java');

function row(i: number, where: { topic: string; partition: number }): StatsRow {
  return {
    name: i % 5 === 0 ? `disk.é✓.${i}` : `cpu.idle_perc.${i % 7}`,
    unit: i % 2 === 0 ? 'percent' : null,
    groupby: { hostname: `host-${i}`, service: i % 3 === 0 ? 'монитор' : 'monitoring', ...(i % 11 === 0 ? { big: 'x'.repeat(5000) } : {}) },
    count: i + 1,
    sum: i * 1.5,
    min: 0,
    max: i * 1.5,
    avg: (i * 1.5) / (i + 1),
    stddev: 0.25,
    duration_start: '2020-02-11T12:42:13.000Z',
    duration_end: '2020-02-11T12:42:43.000Z',
    duration: 30,
    period: 60,
    period_start: '2020-02-11T12:42:00.000Z',
    period_end: '2020-02-11T12:43:00.000Z',
    topic: where.topic,
    partition: where.partition,
  };
}

/** A batch that writes its own bytes, as the window store's rows do: NDJSON bytes and identity keys, no row objects read. */
function bytesBatch(rows: StatsRow[]): RowBatch {
  return {
    get rows(): readonly StatsRow[] {
      throw new Error('the sink read the rows as objects');
    },
    ndjson: () => rows.map((r) => `${JSON.stringify(r)}\n`).join(''),
    ndjsonBytes: () => Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join('')),
    json: (i) => JSON.stringify(rows[i]),
    identityKey: (i) => rowIdentityKey(rows[i]!),
  };
}

/** key hex -> value hex of what went in. */
function expected(rows: readonly StatsRow[]): Map<string, string> {
  return new Map(rows.map((r) => [Buffer.from(rowIdentityKey(r)).toString('hex'), Buffer.from(JSON.stringify(r)).toString('hex')]));
}

async function readWithKafkajs(topic: string, n: number): Promise<Map<string, string>> {
  const consumer = client().consumer({ groupId: uid('reader'), maxWaitTimeInMs: 100 });
  const got = new Map<string, string>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let done: () => void = () => {};
    const reached = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ message }) => {
        got.set(message.key!.toString('hex'), message.value!.toString('hex'));
        if (got.size >= n) done();
      },
    });
    await Promise.race([reached, new Promise((r) => setTimeout(r, 30_000).unref())]);
  } finally {
    await consumer.disconnect();
  }
  return got;
}

async function readWithJava(topic: string, n: number): Promise<Map<string, string>> {
  const { stdout } = await promisify(execFile)('java', ['-cp', `${LIBS}/*`, READER, brokers().join(','), topic, String(n), '60000'], { maxBuffer: 64 << 20 });
  const got = new Map<string, string>();
  for (const line of stdout.split('\n')) {
    if (line === '') continue;
    const [, , key, value] = line.split(' ');
    got.set(key!, value!);
  }
  return got;
}

async function writeAndRead(t: Test, compression: KafkaCompression, exactlyOnce: boolean): Promise<void> {
  const topic = await createTopic(t, 3);
  const input = { topic: await createTopic(t, 1), partition: 0 };
  const s = new KafkaSink({ kafka: client(), topic, exactlyOnce, groupId: uid('g'), compression, logger, maxRequestBytes: 64 * 1024 });
  t.teardown(() => s.close());
  const rows = Array.from({ length: 400 }, (_, i) => row(i, input));
  const before = producePaths.prepared;
  const results = await Promise.all([0, 1, 2, 3].map((w) => {
    const part = rows.slice(w * 100, (w + 1) * 100);
    // As the engine writes: with the input partition's commit point.
    return s.write(bytesBatch(part), { ...input, point: { position: (w + 1) * 100, watermarkMs: 1_581_425_000_000, appliedEnd: (w + 1) * 100 } });
  }));
  t.same(results.map((r) => r.rejected), [[], [], [], []]);
  t.ok(producePaths.prepared > before, `our record batches were sent (${producePaths.prepared - before})`);
  const want = expected(rows);
  t.same(await readWithKafkajs(topic, rows.length), want, 'kafkajs reads every row back, byte for byte');
  t.same(await readWithJava(topic, rows.length), want, 'Kafka\'s Java consumer reads every row back, byte for byte');
}

t.test('our produce path is installed (src/kafka/client.ts loads it before kafkajs)', async (t) => {
  t.equal(preparedBatchesAccepted(), true);
  t.ok(existsSync(READER) && existsSync(LIBS), `the Java reader and the broker's jars (${LIBS}; KAFKA_CACHE_DIR)`);
});

for (const c of producibleCompressions()) {
  t.test(`${c}, at least once: our batches are accepted and read back by kafkajs and by the Java consumer`, (t) => writeAndRead(t, c, false));
}

t.test('lz4, exactly once: transactional batches of ours are read back read_committed by both', (t) => writeAndRead(t, 'lz4', true));
t.test('none, exactly once', (t) => writeAndRead(t, 'none', true));
