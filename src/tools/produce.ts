#!/usr/bin/env node
// streamstats-produce: loads a topic with the generator workload (seed 000's Monasca points), keyed by
// series so that a series stays in one partition. For tests, benchmarks and demos.
//   KAFKA_BROKERS, KAFKA_TOPICS (the first topic is loaded), GEN_* as for the engine, and
//   PRODUCE_PARTITIONS (topic created with this many partitions when missing, default 4),
//   PRODUCE_COMPRESSION (none | gzip | snappy | lz4), PRODUCE_BATCH (messages per send).
import kafkajs from 'kafkajs';
import { parseConfig } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { generatePoints } from '../sources/generator.js';
import { registerCodecs } from '../kafka/codecs.js';
import { kafkajsConfig } from '../kafka/client.js';
import { createLogger } from '../logger.js';

const { CompressionTypes, Kafka, logLevel, Partitioners } = kafkajs;

const COMPRESSION = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4 } as const;

export interface ProduceOptions {
  partitions: number;
  compression: keyof typeof COMPRESSION;
  batch: number;
}

export function parseProduceOptions(env: Readonly<Record<string, string | undefined>>): ProduceOptions {
  const int = (name: string, def: number, min: number, max: number) => {
    const s = env[name] ?? String(def);
    const n = Number(s);
    if (!/^\d+$/.test(s) || n < min || n > max) throw new ConfigError(name, s, `an integer from ${min} to ${max} is allowed`);
    return n;
  };
  const c = env['PRODUCE_COMPRESSION'] ?? 'none';
  if (!(c in COMPRESSION)) throw new ConfigError('PRODUCE_COMPRESSION', c, `one of ${Object.keys(COMPRESSION).join(', ')} is allowed`);
  return { partitions: int('PRODUCE_PARTITIONS', 4, 1, 10000), compression: c as keyof typeof COMPRESSION, batch: int('PRODUCE_BATCH', 1000, 1, 100000) };
}

async function main(): Promise<number> {
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
  const logger = createLogger(config.logLevel);
  registerCodecs();
  const kafka = new Kafka({ ...kafkajsConfig(config.kafka, logger), logLevel: logLevel.WARN });
  const topic = config.kafka.topics[0]!;
  const admin = kafka.admin();
  await admin.connect();
  const created = await admin.createTopics({ topics: [{ topic, numPartitions: opts.partitions }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const started = performance.now();
  let sent = 0;
  let pending: Array<{ key: string; value: string }> = [];
  const flush = async () => {
    if (pending.length === 0) return;
    await producer.send({ topic, acks: -1, compression: COMPRESSION[opts.compression], messages: pending });
    sent += pending.length;
    pending = [];
  };
  for (const p of generatePoints(config.generator)) {
    pending.push({ key: `${p.name}|agent_${p.host}`, value: p.json });
    if (pending.length >= opts.batch) await flush();
  }
  await flush();
  await producer.disconnect();
  const secs = (performance.now() - started) / 1000;
  process.stderr.write(
    `streamstats-produce: ${sent.toLocaleString('en-US')} messages to ${topic}` +
      `${created ? ` (created with ${opts.partitions} partitions)` : ''} in ${secs.toFixed(1)} s, compression ${opts.compression}\n`,
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
