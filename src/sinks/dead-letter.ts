// Dead-letter outputs (contract in ./types.ts): every rejected record, with its reason and where it
// came from, to a file, stderr or a Kafka topic.
import type { Logger } from 'pino';
import type { DeadLetterSpec, KafkaConfig } from '../config/index.js';
import { KafkaDeadLetter } from './dead-letter-kafka.js';
import { NdjsonWriter } from './ndjson.js';
import type { DeadLetter } from './types.js';

export type { DeadLetter, DeadLetterEntry } from './types.js';

export function createDeadLetter(spec: DeadLetterSpec, deps: { logger: Logger; kafka: KafkaConfig }): DeadLetter {
  if (spec.kind === 'kafka') return new KafkaDeadLetter({ kafka: deps.kafka, topic: spec.topic, compression: spec.compression, logger: deps.logger });
  const w = spec.kind === 'stderr' ? new NdjsonWriter(process.stderr, false, 'stderr') : NdjsonWriter.toFile(spec.path);
  return {
    describe: w.describe,
    write: (entries) => w.writeLines(entries),
    close: () => w.close(),
  };
}
