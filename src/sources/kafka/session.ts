// One consumer-group session: a kafkajs consumer and admin client from connect to disconnect. It
// reports the group's events to its owner and ends when stopped (resolves) or when the consumer
// crashed for good (rejects); crashes kafkajs restarts on its own stay inside the session.
//
// kafkajs facts this relies on (2.2.4): with autoCommit off nothing is committed but what the owner
// commits; commitOffsets is a no-op once the runner stops, so the final commit happens in onEnd,
// before disconnect(); disconnect() leaves the group.
import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { Signal, withTimeout } from '../../async/index.js';
import type { KafkaConfig } from '../../config/index.js';
import type { Metrics } from '../../metrics/index.js';
import { assignedPartitions, type TopicPartition } from './assignment.js';

export interface SessionHandlers {
  onJoin(tps: TopicPartition[], memberId: string): void;
  /** The group prepares to rebalance: the old generation may still commit. */
  onRebalancing(): void;
  /** The consumer crashed: out of the group until kafkajs restarts it (`restart`) or the session ends. */
  onCrash(restart: boolean): void;
  onBatch(payload: EachBatchPayload): Promise<void>;
  /** The session ends; `stopping`: stop() ended it, so drain and commit before the group is left. */
  onEnd(stopping: boolean): Promise<void>;
}

export interface SessionOptions {
  readonly kafka: KafkaConfig;
  readonly logger: Logger;
  readonly metrics: Pick<Metrics, 'kafkaConnected' | 'kafkaReconnects'>;
  readonly stop: Signal;
  readonly handlers: SessionHandlers;
}

export class GroupSession {
  readonly #o: SessionOptions;
  readonly #consumer: Consumer;
  readonly #admin: Admin;
  #connected = false;
  #joined = false;
  /** Raised once the session is over: retries it started (restore) stop. */
  readonly ended = new Signal();

  constructor(client: Pick<Kafka, 'consumer' | 'admin'>, o: SessionOptions) {
    const { kafka } = o;
    this.#o = o;
    this.#consumer = client.consumer({
      groupId: kafka.groupId,
      sessionTimeout: kafka.sessionTimeoutMs,
      heartbeatInterval: kafka.heartbeatIntervalMs,
      maxWaitTimeInMs: kafka.maxWaitMs,
      maxBytesPerPartition: kafka.maxBytesPerPartition,
      allowAutoTopicCreation: false,
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: Math.min(kafka.retryMaxMs, 30000) },
    });
    this.#admin = client.admin();
  }

  /** The consumer, once connected (commits and seeks go to it). */
  get consumer(): Consumer | null {
    return this.#connected ? this.#consumer : null;
  }

  /** The admin client, once connected (offsets and high watermarks are read through it). */
  get admin(): Admin | null {
    return this.#connected ? this.#admin : null;
  }

  /** For pause/resume: kafkajs refuses those itself until the consumer runs. */
  get flow(): Pick<Consumer, 'pause' | 'resume'> {
    return this.#consumer;
  }

  /** In the group with an assignment (false again after a crash until the next join). */
  get joined(): boolean {
    return this.#joined;
  }

  async run(): Promise<void> {
    const { kafka, logger, metrics, stop, handlers } = this.#o;
    const consumer = this.#consumer;
    let fail: (err: Error) => void = () => {};
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => {});
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      this.#joined = true;
      metrics.kafkaConnected.set(1);
      handlers.onJoin(assignedPartitions(e.payload.memberAssignment), e.payload.memberId);
    });
    consumer.on(consumer.events.REBALANCING, () => handlers.onRebalancing());
    consumer.on(consumer.events.CRASH, (e) => {
      this.#joined = false;
      metrics.kafkaConnected.set(0);
      handlers.onCrash(e.payload.restart);
      if (e.payload.restart) {
        // kafkajs reconnects on its own here: a reconnect attempt like the supervisor's.
        metrics.kafkaReconnects.inc();
        logger.warn({ err: e.payload.error }, 'kafka: consumer crashed; kafkajs restarts it');
      } else {
        fail(e.payload.error);
      }
    });
    try {
      if (stop.raised) return;
      await this.#admin.connect();
      await consumer.connect();
      this.#connected = true;
      await consumer.subscribe({ topics: kafka.topics, fromBeginning: kafka.from === 'earliest' });
      logger.info({ brokers: kafka.brokers, topics: kafka.topics, groupId: kafka.groupId }, 'kafka: consuming');
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: (payload) => handlers.onBatch(payload),
      });
      await Promise.race([stop.wait(), failed]);
    } finally {
      await handlers.onEnd(stop.raised && this.#connected);
      this.#joined = false;
      metrics.kafkaConnected.set(0);
      this.#connected = false;
      this.ended.raise();
      // Bounded, so a dead broker cannot hold shutdown.
      await withTimeout(consumer.disconnect(), 10_000, 'kafka consumer disconnect').catch((err: unknown) => logger.debug({ err }, 'kafka: consumer disconnect failed'));
      await withTimeout(this.#admin.disconnect(), 5_000, 'kafka admin disconnect').catch((err: unknown) => logger.debug({ err }, 'kafka: admin disconnect failed'));
    }
  }
}
