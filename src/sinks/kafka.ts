// Kafka statistics sink: one JSON message per row, keyed by the row's identity, so a compacted topic
// keeps the latest row per window and the Java-compatible murmur2 partitioner (src/kafka/partitioner)
// keeps one identity in one partition, the one any Kafka client would pick.
//
// Pipelined: write() may be called while earlier writes are in flight. Writes queue per producer
// ("lane") and whatever queued while a request or transaction was running goes out together in the
// next one (bounded by maxTransactionBytes), so the number of requests and transactions follows what
// throughput needs, without a linger timer. Call order is kept per lane.
//
// Rows no topic can take never reach the broker: a row over the topic's max.message.bytes (read from
// the broker) is returned as rejected. When the broker still refuses records (MESSAGE_TOO_LARGE: the
// limit was lowered meanwhile), the limit is read again, the rows over it are rejected and the rest
// retried once with a fresh producer.
//
// Two modes:
// - at-least-once (default): one idempotent producer, acks=-1; write() resolves once acknowledged.
// - exactly-once: the queued writes of an input partition run as ONE transaction: their rows, then
//   the latest commit point's offset (with the same metadata the Kafka source commits:
//   {"v":1,"wm":…,"hi":…}) via sendOffsets, then commit. kafkajs 2.2.4 sends TxnOffsetCommit v0/v1, which carry no group
//   generation (no KIP-447 fencing), so the old pattern is used: one transactional producer per
//   input partition, transactionalId `${groupId}.${topic}.${partition}`; a new owner's InitProducerId
//   fences the previous one (its next transaction fails with INVALID_PRODUCER_EPOCH) and aborts or
//   completes whatever transaction it left open. readPositions() does that claim before reading the
//   group's committed offsets, so a partition resumes after everything a zombie could still commit.
import kafkajs, { type Kafka, type Message, type PartitionOffset, type Producer } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../config/index.js';
import { StreamstatsError } from '../errors.js';
import { formatCommitMeta, parseCommitMeta } from '../commit/meta.js';
import { kafkajsConfig } from '../kafka/client.js';
import { registerCodecs } from '../kafka/codecs.js';
import { producibleCompressions, zstdAvailable, type KafkaCompression } from '../kafka/compression.js';

export { KAFKA_COMPRESSIONS, type KafkaCompression } from '../kafka/compression.js';
import { JavaCompatiblePartitioner, partitionForKey } from '../kafka/partitioner.js';
import type { RowBatch, StatsRow } from '../windows/row.js';
import type { CommitPoint, PositionStore } from '../commit/types.js';
import { WRITTEN_ALL, type RowRejection, type Sink, type SinkCommit, type SinkWriteResult } from './types.js';

const { CompressionTypes } = kafkajs;


const CODECS: Record<KafkaCompression, number> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
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
  /**
   * A produce request carries at most this many key+value bytes per output partition (the broker's
   * max.message.bytes, 1 MiB by default, bounds each partition's record batch), so one request holds
   * up to this much times the topic's partition count.
   */
  readonly maxRequestBytes?: number;
  /** close() gives in-flight writes this long, then disconnects anyway. */
  readonly closeTimeoutMs?: number;
  /** Queued writes of a lane go out together up to this many key+value bytes (one request series / transaction). */
  readonly maxTransactionBytes?: number;
}

export const KAFKA_SINK_DEFAULTS = {
  compression: 'none' as KafkaCompression,
  transactionTimeoutMs: 60_000,
  maxRequestBytes: 512 * 1024,
  closeTimeoutMs: 10_000,
  maxTransactionBytes: 8 * 1024 * 1024,
  /** The broker's default max.message.bytes, used until the topic's own value is read. */
  maxMessageBytes: 1_048_588,
} as const;

/** Bytes a record costs beyond its key and value (record + batch headers, generously). */
export const RECORD_OVERHEAD_BYTES = 128;

const TOPIC_RE = /^[A-Za-z0-9._-]{1,249}$/;

function invalid(option: string, value: unknown, allowed: string): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_CONFIG', `kafka sink: ${option} (${JSON.stringify(value)}) is not valid: ${allowed}`);
}

/** The one validator of the options shared by the statistics and dead-letter producers. */
export function validateProducerOptions(o: { topic: string; compression?: string | undefined; maxRequestBytes?: number | undefined; closeTimeoutMs?: number | undefined }): void {
  if (!TOPIC_RE.test(o.topic)) throw invalid('topic', o.topic, 'a topic name of letters, digits, ".", "_" and "-" (at most 249) is allowed');
  if (o.compression !== undefined && !(producibleCompressions() as readonly string[]).includes(o.compression)) {
    const zstdNote = zstdAvailable() ? '' : ' (zstd needs Node >= 22.15; it is consumed on every version)';
    throw invalid('compression', o.compression, `one of ${producibleCompressions().join(', ')}${zstdNote}`);
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
export function chunkMessages(messages: readonly Message[], maxBytes: number, recordOverhead = 0): Message[][] {
  return chunkItems(messages.map((m) => ({ m })), maxBytes, recordOverhead).map((c) => c.map((x) => x.m));
}

/**
 * Splits items (each carrying its message) into sends holding at most maxBytes per partition (messages
 * without a partition count against one shared budget): keys, values and recordOverhead bytes per
 * record. A partition's share of a request is one record batch, which the topic's max.message.bytes
 * bounds, so maxBytes must not exceed it. A single larger message goes alone.
 */
function chunkItems<T extends { m: Message; size?: number }>(items: readonly T[], maxBytes: number, recordOverhead = 0): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  const bytes = new Map<number, number>();
  for (const x of items) {
    const size = (x.size ?? byteLength(x.m.key) + byteLength(x.m.value)) + recordOverhead;
    const p = x.m.partition ?? -1;
    const used = bytes.get(p) ?? 0;
    if (cur.length > 0 && used > 0 && used + size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes.clear();
    }
    cur.push(x);
    bytes.set(p, (bytes.get(p) ?? 0) + size);
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

/** A topic's max.message.bytes as the broker reports it (topic override or broker default); null if unknown. */
export async function topicMaxMessageBytes(admin: ReturnType<Kafka['admin']>, topic: string): Promise<number | null> {
  const res = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: topic, configNames: ['max.message.bytes'] }] });
  const v = Number(res.resources[0]?.configEntries.find((e) => e.configName === 'max.message.bytes')?.configValue);
  return Number.isFinite(v) && v > 0 ? v : null;
}

/** Exactly-once restore: committed positions must read the same for this long before they are used. */
const STABLE_POSITIONS_MS = 1000;

const ROW_LEVEL_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

/** A refusal of the records themselves, not of the producer or the connection (checked along the cause chain). */
export function rowLevelRefusal(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 8; depth++) {
    const x = e as { type?: unknown; code?: unknown; cause?: unknown; originalError?: unknown; message?: unknown };
    if ((typeof x.type === 'string' && ROW_LEVEL_TYPES.has(x.type)) || x.code === 10 || x.code === 18 || x.code === 87) {
      return typeof x.type === 'string' ? x.type : `error code ${String(x.code)}`;
    }
    e = x.cause ?? x.originalError;
  }
  return null;
}

/** A send the broker refused for a reason of the records; `sent` messages before it were written. */
class RowsRefused extends Error {
  constructor(readonly why: string, readonly failure: StreamstatsError, readonly sent: number) {
    super(failure.message);
  }
}

/** One write() waiting in a lane: its messages, which row each is, and where to report. */
interface QueuedWrite {
  readonly messages: Message[];
  /** rowIndex[i] = index in the batch of messages[i]; sizes[i] = its key and value bytes. */
  readonly rowIndex: number[];
  readonly sizes: number[];
  readonly rows: number;
  readonly bytes: number;
  readonly commit: SinkCommit | undefined;
  readonly rejected: RowRejection[];
  resolve(r: SinkWriteResult): void;
  reject(err: unknown): void;
}

/** A queued message with the write and row it came from and its key and value bytes. */
interface Item {
  readonly m: Message;
  readonly w: QueuedWrite;
  readonly row: number;
  readonly size: number;
}

interface Lane {
  readonly queue: QueuedWrite[];
  running: boolean;
}

export class KafkaSink implements Sink {
  readonly describe: string;
  /** In exactly-once mode the committed offsets travel in the sink's transactions: readPositions() reads them back. */
  readonly positions: PositionStore | undefined;
  readonly pipelined = true;
  readonly #o: KafkaSinkOptions;
  readonly #lanes = new Map<string, Lane>();
  #maxMessageBytes: number = KAFKA_SINK_DEFAULTS.maxMessageBytes;
  /** Output partitions, read with the limit: rows get their partition here, so requests are cut per partition. */
  #partitions = 0;
  #limitRead: Promise<void> | null = null;
  #limitReread = false;
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
    if (opts.maxTransactionBytes !== undefined && !(Number.isInteger(opts.maxTransactionBytes) && opts.maxTransactionBytes >= 1024)) {
      throw invalid('maxTransactionBytes', opts.maxTransactionBytes, 'an integer >= 1024');
    }
    this.#o = opts;
    this.#kafka = kafkaClient(opts.kafka, opts.logger);
    this.#codec = compressionCodec(opts.compression);
    this.#maxBytes = opts.maxRequestBytes ?? KAFKA_SINK_DEFAULTS.maxRequestBytes;
    this.positions = opts.exactlyOnce ? this : undefined;
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
              createPartitioner: JavaCompatiblePartitioner,
            }),
            transactional: true,
          }
        : {
            producer: kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: JavaCompatiblePartitioner }),
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
    if (batch.rows.length === 0 && (commit === undefined || !this.#o.exactlyOnce)) return WRITTEN_ALL;
    if (this.#closing !== null) throw new StreamstatsError('STREAMSTATS_SINK', `kafka: write to ${this.#o.topic} after close()`);
    await this.#readLimit();
    const messages: Message[] = [];
    const rowIndex: number[] = [];
    const sizes: number[] = [];
    const rejected: RowRejection[] = [];
    let bytes = 0;
    for (let i = 0; i < batch.rows.length; i++) {
      const r = batch.rows[i]!;
      // Encoded once: its bytes are hashed for the partition, counted for the limits and sent as they are.
      const key = Buffer.from(batch.identityKey?.(i) ?? rowIdentityKey(r), 'utf8');
      const value = batch.json?.(i) ?? JSON.stringify(r);
      const size = key.length + Buffer.byteLength(value);
      if (size + RECORD_OVERHEAD_BYTES > this.#maxMessageBytes) {
        rejected.push({ index: i, detail: `kafka: row of ${size} bytes (key and value) is over max.message.bytes=${this.#maxMessageBytes} of topic ${this.#o.topic}` });
        continue;
      }
      // The partition the Java-compatible partitioner would pick, set here so requests can be cut per partition.
      messages.push(this.#partitions > 0 ? { key, value, partition: partitionForKey(key, this.#partitions) } : { key, value });
      rowIndex.push(i);
      sizes.push(size);
      bytes += size;
    }
    if (messages.length === 0 && (commit === undefined || !this.#o.exactlyOnce)) return { rejected };
    const id = this.#laneId(batch, commit);
    let lane = this.#lanes.get(id);
    if (lane === undefined) {
      lane = { queue: [], running: false };
      this.#lanes.set(id, lane);
    }
    const done = new Promise<SinkWriteResult>((resolve, reject) => {
      lane.queue.push({ messages, rowIndex, sizes, rows: batch.rows.length, bytes, commit, rejected, resolve, reject });
    });
    this.#pump(id, lane);
    return done;
  }

  /**
   * One producer (and lane) per input partition in both modes: exactly-once needs it for fencing, and
   * at-least-once gets requests in flight side by side (kafkajs's idempotent producer allows only one
   * at a time). A row identity belongs to one input partition, so its rows stay in order.
   */
  #laneId(batch: RowBatch, commit: SinkCommit | undefined): string {
    // Without a commit (unpartitioned source) the rows still say which input partition they belong
    // to when there is one; otherwise one producer for the whole group.
    const first = batch.rows[0];
    const input = commit ?? (first?.topic !== undefined && first.partition !== undefined ? { topic: first.topic, partition: first.partition } : undefined);
    if (!this.#o.exactlyOnce) return input === undefined ? 'rows' : `rows.${input.topic}.${input.partition}`;
    return input !== undefined ? this.transactionalId(input.topic, input.partition) : `${this.#o.groupId}.rows`;
  }

  /** Runs the lane until its queue is empty; what queued meanwhile goes out together. */
  #pump(id: string, lane: Lane): void {
    if (lane.running) return;
    lane.running = true;
    void (async () => {
      const max = this.#o.maxTransactionBytes ?? KAFKA_SINK_DEFAULTS.maxTransactionBytes;
      while (lane.queue.length > 0) {
        let bytes = 0;
        let n = 0;
        while (n < lane.queue.length && (n === 0 || bytes + lane.queue[n]!.bytes <= max)) bytes += lane.queue[n++]!.bytes;
        const group = lane.queue.splice(0, n);
        try {
          const refused = this.#o.exactlyOnce ? await this.#writeTransaction(id, group) : await this.#writeIdempotent(id, group);
          for (const w of group) w.resolve({ rejected: [...w.rejected, ...(refused.get(w) ?? [])].sort((a, b) => a.index - b.index) });
          // An auto-created topic did not exist when its limit and partitions were first read.
          if (this.#partitions === 0 && !this.#limitReread) {
            this.#limitReread = true;
            void this.#readLimit(true);
          }
        } catch (err) {
          for (const w of group) w.reject(err);
        }
      }
      lane.running = false;
    })();
  }

  /** The topic's max.message.bytes, read once (rows over it are rejected before sending). */
  #readLimit(refresh = false): Promise<void> {
    if (refresh) this.#limitRead = null;
    this.#limitRead ??= (async () => {
      try {
        const admin = await this.#adminClient();
        const v = await topicMaxMessageBytes(admin, this.#o.topic);
        if (v !== null) this.#maxMessageBytes = v;
        const meta = await admin.fetchTopicMetadata({ topics: [this.#o.topic] });
        this.#partitions = meta.topics[0]?.partitions.length ?? 0;
      } catch (err) {
        // The topic may not exist yet (auto-creation) or describe may be denied: keep the broker default.
        this.#o.logger.debug({ err, topic: this.#o.topic }, 'kafka: cannot read max.message.bytes; assuming the broker default');
      }
    })();
    return this.#limitRead;
  }

  /** Requests of at most maxRequestBytes, and at most the topic's max.message.bytes, per partition. */
  #chunks(items: readonly Item[]): Item[][] {
    return chunkItems(items, Math.min(this.#maxBytes, this.#maxMessageBytes - RECORD_OVERHEAD_BYTES), RECORD_OVERHEAD_BYTES);
  }

  /** The messages of a group, each with its write and row, in call order. */
  #flatten(group: readonly QueuedWrite[]): Item[] {
    const out: Item[] = [];
    for (const w of group) for (let i = 0; i < w.messages.length; i++) out.push({ m: w.messages[i]!, w, row: w.rowIndex[i]!, size: w.sizes[i]! });
    return out;
  }

  async #writeIdempotent(id: string, group: readonly QueuedWrite[]): Promise<Map<QueuedWrite, RowRejection[]>> {
    const rows = group.reduce((a, w) => a + w.rows, 0);
    return this.#withRefusals(group, (items) => this.#producers.run(id, async (producer, slot) => {
      let sent = 0;
      try {
        for (const chunk of this.#chunks(items)) {
          await producer.send({ topic: this.#o.topic, acks: -1, compression: this.#codec, messages: chunk.map((x) => x.m) });
          sent += chunk.length;
        }
      } catch (err) {
        // A failed idempotent send leaves kafkajs's sequence numbers out of step: start afresh.
        void this.#producers.discard(slot);
        const why = rowLevelRefusal(err);
        const failure = new StreamstatsError('STREAMSTATS_SINK', `kafka: writing ${rows} rows to ${this.#o.topic} failed: ${(err as Error).message}`, { cause: err, canRetry: true });
        // At least once: what went out before the refusal stays written; the rest is retried.
        throw why === null ? failure : new RowsRefused(why, failure, sent);
      }
    }));
  }

  async #writeTransaction(id: string, group: readonly QueuedWrite[]): Promise<Map<QueuedWrite, RowRejection[]>> {
    // The latest commit point covers every earlier one of the lane (one input partition).
    let commit: SinkCommit | undefined;
    for (const w of group) if (w.commit !== undefined) commit = w.commit;
    const rows = group.reduce((a, w) => a + w.rows, 0);
    return this.#withRefusals(group, (items) => this.#producers.run(id, async (producer, slot) => {
      let committing = false;
      let tx: Awaited<ReturnType<Producer['transaction']>> | null = null;
      try {
        const txn = await producer.transaction();
        tx = txn;
        for (const chunk of this.#chunks(items)) {
          await txn.send({ topic: this.#o.topic, acks: -1, compression: this.#codec, messages: chunk.map((x) => x.m) });
        }
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
        const why = committing ? null : rowLevelRefusal(err);
        if (why === null) throw await this.#failed(err, slot, tx, committing, rows, commit);
        // The refused send broke the producer's sequence numbers: abort (or let the next producer with
        // this transactionalId abort it) and replace the producer; nothing of this transaction is visible.
        const failure = await this.#failed(err, slot, tx, false, rows, commit);
        void this.#producers.discard(slot);
        throw new RowsRefused(why, failure, 0);
      }
    }));
  }

  /**
   * Runs a write; when the broker refuses records (the topic's max.message.bytes was lowered since it
   * was read), reads the limit again, rejects the rows now over it and runs the rest once more with a
   * fresh producer. A refusal that no row explains is not a row's fault: the write fails.
   */
  async #withRefusals(group: readonly QueuedWrite[], run: (items: Item[]) => Promise<void>): Promise<Map<QueuedWrite, RowRejection[]>> {
    const refused = new Map<QueuedWrite, RowRejection[]>();
    let items = this.#flatten(group);
    for (let attempt = 0; ; attempt++) {
      try {
        await run(items);
        return refused;
      } catch (err) {
        if (!(err instanceof RowsRefused)) throw err;
        if (attempt > 0) throw err.failure;
        items = items.slice(err.sent);
        await this.#readLimit(true);
        const keep: typeof items = [];
        for (const x of items) {
          const size = x.size;
          if (size + RECORD_OVERHEAD_BYTES <= this.#maxMessageBytes) {
            keep.push(x);
            continue;
          }
          const list = refused.get(x.w) ?? [];
          list.push({ index: x.row, detail: `kafka: ${this.#o.topic} refused the row (${err.why}): ${size} bytes (key and value) is over max.message.bytes=${this.#maxMessageBytes}` });
          refused.set(x.w, list);
        }
        if (keep.length === items.length) throw err.failure;
        items = keep;
      }
    }
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
  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, CommitPoint>> {
    const out = new Map<number, CommitPoint>();
    if (!this.#o.exactlyOnce || partitions.length === 0) return out;
    await Promise.all(partitions.map((p) => this.#producers.renew(this.transactionalId(topic, p))));
    const admin = await this.#adminClient();
    const wanted = new Set(partitions);
    const read = async (): Promise<Map<number, CommitPoint>> => {
      const m = new Map<number, CommitPoint>();
      for (const t of await admin.fetchOffsets({ groupId: this.#o.groupId, topics: [topic] })) {
        for (const p of t.partitions) {
          const offset = Number(p.offset);
          const meta = parseCommitMeta(p.metadata);
          if (!wanted.has(p.partition) || offset < 0 || meta === null) continue;
          m.set(p.partition, { position: offset, ...meta });
        }
      }
      return m;
    };
    // The group coordinator applies a committed transaction's offsets a moment after its markers are
    // written, and kafkajs's OffsetFetch cannot ask for stable offsets (require_stable, KIP-447): a
    // read right after the fencing above may still show the previous commit (the coordinator's
    // transaction completion runs on a background scheduler, slower on a loaded broker). Read until
    // the answer has not changed for STABLE_POSITIONS_MS (several reads), at most 20 reads. This is a
    // mitigation, not a proof: only OffsetFetch v7+ (flexible versions, which kafkajs cannot frame)
    // can ask the coordinator to wait.
    const same = (a: Map<number, CommitPoint>, b: Map<number, CommitPoint>) => a.size === b.size && [...a].every(([p, v]) => {
      const o = b.get(p);
      return o !== undefined && o.position === v.position && o.appliedEnd === v.appliedEnd;
    });
    let last = await read();
    let stableSince = Date.now();
    for (let i = 0; i < 20 && Date.now() - stableSince < STABLE_POSITIONS_MS; i++) {
      await new Promise((r) => setTimeout(r, 250));
      const next = await read();
      if (!same(next, last)) stableSince = Date.now();
      last = next;
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
