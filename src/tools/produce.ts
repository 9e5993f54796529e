#!/usr/bin/env node
// streamstats-produce: loads a topic with the generator workload (seed 000's Monasca points), keyed by
// series so that a series stays in one partition. For tests, benchmarks and demos.
// Configured by the environment only (see --help); any argument but --help and --version is refused
// before a connection is made, so a mistyped invocation never loads a topic.
// First: our producer path must be in kafkajs's module cache before kafkajs loads.
import '../kafka/preload.js';
import kafkajs, { type Message } from 'kafkajs';
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
  '  GEN_START            event time of the first point (ISO 8601); unset = the timeline ends now, so',
  '                       the rows are recent and no point is in the future (GEN_START=2020-02-11T12:42:13Z',
  '                       gives the fixed timeline of the engine\'s built-in generator)',
  '  PRODUCE_PARTITIONS   partitions when the topic is created (default 4)',
  `  PRODUCE_COMPRESSION  ${KAFKA_COMPRESSIONS.join(' | ')} (default none; zstd needs Node >= 22.15)`,
  '  PRODUCE_BATCH        messages per batch (default 1000); a batch goes out in sends that fit the topic',
].join('\n');

/**
 * The default start: the whole timeline in the past, its last point at most `nowMs`. Starting at
 * now instead would put the load up to GEN_COUNT / (GEN_METRICS x GEN_HOSTS) x GEN_INTERVAL_SECONDS
 * into the future: the last window stays open until the wall clock gets there (holding back
 * commits), and a big GEN_COUNT passes MAX_FUTURE_SECONDS and is rejected as future_timestamp.
 */
function recentStartMs(gen: Pick<GeneratorConfig, 'count' | 'metrics' | 'hosts' | 'intervalMs'>, nowMs: number): number {
  const rounds = Math.max(1, Math.ceil(gen.count / (gen.metrics * gen.hosts)));
  // generatePoints jitters each point by up to min(1000, interval) ms after its round's time.
  const start = nowMs - (rounds - 1) * gen.intervalMs - Math.min(1000, gen.intervalMs);
  return Math.floor(start / 1000) * 1000;
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
  const generator = startText === undefined || startText.trim() === ''
    ? { ...config.generator, startMs: recentStartMs(config.generator, Date.now()) }
    : config.generator;
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
  await admin.disconnect();
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
      `${sent > 0 ? `, event times ${new Date(first).toISOString()} .. ${new Date(last).toISOString()}` : ''}\n`,
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
