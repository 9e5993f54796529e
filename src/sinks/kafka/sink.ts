// Kafka statistics sink: one JSON message per row, keyed by the row's identity (./messages.ts), sent
// through one lane and producer per input partition (./lanes.ts).
//
// Rows no topic can take never reach the broker: a row over the topic's max.message.bytes (read from
// the broker) is returned as rejected. When the broker still refuses records (MESSAGE_TOO_LARGE: the
// limit was lowered meanwhile), the limit is read again, the rows over it are rejected and the rest
// retried once with a fresh producer (src/kafka/refusals.ts).
//
// Two modes:
// - at-least-once (default): one idempotent producer per lane, acks=-1; write() resolves once
//   acknowledged (./writes.ts).
// - exactly-once: the queued writes of an input partition run as one transaction with the input
//   offset (./transactions.ts); readPositions() claims the input partitions before reading the
//   group's committed offsets back (./positions.ts).
import type { Kafka } from 'kafkajs';
import { StreamstatsError } from '../../errors.js';
import { kafkaClient, LazyAdmin } from '../../kafka/client.js';
import { compressionCode } from '../../kafka/compression.js';
import { JavaCompatiblePartitioner } from '../../kafka/partitioner.js';
import { installProduceEncoder } from '../../kafka/produce-request.js';
import { disconnectTimeoutMs, ProducerSet } from '../../kafka/producer.js';
import { requestBudget } from '../../kafka/requests.js';
import { TopicLimits } from '../../kafka/topics.js';
import { SharedRecordLayout } from './row-records.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import { WRITTEN_ALL, type Sink, type SinkCommit, type SinkWriteResult } from '../types.js';
import { Lanes } from './lanes.js';
import { encodeRows, type EncodedRows } from './messages.js';
import { KAFKA_SINK_DEFAULTS, validateKafkaSinkOptions, type KafkaSinkOptions } from './options.js';
import { readPositions } from './positions.js';
import { transactionalId, writeTransaction } from './transactions.js';
import { writeIdempotent, type GroupWriteContext } from './writes.js';

export class KafkaSink implements Sink {
  readonly describe: string;
  /** Exactly-once: the commit points travel in the sink's transactions (as the group's offsets); readPositions() reads them back. */
  readonly positions: PositionStore | undefined;
  readonly pipelined = true;
  readonly readsRowBytes = true;
  readonly readsIdentityKeys = true;
  /** The output topic's partitions and request budget as last read, for the workers that write rows as records. */
  readonly recordLayout: SharedArrayBuffer;
  readonly #layout = new SharedRecordLayout();
  readonly wholeEmissions: boolean;
  readonly #o: KafkaSinkOptions;
  readonly #admin: LazyAdmin;
  readonly #limits: TopicLimits;
  #limitReread = false;
  readonly #producers: ProducerSet;
  readonly #context: GroupWriteContext;
  readonly #lanes: Lanes<EncodedRows>;
  #closing: Promise<void> | null = null;

  constructor(opts: KafkaSinkOptions) {
    validateKafkaSinkOptions(opts);
    // In time for the request encoder (kafkajs loads it on the first produce); the grouping that takes
    // our batches must already be in place (src/kafka/preload.ts), else rows go as kafkajs messages.
    if (!installProduceEncoder()) opts.logger.warn('kafka: kafkajs was loaded before src/kafka/preload.js (or is not 2.2.4): rows are sent as kafkajs messages, at several times the CPU per row');
    this.#o = opts;
    const kafka = kafkaClient(opts.kafka, opts.logger);
    this.#admin = new LazyAdmin(kafka);
    this.#limits = new TopicLimits({ topic: opts.topic, admin: () => this.#admin.get(), logger: opts.logger, withPartitions: true });
    this.positions = opts.exactlyOnce ? this : undefined;
    this.recordLayout = this.#layout.buffer;
    this.wholeEmissions = opts.exactlyOnce === true;
    this.describe = `kafka:${opts.topic}${opts.exactlyOnce ? ' (exactly-once)' : ''}`;
    this.#producers = new ProducerSet(kafka, opts.logger, producerFactory(opts));
    this.#context = {
      topic: opts.topic,
      groupId: opts.groupId,
      codec: compressionCode(opts.compression ?? KAFKA_SINK_DEFAULTS.compression),
      maxRequestBytes: opts.maxRequestBytes ?? KAFKA_SINK_DEFAULTS.maxRequestBytes,
      producers: this.#producers,
      limits: this.#limits,
      logger: opts.logger,
    };
    const write = opts.exactlyOnce ? writeTransaction : writeIdempotent;
    this.#lanes = new Lanes<EncodedRows>(
      opts.maxTransactionBytes ?? KAFKA_SINK_DEFAULTS.maxTransactionBytes,
      (id, group) => write(this.#context, id, group),
      () => this.#afterGroup(),
    );
  }

  /** The transactional id for an input partition (exactly-once). */
  transactionalId(topic: string, partition: number): string {
    return transactionalId(this.#o.groupId, topic, partition);
  }

  async write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    if (this.#closing !== null) throw new StreamstatsError('STREAMSTATS_SINK', `kafka: write to ${this.#o.topic} after close()`);
    await this.#limits.read();
    this.#layout.set({ partitions: this.#limits.partitions, budget: requestBudget(this.#context.maxRequestBytes, this.#limits.maxMessageBytes) });
    // Encoded before anything else reads the batch: its rows as objects are never made here.
    const rows = encodeRows(batch, this.#o.topic, this.#limits);
    if (rows.rowCount === 0 && (commit === undefined || !this.#o.exactlyOnce)) return WRITTEN_ALL;
    if (rows.count === 0 && (commit === undefined || !this.#o.exactlyOnce)) return { rejected: rows.rejected };
    return this.#lanes.enqueue(this.#laneId(batch, commit), rows, rows.rowCount, commit);
  }

  /**
   * One producer (and lane) per input partition in both modes: exactly-once needs it for fencing, and
   * at-least-once gets requests in flight side by side (kafkajs's idempotent producer allows only one
   * at a time). A row identity belongs to one input partition, so its rows stay in order.
   */
  #laneId(batch: RowBatch, commit: SinkCommit | undefined): string {
    // Without a commit (unpartitioned source) the rows still say which input partition they belong
    // to when there is one; otherwise one producer for the whole group.
    // Rows are read (made as objects) only for a batch that does not say its lane.
    const input = commit ?? ('where' in batch ? batch.where : rowLane(batch.rows[0]));
    if (!this.#o.exactlyOnce) return input === undefined ? 'rows' : `rows.${input.topic}.${input.partition}`;
    return input !== undefined ? this.transactionalId(input.topic, input.partition) : `${this.#o.groupId}.rows`;
  }

  #afterGroup(): void {
    // An auto-created topic did not exist when its limit and partitions were first read.
    if (this.#limits.partitions === 0 && !this.#limitReread) {
      this.#limitReread = true;
      void this.#limits.read(true);
    }
  }

  /** Exactly-once only (./positions.ts); at least once, the source uses the group's commits. */
  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, CommitPoint>> {
    if (!this.#o.exactlyOnce) return new Map();
    const transactionTimeoutMs = this.#o.transactionTimeoutMs ?? KAFKA_SINK_DEFAULTS.transactionTimeoutMs;
    return readPositions({ groupId: this.#o.groupId, producers: this.#producers, admin: () => this.#admin.get(), transactionTimeoutMs }, topic, partitions);
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const timeoutMs = this.#o.closeTimeoutMs ?? KAFKA_SINK_DEFAULTS.closeTimeoutMs;
      await this.#producers.close(timeoutMs);
      await this.#admin.close(disconnectTimeoutMs(timeoutMs));
    })();
    return this.#closing;
  }
}

/** Idempotent producers, transactional ones (the id is the transactionalId) in exactly-once mode. */
function producerFactory(o: KafkaSinkOptions): ConstructorParameters<typeof ProducerSet>[2] {
  const transactionTimeout = o.transactionTimeoutMs ?? KAFKA_SINK_DEFAULTS.transactionTimeoutMs;
  return (kafka: Kafka, id: string) =>
    o.exactlyOnce
      ? {
          producer: kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, transactionTimeout, createPartitioner: JavaCompatiblePartitioner }),
          transactional: true,
        }
      : { producer: kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: JavaCompatiblePartitioner }), transactional: false };
}

/** The input partition a row says it belongs to, if it says one. */
function rowLane(row: StatsRow | undefined): { topic: string; partition: number } | undefined {
  return row?.topic !== undefined && row.partition !== undefined ? { topic: row.topic, partition: row.partition } : undefined;
}
