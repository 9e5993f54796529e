// Dead-letter output: every rejected record, with its reason and where it came from.
// Nothing is dropped silently: if this output fails, the engine stops (see pipeline).
import type { DeadLetterSpec } from '../config/index.js';
import type { RejectReason } from '../core/messages.js';
import { NdjsonWriter } from './ndjson.js';
import { KafkaDeadLetter } from './dead-letter-kafka.js';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config/index.js';

export interface DeadLetterEntry {
  time: string;
  reason: RejectReason;
  detail: string;
  source: string;
  partition: number;
  /** Source position of the message (Kafka offset), when the source has one. */
  offset?: string;
  /** Index of the message in its batch and of the record in a JSON-array message (-1 = whole message). */
  batch_seq: number;
  message_index: number;
  element: number;
  /** The rejected bytes: UTF-8 text, or base64 when they were not valid UTF-8 (value_encoding says which). */
  value: string;
  value_encoding: 'utf8' | 'base64';
  /** Set when `value` holds only the first bytes of what was rejected; value_bytes is the whole size. */
  value_truncated?: true;
  value_bytes?: number;
  key?: string;
  /** Kafka source: the record's topic and partition (partition above is the engine's own id). */
  topic?: string;
  kafka_partition?: number;
}

export interface DeadLetter {
  readonly describe: string;
  write(entries: readonly DeadLetterEntry[]): Promise<void>;
  close(): Promise<void>;
}

export function createDeadLetter(spec: DeadLetterSpec, deps: { logger: Logger; kafka: KafkaConfig }): DeadLetter {
  if (spec.kind === 'kafka') return new KafkaDeadLetter({ kafka: deps.kafka, topic: spec.topic, compression: spec.compression, logger: deps.logger });
  const w = spec.kind === 'stderr' ? new NdjsonWriter(process.stderr, false, 'stderr') : NdjsonWriter.toFile(spec.path);
  return {
    describe: w.describe,
    write: (entries) => w.writeLines(entries),
    close: () => w.close(),
  };
}
