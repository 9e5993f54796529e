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
import { rowRecords, SharedRecordLayout, type RecordLayout } from '../../src/sinks/kafka/row-records.js';
import { FormattedElsewhere, recordsWire } from '../../src/windows/row-task.js';
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

/**
 * The same rows as a lane's owner sends them to the Kafka sink: written as records for the sink's
 * layout (src/sinks/kafka/row-records.ts), sections of batch bodies the sink copies whole.
 */
function recordsBatch(rows: StatsRow[], layout: RecordLayout): RowBatch {
  const lines = rows.map((r) => `${JSON.stringify(r)}\n`).join('');
  const ndjson = Buffer.from(lines);
  const lineEnds = new Int32Array(rows.length);
  for (let i = 0, o = -1; i < rows.length; i++) lineEnds[i] = o = ndjson.indexOf(0x0a, o + 1);
  const keys = rows.map((r) => Buffer.from(rowIdentityKey(r)));
  const keyEnds = new Int32Array(rows.length);
  for (let i = 0, o = 0; i < rows.length; i++) keyEnds[i] = o += keys[i]!.length;
  const wire = { kind: 'rows' as const, ndjson, lineEnds, keys: Buffer.concat(keys), keyEnds, seconds: 0 };
  return new FormattedElsewhere(recordsWire(rowRecords(wire, layout, {}), 0), rows[0]!.topic === undefined ? undefined : { topic: rows[0]!.topic, partition: rows[0]!.partition! }, () => ({ rows, ndjson: () => lines }));
}

/** key hex -> value hex of what went in. */
function expected(rows: readonly StatsRow[]): Map<string, string> {
  return new Map(rows.map((r) => [Buffer.from(rowIdentityKey(r)).toString('hex'), Buffer.from(JSON.stringify(r)).toString('hex')]));
}

/** topic -> (key hex -> value hex) of what went in. */
type ByTopic = Map<string, Map<string, string>>;

function add(got: ByTopic, topic: string, key: string, value: string): void {
  let m = got.get(topic);
  if (m === undefined) got.set(topic, (m = new Map()));
  m.set(key, value);
}

const total = (got: ByTopic): number => [...got.values()].reduce((a, m) => a + m.size, 0);

async function readWithKafkajs(topics: readonly string[], n: number): Promise<ByTopic> {
  const consumer = client().consumer({ groupId: uid('reader'), maxWaitTimeInMs: 100 });
  const got: ByTopic = new Map();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [...topics], fromBeginning: true });
    let done: () => void = () => {};
    const reached = new Promise<void>((resolve) => (done = resolve));
    await consumer.run({
      eachMessage: async ({ topic, message }) => {
        add(got, topic, message.key!.toString('hex'), message.value!.toString('hex'));
        if (total(got) >= n) done();
      },
    });
    await Promise.race([reached, new Promise((r) => setTimeout(r, 30_000).unref())]);
  } finally {
    await consumer.disconnect();
  }
  return got;
}

async function readWithJava(topics: readonly string[], n: number): Promise<ByTopic> {
  const { stdout } = await promisify(execFile)('java', ['-cp', `${LIBS}/*`, READER, brokers().join(','), topics.join(','), String(n), '60000'], { maxBuffer: 64 << 20 });
  const got: ByTopic = new Map();
  for (const line of stdout.split('\n')) {
    if (line === '') continue;
    const [topic, , , key, value] = line.split(' ');
    add(got, topic!, key!, value!);
  }
  return got;
}

/**
 * 400 rows through a sink of this codec and mode into a fresh topic, as the engine writes them (four
 * writes with commit points). `records`: the last three writes as an owner writes them (the first
 * tells the sink the topic's partitions, as at an engine's start).
 */
async function write(t: Test, compression: KafkaCompression, exactlyOnce: boolean, topic: string, inputTopic: string, records = false): Promise<{ topic: string; want: Map<string, string> }> {
  const input = { topic: inputTopic, partition: 0 };
  const s = new KafkaSink({ kafka: client(), topic, exactlyOnce, groupId: uid('g'), compression, logger, maxRequestBytes: 64 * 1024 });
  t.teardown(() => s.close());
  const rows = Array.from({ length: 400 }, (_, i) => row(i, input));
  const commit = (w: number) => ({ ...input, point: { position: (w + 1) * 100, watermarkMs: 1_581_425_000_000, appliedEnd: (w + 1) * 100 } });
  const first = records ? [await s.write(bytesBatch(rows.slice(0, 100)), commit(0))] : [];
  const layout = new SharedRecordLayout(s.recordLayout).read();
  if (records && layout === null) throw new Error('the sink did not say its layout after a write');
  const results = [...first, ...await Promise.all((records ? [1, 2, 3] : [0, 1, 2, 3]).map((w) => {
    const part = rows.slice(w * 100, (w + 1) * 100);
    return s.write(records ? recordsBatch(part, layout!) : bytesBatch(part), commit(w));
  }))];
  t.same(results.map((r) => r.rejected), [[], [], [], []], `${compression}${exactlyOnce ? ', exactly once' : ''}: no row rejected`);
  return { topic, want: expected(rows) };
}

t.test('our produce path is installed (src/kafka/client.ts loads it before kafkajs)', async (t) => {
  t.equal(preparedBatchesAccepted(), true);
  t.ok(existsSync(READER) && existsSync(LIBS), `the Java reader and the broker's jars (${LIBS}; KAFKA_CACHE_DIR)`);
});

t.test('every codec at least once, none and lz4 exactly once, and rows written as records by their owner: our batches are accepted and read back, byte for byte, by kafkajs and by the Java consumer', async (t) => {
  const before = producePaths.prepared;
  const sectionsBefore = producePaths.sections;
  // The last three: rows as their lane's owner writes them (records, sent section by section).
  const cases = [
    ...producibleCompressions().map((c) => [c, false, false] as const), ['none', true, false] as const, ['lz4', true, false] as const,
    ['none', false, true] as const, ['none', true, true] as const, ['lz4', true, true] as const,
  ];
  // Topics one after another (the broker answers concurrent creations with retriable errors), then the writes side by side.
  const topics: Array<[string, string]> = [];
  for (let i = 0; i < cases.length; i++) topics.push([await createTopic(t, 3), await createTopic(t, 1)]);
  const written = await Promise.all(cases.map(([c, eos, records], i) => write(t, c, eos, topics[i]![0], topics[i]![1], records)));
  t.ok(producePaths.prepared - before >= cases.length * 3, `our record batches were sent (${producePaths.prepared - before})`);
  // 300 rows of about 1 KB (every 11th 6 KB) in 64 KiB requests over 3 partitions: several sections a partition.
  t.ok(producePaths.sections - sectionsBefore >= 3 * 3 * 3, `sections written by the rows' owner were sent whole (${producePaths.sections - sectionsBefore})`);
  const want: ByTopic = new Map(written.map((w) => [w.topic, w.want]));
  const outputs = written.map((w) => w.topic);
  const n = total(want);
  t.same(await readWithKafkajs(outputs, n), want, 'kafkajs reads every row back');
  t.same(await readWithJava(outputs, n), want, 'Kafka\'s Java consumer (read_committed, CRCs checked) reads every row back');
});
