// The statistics sink's options: the producer options every Kafka output shares, plus its own.
import { invalidOption, PRODUCER_DEFAULTS, validateProducerOptions, type ProducerOptions } from '../../kafka/producer.js';

export interface KafkaSinkOptions extends ProducerOptions {
  /** Output topic (OUTPUT_TOPIC). */
  readonly topic: string;
  readonly exactlyOnce: boolean;
  /** The source's consumer group: offsets are committed to it, and it prefixes transactional ids. */
  readonly groupId: string;
  /** Broker-side limit for an open transaction (kafkajs default 60 s; broker max 15 min by default). */
  readonly transactionTimeoutMs?: number;
  /** Queued writes of a lane go out together up to this many key+value bytes (one request series / transaction). */
  readonly maxTransactionBytes?: number;
}

export const KAFKA_SINK_DEFAULTS = {
  ...PRODUCER_DEFAULTS,
  transactionTimeoutMs: 60_000,
  maxTransactionBytes: 8 * 1024 * 1024,
} as const;

export function validateKafkaSinkOptions(o: KafkaSinkOptions): void {
  validateProducerOptions(o);
  if (o.exactlyOnce && o.groupId === '') throw invalidOption('groupId', o.groupId, 'exactly-once needs the consumer group id');
  if (o.transactionTimeoutMs !== undefined && !(Number.isInteger(o.transactionTimeoutMs) && o.transactionTimeoutMs >= 1000)) {
    throw invalidOption('transactionTimeoutMs', o.transactionTimeoutMs, 'an integer >= 1000');
  }
  if (o.maxTransactionBytes !== undefined && !(Number.isInteger(o.maxTransactionBytes) && o.maxTransactionBytes >= 1024)) {
    throw invalidOption('maxTransactionBytes', o.maxTransactionBytes, 'an integer >= 1024');
  }
}
