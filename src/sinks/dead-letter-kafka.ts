// Dead letters to a Kafka topic (DLQ_TOPIC): each rejected record as a message with its original key
// and value bytes, and what happened to it in headers, so the topic can be replayed or inspected with
// any Kafka tool. One idempotent producer, acks=-1: write() resolves once the broker has the entries.
//
// Headers (UTF-8 strings):
//   streamstats-reason          the reject reason (malformed_json, late, ...)
//   streamstats-detail          what was wrong, where
//   streamstats-source          the source's description (e.g. "kafka:metrics")
//   streamstats-source-topic    the Kafka topic, when known (entry.topic, else a one-topic entry.source)
//   streamstats-source-partition the Kafka partition, when known (entry.kafka_partition)
//   streamstats-source-offset   the Kafka offset, when the source has one
//   streamstats-element         the record's index in a JSON-array message (absent for a whole message)
//   streamstats-time            when it was rejected (ISO 8601)
//   streamstats-truncated       present when the value was cut to fit the topic: the original size in bytes
// The value is the entry's bytes: the whole message, or for a record inside a JSON-array message
// that record's JSON text. Headers of the original message are not kept (the entry does not carry them).
// A dead letter is never refused for its size: one that would not fit the topic's max.message.bytes
// (read from the broker, and read again when the broker refuses a send: it was lowered meanwhile) is
// cut, detail first, then value, and flagged.
import type { IHeaders, Message } from 'kafkajs';
import { StreamstatsError } from '../errors.js';
import { kafkaClient, LazyAdmin } from '../kafka/client.js';
import { compressionCode } from '../kafka/compression.js';
import { JavaCompatiblePartitioner } from '../kafka/partitioner.js';
import { disconnectTimeoutMs, PRODUCER_DEFAULTS, ProducerSet, validateProducerOptions, type ProducerOptions } from '../kafka/producer.js';
import { rowLevelRefusal } from '../kafka/errors.js';
import { RecordsRefused, sendAgainAfterRefusal } from '../kafka/refusals.js';
import { chunkMessages, messageBytes, RECORD_OVERHEAD_BYTES, requestBudget } from '../kafka/requests.js';
import { TopicLimits } from '../kafka/topics.js';
import type { DeadLetter, DeadLetterEntry } from './types.js';

export interface KafkaDeadLetterOptions extends ProducerOptions {
  /** DLQ_TOPIC. */
  readonly topic: string;
}

export const DLQ_HEADERS = {
  reason: 'streamstats-reason',
  detail: 'streamstats-detail',
  source: 'streamstats-source',
  sourceTopic: 'streamstats-source-topic',
  sourcePartition: 'streamstats-source-partition',
  sourceOffset: 'streamstats-source-offset',
  element: 'streamstats-element',
  time: 'streamstats-time',
  truncated: 'streamstats-truncated',
} as const;

/** The detail header is cut at this many characters when a dead letter must shrink to fit. */
const MAX_DETAIL_CHARS = 1024;



/** A dead letter as built from its entry, and as cut to fit the topic's limit last read. */
interface Letter {
  readonly original: Message;
  readonly m: Message;
}

/**
 * Cuts a dead-letter message so that key, value and headers fit in maxBytes (minus record overhead):
 * the detail header first, then the value, flagged with streamstats-truncated = original value size.
 */
function fitDeadLetter(m: Message, maxBytes: number): Message {
  if (messageBytes(m) + RECORD_OVERHEAD_BYTES <= maxBytes) return m;
  const value = m.value as Buffer;
  const key = m.key as Buffer | null;
  const headers = { ...(m.headers ?? {}) };
  const detail = headers[DLQ_HEADERS.detail];
  if (typeof detail === 'string' && detail.length > MAX_DETAIL_CHARS) headers[DLQ_HEADERS.detail] = `${detail.slice(0, MAX_DETAIL_CHARS)}...`;
  headers[DLQ_HEADERS.truncated] = String(value.length);
  const room = Math.max(0, maxBytes - (messageBytes({ key, value: null, headers }) + RECORD_OVERHEAD_BYTES));
  return { key, value: value.subarray(0, Math.min(value.length, room)), headers };
}

/** The Kafka topic of an entry: its own field, else the source description when it names one topic. */
function sourceTopic(e: DeadLetterEntry): string | undefined {
  if (e.topic !== undefined) return e.topic;
  const m = /^kafka:([^,]+)$/.exec(e.source);
  return m?.[1];
}

/** The entry as the message it came from, plus headers. */
function deadLetterMessage(e: DeadLetterEntry): Message {
  const headers: IHeaders = {
    [DLQ_HEADERS.reason]: e.reason,
    [DLQ_HEADERS.detail]: e.detail,
    [DLQ_HEADERS.source]: e.source,
    [DLQ_HEADERS.time]: e.time,
  };
  const topic = sourceTopic(e);
  if (topic !== undefined) headers[DLQ_HEADERS.sourceTopic] = topic;
  if (e.kafka_partition !== undefined) headers[DLQ_HEADERS.sourcePartition] = String(e.kafka_partition);
  if (e.offset !== undefined) headers[DLQ_HEADERS.sourceOffset] = e.offset;
  if (e.element >= 0) headers[DLQ_HEADERS.element] = String(e.element);
  if (e.value_truncated === true) headers[DLQ_HEADERS.truncated] = String(e.value_bytes ?? '');
  return {
    key: e.key === undefined ? null : Buffer.from(e.key, 'base64'),
    // An empty value (a tombstone, reason empty_message) is kept as an empty value, not null: a null
    // would delete the key's earlier dead letters from a compacted DLQ topic.
    value: Buffer.from(e.value, e.value_encoding === 'base64' ? 'base64' : 'utf8'),
    headers,
  };
}

export class KafkaDeadLetter implements DeadLetter {
  readonly describe: string;
  readonly #o: KafkaDeadLetterOptions;
  readonly #producers: ProducerSet;
  readonly #codec: number;
  readonly #limits: TopicLimits;
  #closing: Promise<void> | null = null;

  constructor(opts: KafkaDeadLetterOptions) {
    validateProducerOptions(opts);
    this.#o = opts;
    this.#codec = compressionCode(opts.compression ?? PRODUCER_DEFAULTS.compression);
    this.describe = `kafka:${opts.topic}`;
    const kafka = kafkaClient(opts.kafka, opts.logger);
    // The limit is read once: the admin connection is not kept for it.
    const admin = new LazyAdmin(kafka);
    this.#limits = new TopicLimits({ topic: opts.topic, admin: () => admin.get(), logger: opts.logger, withPartitions: false, after: () => admin.close(disconnectTimeoutMs(opts.closeTimeoutMs ?? PRODUCER_DEFAULTS.closeTimeoutMs)) });
    this.#producers = new ProducerSet(kafka, opts.logger, (kafka) => ({
      producer: kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: JavaCompatiblePartitioner }),
      transactional: false,
    }));
  }

  async write(entries: readonly DeadLetterEntry[]): Promise<void> {
    if (entries.length === 0) return;
    await this.#limits.read();
    const fit = (original: Message, max: number): Letter => ({ original, m: fitDeadLetter(original, max) });
    const letters = entries.map((e) => fit(deadLetterMessage(e), this.#limits.maxMessageBytes));
    // The topic's limit was lowered since it was read: the unsent dead letters are cut again, from
    // their original bytes, to the limit read again.
    await sendAgainAfterRefusal(letters, this.#limits, (xs) => this.#send(xs, entries.length), (unsent, max) => {
      const again = unsent.map((x) => fit(x.original, max));
      return again.some((x, i) => messageBytes(x.m) < messageBytes(unsent[i]!.m)) ? again : null;
    });
  }

  #send(letters: readonly Letter[], entries: number): Promise<void> {
    const max = this.#limits.maxMessageBytes;
    // Unkeyed dead letters may share a partition: cut requests by the topic's record-batch limit too.
    const chunks = chunkMessages(letters.map((x) => x.m), requestBudget(this.#o.maxRequestBytes ?? PRODUCER_DEFAULTS.maxRequestBytes, max), RECORD_OVERHEAD_BYTES);
    return this.#producers.run('dead-letters', async (producer, slot) => {
      let sent = 0;
      try {
        for (const messages of chunks) {
          await producer.send({ topic: this.#o.topic, acks: -1, compression: this.#codec, messages });
          sent += messages.length;
        }
      } catch (err) {
        // A failed idempotent send leaves kafkajs's sequence numbers out of step: start afresh.
        void this.#producers.discard(slot);
        const failure = new StreamstatsError('STREAMSTATS_SINK', `kafka: writing ${entries} dead letters to ${this.#o.topic} failed: ${(err as Error).message}`, { cause: err, canRetry: true });
        const why = rowLevelRefusal(err);
        throw why === null ? failure : new RecordsRefused(why, failure, sent);
      }
    });
  }

  close(): Promise<void> {
    this.#closing ??= this.#producers.close(this.#o.closeTimeoutMs ?? PRODUCER_DEFAULTS.closeTimeoutMs);
    return this.#closing;
  }
}
