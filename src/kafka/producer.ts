// Producer plumbing shared by the statistics sink, the Kafka dead-letter output and
// streamstats-produce: the common options (defaults and their one validator) and a set of producers
// by id, each with a serial queue, replaced when its state can no longer be trusted.
import type { Kafka, Producer } from 'kafkajs';
import type { Logger } from 'pino';
import { TimeoutError, withTimeout } from '../async/index.js';
import { StreamstatsError } from '../errors.js';
import type { KafkaClientSpec } from './client.js';
import { compressionRefusal, type KafkaCompression } from './compression.js';
import { TOPIC_NAME_RULE, validTopicName } from './topics.js';
import { claimTransactionalId } from './transactions.js';

/** The options every producer of ours takes. */
export interface ProducerOptions {
  readonly kafka: KafkaClientSpec;
  readonly topic: string;
  readonly compression?: KafkaCompression;
  readonly logger: Logger;
  /**
   * A produce request carries at most this many key+value bytes per output partition (the broker's
   * max.message.bytes, 1 MiB by default, bounds each partition's record batch), so one request holds
   * up to this much times the topic's partition count.
   */
  readonly maxRequestBytes?: number;
  /** close() gives in-flight writes this long, then disconnects anyway. */
  readonly closeTimeoutMs?: number;
}

export const PRODUCER_DEFAULTS = {
  compression: 'none' as KafkaCompression,
  maxRequestBytes: 512 * 1024,
  closeTimeoutMs: 10_000,
} as const;

export function invalidOption(option: string, value: unknown, allowed: string): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_CONFIG', `kafka sink: ${option} (${JSON.stringify(value)}) is not valid: ${allowed}`);
}

/** The one validator of the options shared by the statistics and dead-letter producers. */
export function validateProducerOptions(o: { topic: string; compression?: string | undefined; maxRequestBytes?: number | undefined; closeTimeoutMs?: number | undefined }): void {
  if (!validTopicName(o.topic)) throw invalidOption('topic', o.topic, `${TOPIC_NAME_RULE} is allowed`);
  const refusal = o.compression === undefined ? null : compressionRefusal(o.compression);
  if (refusal !== null) throw invalidOption('compression', o.compression, refusal);
  if (o.maxRequestBytes !== undefined && !(Number.isInteger(o.maxRequestBytes) && o.maxRequestBytes >= 1024)) {
    throw invalidOption('maxRequestBytes', o.maxRequestBytes, 'an integer >= 1024');
  }
  if (o.closeTimeoutMs !== undefined && !(Number.isFinite(o.closeTimeoutMs) && o.closeTimeoutMs >= 0)) {
    throw invalidOption('closeTimeoutMs', o.closeTimeoutMs, 'a number of milliseconds >= 0');
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

/** Resolves true when p settled within ms, false when the time ran out. */
function settlesWithin(p: Promise<unknown>, ms: number, what: string): Promise<boolean> {
  return withTimeout(p, ms, what).then(
    () => true,
    (err: unknown) => !(err instanceof TimeoutError),
  );
}

/** The time close() gives disconnects: its timeout, but at least 1 s and at most 5 s. */
export function disconnectTimeoutMs(closeTimeoutMs: number): number {
  return Math.max(1000, Math.min(closeTimeoutMs, 5000));
}

/** Producers by id, each with its own serial queue; a broken one is replaced on next use. */
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
      this.logger.debug({ producer: slot.id, err }, 'kafka: disconnecting a discarded producer failed');
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
      if (transactional) await claimTransactionalId(producer);
    })();
    const slot: ProducerSlot = { id, producer, ready, chain: Promise.resolve() };
    this.#slots.set(id, slot);
    ready.catch((err: unknown) => {
      this.logger.warn({ producer: id, err }, 'kafka: producer could not start');
      void this.discard(slot);
    });
    return slot;
  }

  /** Lets queued work finish (bounded), then disconnects every producer (bounded). Idempotent. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const slots = [...this.#slots.values()];
    this.#slots.clear();
    const drained = await settlesWithin(Promise.allSettled(slots.map((s) => s.chain)), timeoutMs, 'kafka: in-flight writes at close');
    if (!drained) this.logger.warn({ timeoutMs }, 'kafka: writes still in flight at close; disconnecting anyway');
    const disconnects = slots.map((s) => s.producer.disconnect());
    const done = await settlesWithin(Promise.allSettled([...disconnects, ...this.#retiring]), disconnectTimeoutMs(timeoutMs), 'kafka: producer disconnects');
    if (!done) this.logger.warn('kafka: producers did not disconnect in time');
  }
}

function noop(): void {}
