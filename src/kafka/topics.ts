// Kafka topic names and the per-topic limits a producer must respect. The name rule is pure (the
// config validates OUTPUT_TOPIC, DLQ_TOPIC and KAFKA_TOPICS with it); kafkajs is imported for types only.
import type { Admin } from 'kafkajs';
import type { Logger } from 'pino';

/** A legal topic name: Kafka's own rule (letters, digits, ".", "_", "-"; at most 249 characters). */
export const TOPIC_NAME_PATTERN = /^[A-Za-z0-9._-]{1,249}$/;

/** The "allowed" half of an error message about a topic name. */
export const TOPIC_NAME_RULE = 'a topic name of letters, digits, ".", "_" and "-" (at most 249)';

export function validTopicName(name: string): boolean {
  return TOPIC_NAME_PATTERN.test(name);
}

/** The broker's default max.message.bytes, used until the topic's own value is read. */
export const BROKER_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** A topic's max.message.bytes as the broker reports it (topic override or broker default); null if unknown. */
async function topicMaxMessageBytes(admin: Admin, topic: string): Promise<number | null> {
  const res = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: topic, configNames: ['max.message.bytes'] }] });
  const v = Number(res.resources[0]?.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue);
  return Number.isFinite(v) && v > 0 ? v : null;
}

/**
 * A topic's max.message.bytes (and, when asked for, its partition count), read once and again on
 * request (after the broker refused records: the limit was lowered meanwhile). Until read, or when
 * it cannot be read (the topic does not exist yet, describe is denied), the broker default holds.
 */
export class TopicLimits {
  maxMessageBytes = BROKER_DEFAULT_MAX_MESSAGE_BYTES;
  /** 0 = not known (not asked for, or the topic did not exist when read). */
  partitions = 0;
  #read: Promise<void> | null = null;

  constructor(
    private readonly o: {
      readonly topic: string;
      readonly admin: () => Promise<Admin>;
      readonly logger: Logger;
      readonly withPartitions: boolean;
      /** Called after each read attempt (e.g. to disconnect a one-shot admin). */
      readonly after?: () => Promise<void>;
    },
  ) {}

  read(refresh = false): Promise<void> {
    if (refresh) this.#read = null;
    this.#read ??= (async () => {
      try {
        const admin = await this.o.admin();
        const v = await topicMaxMessageBytes(admin, this.o.topic);
        if (v !== null) this.maxMessageBytes = v;
        if (this.o.withPartitions) {
          const meta = await admin.fetchTopicMetadata({ topics: [this.o.topic] });
          this.partitions = meta.topics[0]?.partitions.length ?? 0;
        }
      } catch (err) {
        this.o.logger.debug({ err, topic: this.o.topic }, 'kafka: cannot read max.message.bytes; assuming the broker default');
      } finally {
        await this.o.after?.();
      }
    })();
    return this.#read;
  }
}
