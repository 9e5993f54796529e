#!/usr/bin/env node
// streamstats-produce: loads a topic with the generator workload (seed 000's Monasca points), keyed by
// series so that a series stays in one partition. For tests, benchmarks and demos.
// Configured by the environment only (see --help); any argument but --help and --version is refused
// before a connection is made, so a mistyped invocation never loads a topic.
// First: our producer path must be in kafkajs's module cache before kafkajs loads.
import '../kafka/preload.js';
import { randomBytes } from 'node:crypto';
import kafkajs, { type Admin, type Kafka, type Message } from 'kafkajs';
import { TimeoutError, withTimeout } from '../async/index.js';
import { parseConfig, unknownVariables, unknownVariablesWarning, type GeneratorConfig } from '../config/index.js';
import { versionText } from '../config/version.js';
import { ConfigError } from '../errors.js';
import { generatePoints } from '../sources/generator.js';
import { kafkaClient } from '../kafka/client.js';
import { compressionCode, compressionRefusal, KAFKA_COMPRESSIONS, type KafkaCompression } from '../kafka/compression.js';
import { JavaCompatiblePartitioner, partitionForKey } from '../kafka/partitioner.js';
import { PRODUCER_DEFAULTS } from '../kafka/producer.js';
import { chunkMessages, RECORD_OVERHEAD_BYTES, requestBudget } from '../kafka/requests.js';
import { TopicLimits } from '../kafka/topics.js';
import { createLogger } from '../logger.js';
import { timelineStart, type Timeline, type TimelineStart } from './timeline.js';

const { logLevel } = kafkajs;

const PRODUCE_VARIABLES = ['PRODUCE_PARTITIONS', 'PRODUCE_COMPRESSION', 'PRODUCE_BATCH'] as const;

const PRODUCE_HELP = [
  'streamstats-produce: loads a Kafka topic with the generator workload (Monasca points keyed by series).',
  '',
  'Usage: streamstats-produce            (configured by environment variables only)',
  '       streamstats-produce --help | --version',
  '',
  '  KAFKA_BROKERS        comma list of host:port (default 127.0.0.1:9092); KAFKA_SSL*, KAFKA_SASL* as for streamstats',
  '  KAFKA_TOPICS         the first topic is loaded (default metrics)',
  '  GEN_COUNT, GEN_METRICS, GEN_HOSTS, GEN_INTERVAL_SECONDS, GEN_SEED   the workload, as for streamstats',
  '  GEN_START            event time of the first point (ISO 8601). Unset: into an empty topic the timeline',
  '                       ends now (rows recent, no point in the future); into a topic that holds points it',
  '                       starts after the newest of them and not before now, so an engine that consumed',
  '                       and went idle takes it as new data, not late (refused if it would end beyond',
  '                       MAX_FUTURE_SECONDS). GEN_START=2020-02-11T12:42:13Z gives the fixed timeline of',
  '                       the engine\'s built-in generator',
  '  PRODUCE_PARTITIONS   partitions when the topic is created (default 4)',
  `  PRODUCE_COMPRESSION  ${KAFKA_COMPRESSIONS.join(' | ')} (default none; zstd needs Node >= 22.15)`,
  '  PRODUCE_BATCH        messages per batch (default 1000); a batch goes out in sends that fit the topic',
].join('\n');

/** The generator's timeline: rounds of GEN_METRICS x GEN_HOSTS points, GEN_INTERVAL_SECONDS apart. */
function generatorTimeline(gen: Pick<GeneratorConfig, 'count' | 'metrics' | 'hosts' | 'intervalMs'>): Timeline {
  const rounds = Math.max(1, Math.ceil(gen.count / (gen.metrics * gen.hosts)));
  // generatePoints jitters each point by up to min(1000, interval) ms after its round's time.
  return { stepMs: gen.intervalMs, steps: rounds - 1, jitterMs: Math.min(1000, gen.intervalMs) };
}

/** Longest the newest point of a topic is looked for (a consumer joins a group of its own to read it). */
const NEWEST_READ_MS = 15_000;

/**
 * The newest event time in the topic: the Monasca timestamp of each partition's last record (the
 * generator's points of a round lie within a second of each other, so the last in offset order is
 * within that of the newest). null when no partition ever held a record; 0 when one did and none is
 * readable now (deleted, not Monasca, or not read in NEWEST_READ_MS).
 */
async function newestEventTime(kafka: Kafka, admin: Admin, topic: string): Promise<number | null> {
  const offsets = await admin.fetchTopicOffsets(topic);
  if (offsets.every((o) => Number(o.high) === 0)) return null;
  const last = new Map(offsets.filter((o) => Number(o.high) > Number(o.low)).map((o) => [o.partition, Number(o.high) - 1]));
  if (last.size === 0) return 0;
  const groupId = `streamstats-produce-${randomBytes(6).toString('hex')}`;
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100, allowAutoTopicCreation: false });
  let newest = 0;
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic] });
    const read = new Promise<void>((resolve) => {
      void consumer.run({
        eachBatch: async ({ batch }) => {
          const want = last.get(batch.partition);
          const m = want === undefined ? undefined : batch.messages.find((x) => Number(x.offset) >= want);
          if (m === undefined) return;
          last.delete(batch.partition);
          newest = Math.max(newest, monascaTimestamp(m.value));
          if (last.size === 0) resolve();
        },
      });
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      for (const [partition, offset] of last) consumer.seek({ topic, partition, offset: String(offset) });
    });
    // Bounded by withTimeout, whose timer is cleared when the read wins: a bare sleep raced here kept
    // the process alive for NEWEST_READ_MS after the load had gone out. Not read in time: unreadable.
    await withTimeout(read, NEWEST_READ_MS, 'reading the newest point').catch((err: unknown) => {
      if (!(err instanceof TimeoutError)) throw err;
    });
  } finally {
    await consumer.disconnect().catch(() => {});
    await admin.deleteGroups([groupId]).catch(() => {});
  }
  return newest;
}

/** A Monasca point's timestamp (ms), or 0 when the value is not one. */
function monascaTimestamp(value: Buffer | null): number {
  try {
    const ts = (JSON.parse(value?.toString('utf8') ?? 'null') as { metric?: { timestamp?: unknown } } | null)?.metric?.timestamp;
    return typeof ts === 'number' && Number.isFinite(ts) ? ts : 0;
  } catch {
    return 0;
  }
}

interface ProduceOptions {
  partitions: number;
  compression: KafkaCompression;
  batch: number;
}

function parseProduceOptions(env: Readonly<Record<string, string | undefined>>): ProduceOptions {
  const int = (name: string, def: number, min: number, max: number) => {
    const s = env[name] ?? String(def);
    const n = Number(s);
    if (!/^\d+$/.test(s) || n < min || n > max) throw new ConfigError(name, s, `an integer from ${min} to ${max} is allowed`);
    return n;
  };
  const c = env['PRODUCE_COMPRESSION'] ?? 'none';
  const refusal = compressionRefusal(c);
  if (refusal !== null) throw new ConfigError('PRODUCE_COMPRESSION', c, `${refusal} is allowed`);
  return { partitions: int('PRODUCE_PARTITIONS', 4, 1, 10000), compression: c as KafkaCompression, batch: int('PRODUCE_BATCH', 1000, 1, 100000) };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(`${PRODUCE_HELP}\n`);
    return 0;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`${versionText('streamstats-produce')}\n`);
    return 0;
  }
  if (argv.length > 0) {
    // The name only, never what follows "=" (it may be a credential).
    const arg = argv[0]!.split('=')[0]!;
    process.stderr.write(`streamstats-produce: argument ${JSON.stringify(arg)} is not valid: no arguments but --help and --version are allowed (configure with environment variables, see --help)\n`);
    return 2;
  }
  let config;
  let opts: ProduceOptions;
  try {
    config = parseConfig({ ...process.env, SOURCE: 'kafka', KAFKA_TOPICS: process.env['KAFKA_TOPICS'] ?? 'metrics' });
    opts = parseProduceOptions(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`streamstats-produce: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const startText = process.env['GEN_START'];
  const fixedStart = startText !== undefined && startText.trim() !== '';
  const logger = createLogger(config.logLevel);
  const unknown = unknownVariables(process.env, PRODUCE_VARIABLES);
  const warning = unknownVariablesWarning(unknown);
  if (warning !== null) logger.warn({ variables: unknown.map((u) => u.name) }, warning);
  const kafka = kafkaClient(config.kafka, logger, { logLevel: logLevel.WARN });
  const topic = config.kafka.topics[0]!;
  const admin = kafka.admin();
  await admin.connect();
  // Asked first: createTopics on an existing topic works, but kafkajs logs it as an error.
  const created = (await admin.listTopics()).includes(topic)
    ? false
    : await admin.createTopics({ topics: [{ topic, numPartitions: opts.partitions }], waitForLeaders: true });
  // A batch is cut into sends that fit the topic's record-batch limit per partition (the partition
  // set here is the one the partitioner would pick), so a large PRODUCE_BATCH is never refused.
  const limits = new TopicLimits({ topic, admin: async () => admin, logger, withPartitions: true });
  await limits.read();
  let timeline: TimelineStart | null = null;
  try {
    if (!fixedStart) {
      const newest = created ? null : await newestEventTime(kafka, admin, topic);
      timeline = timelineStart(generatorTimeline(config.generator), Date.now(), newest, config.maxFutureSeconds, { name: 'GEN_COUNT', value: config.generator.count });
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`streamstats-produce: ${err.message}\n`);
    return 2;
  } finally {
    await admin.disconnect();
  }
  const generator = timeline === null ? config.generator : { ...config.generator, startMs: timeline.startMs };
  const budget = requestBudget(PRODUCER_DEFAULTS.maxRequestBytes, limits.maxMessageBytes);
  const partitions = limits.partitions;
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: JavaCompatiblePartitioner });
  await producer.connect();
  const started = performance.now();
  let sent = 0;
  let pending: Message[] = [];
  const flush = async () => {
    for (const messages of chunkMessages(pending, budget, RECORD_OVERHEAD_BYTES)) {
      await producer.send({ topic, acks: -1, compression: compressionCode(opts.compression), messages });
    }
    sent += pending.length;
    pending = [];
  };
  let first = Infinity;
  let last = -Infinity;
  for (const p of generatePoints(generator)) {
    first = Math.min(first, p.timestamp);
    last = Math.max(last, p.timestamp);
    const key = `${p.name}|agent_${p.host}`;
    pending.push(partitions > 0 ? { key, value: p.json, partition: partitionForKey(key, partitions) } : { key, value: p.json });
    if (pending.length >= opts.batch) await flush();
  }
  await flush();
  await producer.disconnect();
  const secs = (performance.now() - started) / 1000;
  process.stderr.write(
    `streamstats-produce: ${sent.toLocaleString('en-US')} messages to ${topic}` +
      `${created ? ` (created with ${opts.partitions} partitions)` : ''} in ${secs.toFixed(1)} s, compression ${opts.compression}` +
      `${sent > 0 ? `, event times ${new Date(first).toISOString()} .. ${new Date(last).toISOString()}${timeline === null ? ' (GEN_START)' : ` (${timeline.why})`}` : ''}\n`,
  );
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`streamstats-produce: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
