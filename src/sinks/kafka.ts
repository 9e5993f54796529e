// Kafka statistics sink: one JSON message per row, keyed by the row's identity, so a compacted topic
// keeps the latest row per window and the default (murmur2) partitioner keeps one identity in one
// partition.
//
// Two modes:
// - at-least-once (default): one idempotent producer, acks=-1; write() resolves once acknowledged.
// - exactly-once: write(batch, commit) runs ONE transaction: the rows, then the input partition's
//   offset (with the same metadata the Kafka source commits: {"v":1,"wm":…,"hi":…}) via
//   sendOffsets, then commit. kafkajs 2.2.4 sends TxnOffsetCommit v0/v1, which carry no group
//   generation (no KIP-447 fencing), so the old pattern is used: one transactional producer per
//   input partition, transactionalId `${groupId}.${topic}.${partition}`; a new owner's InitProducerId
//   fences the previous one (its next transaction fails with INVALID_PRODUCER_EPOCH) and aborts or
//   completes whatever transaction it left open. readPositions() does that claim before reading the
//   group's committed offsets, so a partition resumes after everything a zombie could still commit.
import kafkajs, { type Kafka, type Message, type PartitionOffset, type Producer } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config/index.js';
import { StreamstatsError } from '../errors.js';
import { formatCommitMeta, parseCommitMeta } from '../commit-meta.js';
import { kafkajsConfig } from '../kafka/client.js';
import { registerCodecs } from '../kafka/codecs.js';
import type { RowBatch, StatsRow } from '../windows/row.js';
import { WRITTEN_ALL, type PartitionPositions, type Sink, type SinkCommit, type SinkWriteResult } from './types.js';

const { CompressionTypes, Partitioners } = kafkajs;

export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4'] as const;
export type KafkaCompression = (typeof KAFKA_COMPRESSIONS)[number];

const CODECS: Record<KafkaCompression, number> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
};

/** A kafkajs client, or our Kafka settings to build one (its logs then go to `logger`). */
export type KafkaClientSpec = Kafka | KafkaConfig;

export interface KafkaSinkOptions {
  readonly kafka: KafkaClientSpec;
  /** Output topic (OUTPUT_TOPIC). */
  readonly topic: string;
  readonly exactlyOnce: boolean;
  /** The source's consumer group: offsets are committed to it, and it prefixes transactional ids. */
  readonly groupId: string;
  readonly compression?: KafkaCompression;
  readonly logger: Logger;
  /** Broker-side limit for an open transaction (kafkajs default 60 s; broker max 15 min by default). */
  readonly transactionTimeoutMs?: number;
  /** Rows per produce request are cut at this many key+value bytes (the broker's message.max.bytes is 1 MiB by default). */
  readonly maxRequestBytes?: number;
  /** close() gives in-flight writes this long, then disconnects anyway. */
  readonly closeTimeoutMs?: number;
}

export const KAFKA_SINK_DEFAULTS = {
  compression: 'none' as KafkaCompression,
  transactionTimeoutMs: 60_000,
  maxRequestBytes: 512 * 1024,
  closeTimeoutMs: 10_000,
} as const;

const TOPIC_RE = /^[A-Za-z0-9._-]{1,249}$/;

function invalid(option: string, value: unknown, allowed: string): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_CONFIG', `kafka sink: ${option} (${JSON.stringify(value)}) is not valid: ${allowed}`);
}

/** The one validator of the options shared by the statistics and dead-letter producers. */
export function validateProducerOptions(o: { topic: string; compression?: string | undefined; maxRequestBytes?: number | undefined; closeTimeoutMs?: number | undefined }): void {
  if (!TOPIC_RE.test(o.topic)) throw invalid('topic', o.topic, 'a topic name of letters, digits, ".", "_" and "-" (at most 249) is allowed');
  if (o.compression !== undefined && !(KAFKA_COMPRESSIONS as readonly string[]).includes(o.compression)) {
    throw invalid('compression', o.compression, `one of ${KAFKA_COMPRESSIONS.join(', ')} (zstd is consumed, never produced)`);
  }
  if (o.maxRequestBytes !== undefined && !(Number.isInteger(o.maxRequestBytes) && o.maxRequestBytes >= 1024)) {
    throw invalid('maxRequestBytes', o.maxRequestBytes, 'an integer >= 1024');
  }
  if (o.closeTimeoutMs !== undefined && !(Number.isFinite(o.closeTimeoutMs) && o.closeTimeoutMs >= 0)) {
    throw invalid('closeTimeoutMs', o.closeTimeoutMs, 'a number of milliseconds >= 0');
  }
}

function isClient(k: KafkaClientSpec): k is Kafka {
  return typeof (k as Partial<Kafka>).producer === 'function';
}

export function kafkaClient(spec: KafkaClientSpec, logger: Logger): Kafka {
  registerCodecs();
  return isClient(spec) ? spec : new kafkajs.Kafka(kafkajsConfig(spec, logger));
}

export function compressionCodec(c: KafkaCompression | undefined): number {
  return CODECS[c ?? KAFKA_SINK_DEFAULTS.compression];
}

/**
 * The message key of a row: JSON of [topic, partition, name, groupby pairs sorted by name, period_start],
 * with topic and partition null for an unpartitioned source. Example:
 * `["metrics",3,"cpu.idle_perc",[["hostname","h1"],["service","monitoring"]],"2020-02-11T12:42:00.000Z"]`.
 * The unit is not part of it (as in the PostgreSQL sink's upsert key): two series that differ only
 * in unit share a key.
 */
export function rowIdentityKey(r: StatsRow): string {
  const g = Object.keys(r.groupby).sort().map((k) => [k, r.groupby[k] ?? null]);
  return JSON.stringify([r.topic ?? null, r.partition ?? null, r.name, g, r.period_start]);
}

/** Splits messages into sends of at most maxBytes of keys and values (a single larger message goes alone). */
export function chunkMessages(messages: readonly Message[], maxBytes: number): Message[][] {
  const out: Message[][] = [];
  let cur: Message[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = byteLength(m.key) + byteLength(m.value);
    if (cur.length > 0 && bytes + size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(m);
    bytes += size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

function byteLength(v: Buffer | string | null | undefined): number {
  if (v === null || v === undefined) return 0;
  return typeof v === 'string' ? Buffer.byteLength(v) : v.length;
}

export function commitMetadata(c: SinkCommit): string {
  return formatCommitMeta(c.point);
}

const FENCING_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

/** True when a newer producer with the same transactionalId took over (checked along the cause chain). */
export function isFencingError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    const x = e as { type?: unknown; code?: unknown; cause?: unknown; originalError?: unknown };
    if (typeof x.type === 'string' && FENCING_TYPES.has(x.type)) return true;
    if (x.code === 47 || x.code === 90) return true;
    e = x.cause ?? x.originalError;
  }
  return false;
}

/**
 * Right after a commit the coordinator is still writing the previous transaction's markers and answers
 * AddOffsetsToTxn with CONCURRENT_TRANSACTIONS (retriable). kafkajs retries that for AddPartitionsToTxn
 * (inside send) but not in sendOffsets (tulios/kafkajs#430), so a transaction with offsets that follows
 * another one closely would fail. Retrying is safe: the request changed nothing.
 */
export async function retryConcurrentTransactions<T>(fn: () => Promise<T>, deadlineMs = 10_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    try {
      return await fn();
    } catch (err) {
      const x = err as { type?: unknown; code?: unknown };
      if (!(x.type === 'CONCURRENT_TRANSACTIONS' || x.code === 51) || Date.now() + wait > end) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

/** One producer and the queue of work on it: kafkajs allows one open transaction per producer. */
export interface ProducerSlot {
  readonly id: string;
  readonly producer: Producer;
  /** connect (and, if transactional, InitProducerId); work waits for it. */
  readonly ready: Promise<void>;
  chain: Promise<void>;
}

/**
 * Producers by id, each with its own serial queue; a broken one is replaced on next use. Shared by the
 * statistics sink and the dead-letter output.
 */
export class ProducerSet {
  readonly #slots = new Map<string, ProducerSlot>();
  /** Disconnects of discarded producers, awaited by close(). */
  readonly #retiring = new Set<Promise<void>>();
  #closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly logger: Logger,
    private readonly make: (kafka: Kafka, id: string) => { producer: Producer; transactional: boolean },
  ) {}

  /** Runs fn on the producer `id` after the work queued before it; creates the producer if needed. */
  run<T>(id: string, fn: (producer: Producer, slot: ProducerSlot) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new StreamstatsError('STREAMSTATS_SINK', `kafka: producer ${id} used after close()`));
    const slot = this.#slots.get(id) ?? this.#create(id, Promise.resolve());
    const work = slot.chain.then(async () => {
      await slot.ready;
      return fn(slot.producer, slot);
    });
    slot.chain = work.then(noop, noop);
    return work;
  }

  /** Replaces the producer `id` with a fresh one (after the old one's queued work) and waits until it is ready. */
  async renew(id: string): Promise<void> {
    if (this.#closed) throw new StreamstatsError('STREAMSTATS_SINK', `kafka: producer ${id} used after close()`);
    const old = this.#slots.get(id);
    const after = old === undefined ? Promise.resolve() : this.discard(old);
    await this.#create(id, after).ready;
  }

  /** Drops a producer whose state cannot be trusted any more; the next run() creates a new one. */
  discard(slot: ProducerSlot): Promise<void> {
    if (this.#slots.get(slot.id) === slot) this.#slots.delete(slot.id);
    const gone = slot.chain.then(() => slot.producer.disconnect()).catch((err: unknown) => {
      this.logger.debug({ producer: slot.id, err: (err as Error).message }, 'kafka: disconnecting a discarded producer failed');
    });
    this.#retiring.add(gone);
    void gone.then(() => this.#retiring.delete(gone));
    return gone;
  }

  #create(id: string, after: Promise<void>): ProducerSlot {
    const { producer, transactional } = this.make(this.kafka, id);
    const ready = (async () => {
      await after;
      await producer.connect();
      if (transactional) {
        // InitProducerId with the transactionalId happens on the first transaction(): do it now, so
        // that creating the producer is what fences a previous owner. Nothing was added, so abort()
        // sends no EndTxn.
        const tx = await producer.transaction();
        await tx.abort();
      }
    })();
    const slot: ProducerSlot = { id, producer, ready, chain: Promise.resolve() };
    this.#slots.set(id, slot);
    ready.catch((err: unknown) => {
      this.logger.warn({ producer: id, err: (err as Error).message }, 'kafka: producer could not start');
      void this.discard(slot);
    });
    return slot;
  }

  /** Lets queued work finish (bounded), then disconnects every producer (bounded). Idempotent. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const slots = [...this.#slots.values()];
    this.#slots.clear();
    const drained = await within(Promise.allSettled(slots.map((s) => s.chain)), timeoutMs);
    if (!drained) this.logger.warn({ timeoutMs }, 'kafka: writes still in flight at close; disconnecting anyway');
    const disconnects = slots.map((s) => s.producer.disconnect());
    const done = await within(Promise.allSettled([...disconnects, ...this.#retiring]), Math.max(1000, Math.min(timeoutMs, 5000)));
    if (!done) this.logger.warn('kafka: producers did not disconnect in time');
  }
}

function noop(): void {}

/** Resolves true when p settled within ms, false otherwise (the timer never holds the process). */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    timer.unref();
  });
  try {
    return await Promise.race([p.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class KafkaSink implements Sink {
  readonly describe: string;
  /** In exactly-once mode the committed offsets travel in the sink's transactions: readPositions() reads them back. */
  readonly ownsPositions: boolean;
  readonly #o: KafkaSinkOptions;
  readonly #kafka: Kafka;
  readonly #producers: ProducerSet;
  readonly #codec: number;
  readonly #maxBytes: number;
  #admin: Promise<ReturnType<Kafka['admin']>> | null = null;
  #closing: Promise<void> | null = null;

  constructor(opts: KafkaSinkOptions) {
    validateProducerOptions(opts);
    if (opts.exactlyOnce && opts.groupId === '') throw invalid('groupId', opts.groupId, 'exactly-once needs the consumer group id');
    if (opts.transactionTimeoutMs !== undefined && !(Number.isInteger(opts.transactionTimeoutMs) && opts.transactionTimeoutMs >= 1000)) {
      throw invalid('transactionTimeoutMs', opts.transactionTimeoutMs, 'an integer >= 1000');
    }
    this.#o = opts;
    this.#kafka = kafkaClient(opts.kafka, opts.logger);
    this.#codec = compressionCodec(opts.compression);
    this.#maxBytes = opts.maxRequestBytes ?? KAFKA_SINK_DEFAULTS.maxRequestBytes;
    this.ownsPositions = opts.exactlyOnce;
    this.describe = `kafka:${opts.topic}${opts.exactlyOnce ? ' (exactly-once)' : ''}`;
    const transactionTimeout = opts.transactionTimeoutMs ?? KAFKA_SINK_DEFAULTS.transactionTimeoutMs;
    this.#producers = new ProducerSet(this.#kafka, opts.logger, (kafka, id) =>
      opts.exactlyOnce
        ? {
            producer: kafka.producer({
              transactionalId: id,
              idempotent: true,
              maxInFlightRequests: 1,
              transactionTimeout,
              createPartitioner: Partitioners.DefaultPartitioner,
            }),
            transactional: true,
          }
        : {
            producer: kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner }),
            transactional: false,
          },
    );
  }

  /**
   * The transactional id for an input partition. Topic names may contain ".", so two groups could in
   * theory collide ("a.b" + "c" and "a" + "b.c"); group ids are ours to choose.
   */
  transactionalId(topic: string, partition: number): string {
    return `${this.#o.groupId}.${topic}.${partition}`;
  }

  async write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    await (this.#o.exactlyOnce ? this.#writeTransaction(batch, commit) : this.#writeIdempotent(batch));
    return WRITTEN_ALL;
  }

  #messages(rows: readonly StatsRow[]): Message[] {
    return rows.map((r) => ({ key: rowIdentityKey(r), value: JSON.stringify(r) }));
  }

  async #writeIdempotent(batch: RowBatch): Promise<void> {
    if (batch.rows.length === 0) return;
    const chunks = chunkMessages(this.#messages(batch.rows), this.#maxBytes);
    await this.#producers.run('rows', async (producer, slot) => {
      try {
        for (const messages of chunks) await producer.send({ topic: this.#o.topic, acks: -1, compression: this.#codec, messages });
      } catch (err) {
        // A failed idempotent send may leave kafkajs's sequence numbers out of step: start afresh.
        void this.#producers.discard(slot);
        throw new StreamstatsError('STREAMSTATS_SINK', `kafka: writing ${batch.rows.length} rows to ${this.#o.topic} failed: ${(err as Error).message}`, { cause: err, canRetry: true });
      }
    });
  }

  async #writeTransaction(batch: RowBatch, commit: SinkCommit | undefined): Promise<void> {
    if (batch.rows.length === 0 && commit === undefined) return;
    // Without a commit (unpartitioned source) the rows still say which input partition they belong
    // to when there is one; otherwise one producer for the whole group.
    const first = batch.rows[0];
    const id = commit !== undefined
      ? this.transactionalId(commit.topic, commit.partition)
      : first?.topic !== undefined && first.partition !== undefined
        ? this.transactionalId(first.topic, first.partition)
        : `${this.#o.groupId}.rows`;
    const chunks = chunkMessages(this.#messages(batch.rows), this.#maxBytes);
    await this.#producers.run(id, async (producer, slot) => {
      let committing = false;
      let tx: Awaited<ReturnType<Producer['transaction']>> | null = null;
      try {
        const txn = await producer.transaction();
        tx = txn;
        for (const messages of chunks) await txn.send({ topic: this.#o.topic, acks: -1, compression: this.#codec, messages });
        if (commit !== undefined) {
          // kafkajs's types leave metadata out, but it passes each partition object as is to
          // TxnOffsetCommit, whose v0/v1 encoder writes `metadata` (NULLABLE_STRING).
          const partitions: Array<PartitionOffset & { metadata: string }> = [
            { partition: commit.partition, offset: String(commit.point.position), metadata: commitMetadata(commit) },
          ];
          const offsets = { consumerGroupId: this.#o.groupId, topics: [{ topic: commit.topic, partitions }] };
          await retryConcurrentTransactions(() => txn.sendOffsets(offsets));
        }
        committing = true;
        await txn.commit();
      } catch (err) {
        throw await this.#failed(err, slot, tx, committing, batch.rows.length, commit);
      }
    });
  }

  /** Aborts what can be aborted, drops the producer if its state is unknown, and says what happened. */
  async #failed(
    err: unknown,
    slot: ProducerSlot,
    tx: Awaited<ReturnType<Producer['transaction']>> | null,
    committing: boolean,
    rows: number,
    commit: SinkCommit | undefined,
  ): Promise<StreamstatsError> {
    const where = commit === undefined ? '' : ` for ${commit.topic}/${commit.partition}`;
    const fenced = isFencingError(err);
    let broken = fenced || committing || tx === null;
    if (!broken && tx !== null && tx.isActive()) {
      try {
        await tx.abort();
      } catch (abortErr) {
        broken = true;
        this.#o.logger.warn({ producer: slot.id, err: (abortErr as Error).message }, 'kafka: aborting the transaction failed; the producer is replaced (its transaction is aborted when the next one starts)');
      }
    }
    // A new producer with the same transactionalId aborts a transaction left open by this one.
    if (broken) void this.#producers.discard(slot);
    if (fenced) {
      this.#o.logger.error({ producer: slot.id }, 'kafka: fenced: another instance took over this input partition');
      return new StreamstatsError(
        'STREAMSTATS_SINK',
        `kafka: fenced${where}: a newer producer with transactionalId ${slot.id} took over (restart or rebalance); ${rows} rows were not written (${(err as Error).message})`,
        { cause: err, canRetry: false },
      );
    }
    // A failure during commit leaves the outcome unknown: retrying could write the rows twice.
    return new StreamstatsError(
      'STREAMSTATS_SINK',
      `kafka: transaction${where} ${committing ? 'commit failed (outcome unknown)' : 'aborted'}: ${rows} rows to ${this.#o.topic}: ${(err as Error).message}`,
      { cause: err, canRetry: !committing },
    );
  }

  /**
   * Exactly-once only. Claims the input partitions (a fresh transactional producer for each, which
   * fences the previous owner and ends its open transaction), then reads the group's committed offsets
   * and their metadata. Partitions without our metadata are left out (the source then uses the
   * group's commit as usual).
   */
  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, PartitionPositions>> {
    const out = new Map<number, PartitionPositions>();
    if (!this.#o.exactlyOnce || partitions.length === 0) return out;
    await Promise.all(partitions.map((p) => this.#producers.renew(this.transactionalId(topic, p))));
    const admin = await this.#adminClient();
    const wanted = new Set(partitions);
    const read = async (): Promise<Map<number, PartitionPositions>> => {
      const m = new Map<number, PartitionPositions>();
      for (const t of await admin.fetchOffsets({ groupId: this.#o.groupId, topics: [topic] })) {
        for (const p of t.partitions) {
          const offset = Number(p.offset);
          const meta = parseCommitMeta(p.metadata);
          if (!wanted.has(p.partition) || offset < 0 || meta === null) continue;
          m.set(p.partition, { position: offset, watermarkMs: meta.wm, appliedEnd: meta.hi });
        }
      }
      return m;
    };
    // The group coordinator applies a committed transaction's offsets a moment after its markers are
    // written, and kafkajs's OffsetFetch cannot ask for stable offsets (require_stable, KIP-447): a
    // read right after the fencing above may still show the previous commit. Read until two reads
    // some time apart agree.
    let last = await read();
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const next = await read();
      const same = next.size === last.size && [...next].every(([p, v]) => {
        const o = last.get(p);
        return o !== undefined && o.position === v.position && o.appliedEnd === v.appliedEnd;
      });
      last = next;
      if (same) break;
    }
    for (const [p, v] of last) out.set(p, v);
    return out;
  }

  #adminClient(): Promise<ReturnType<Kafka['admin']>> {
    this.#admin ??= (async () => {
      const admin = this.#kafka.admin();
      await admin.connect();
      return admin;
    })();
    const p = this.#admin;
    p.catch(() => {
      if (this.#admin === p) this.#admin = null;
    });
    return p;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const timeoutMs = this.#o.closeTimeoutMs ?? KAFKA_SINK_DEFAULTS.closeTimeoutMs;
      await this.#producers.close(timeoutMs);
      const admin = this.#admin;
      if (admin !== null) await within(admin.then((a) => a.disconnect()).catch(noop), Math.max(1000, Math.min(timeoutMs, 5000)));
    })();
    return this.#closing;
  }
}
