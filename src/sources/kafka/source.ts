// The Kafka source: consumer-group membership, hand-off of fetched batches to the engine without
// stalling the fetch loop, pause/resume for backpressure, commits that never pass an open window,
// replay skipping after a restart, idle flushing and lag metrics. Reconnects on its own.
//
// kafkajs facts this relies on (2.2.4): the resolved offset IS the fetch position, so eachBatch
// resolves right away and returns (heartbeats only flow between batches); with autoCommit off
// nothing is committed but what we commit; after every group join kafkajs restarts each assigned
// partition from its committed offset, so on a join we drop all partition state and rebuild it from
// the commit (offset + metadata); commitOffsets is a no-op once the runner stops, so the final commit
// happens before disconnect().
import kafkajs, { type Admin, type Consumer, type EachBatchPayload, type Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaConfig } from '../../config/index.js';
import { BatchBuilder } from '../../core/batch.js';
import type { Engine } from '../../engine/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { SourceBatch } from '../types.js';
import { kafkajsConfig } from '../../kafka/client.js';
import { formatCommitMeta, parseCommitMeta } from '../../commit/meta.js';
import type { CommitPoint, PositionStore, RestoredPoint } from '../../commit/types.js';
import { REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE, registerCodecs } from '../../kafka/codecs.js';

export interface KafkaSourceOptions {
  readonly kafka: KafkaConfig;
  readonly engine: Engine;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  /**
   * Bytes fetched and waiting for the engine before busy partitions are paused (resumed below half).
   * Large on purpose: once every partition is paused, kafkajs sleeps a whole KAFKA_MAX_WAIT_MS before
   * fetching again, so pausing early starves the pool.
   */
  readonly intakeMaxBytes: number;
  /** MAX_MESSAGE_BYTES: longer values are copied into batches cut to this + 1 bytes. */
  readonly maxMessageBytes?: number;
  /** A sink that stores positions with its rows: where a partition resumes is read from it. */
  readonly positions?: PositionStore;
}

interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** A partition held in the current generation; `id` is the engine's partition id (never reused). */
interface Live {
  readonly id: number;
  readonly tp: TopicPartition;
  readonly gen: number;
  ready: Promise<void>;
  /** High watermark last seen (fetch or poll). */
  hw: number | null;
  /** Where consumption of this assignment started (committed offset, or earliest/latest). */
  start: number | null;
  paused: boolean;
  lastCommitted: string | null;
  /** Set when the sink's stored position differs from where kafkajs starts: the first batch seeks. */
  seekTo: number | null;
}

interface IntakeItem {
  readonly gen: number;
  readonly live: Live;
  readonly batch: SourceBatch;
}

const key = (tp: TopicPartition) => `${tp.topic}:${tp.partition}`;

export class KafkaSource {
  readonly describe: string;
  readonly #o: KafkaSourceOptions;
  readonly #kafka: Kafka;
  readonly #live = new Map<string, Live>();
  readonly #identity = new Map<number, TopicPartition>();
  #nextId = 1;
  #gen = 0;
  #intake: IntakeItem[] = [];
  #intakeBytes = 0;
  #submitting = false;
  #wakePump: (() => void) | null = null;
  #intakeWaiters: Array<() => void> = [];
  #consumer: Consumer | null = null;
  #admin: Admin | null = null;
  #stopping = false;
  #finished = false;
  #joined = false;
  #endSession: (() => void) | null = null;
  #wakeBackoff: (() => void) | null = null;
  #commitChain: Promise<void> = Promise.resolve();
  #fatal: Error | null = null;

  constructor(opts: KafkaSourceOptions) {
    this.#o = opts;
    this.describe = `kafka:${opts.kafka.topics.join(',')}`;
    registerCodecs(opts.intakeMaxBytes);
    this.#kafka = new kafkajs.Kafka(kafkajsConfig(opts.kafka, opts.logger));
  }

  /** Ready: in the group with an assignment, and nothing crashed. */
  get ready(): boolean {
    return this.#joined && this.#fatal === null;
  }

  /** The (topic, partition) behind an engine partition id: stamped on rows. */
  identity(id: number): TopicPartition | undefined {
    return this.#identity.get(id);
  }

  /** Stop fetching; run() then finishes in-flight batches, commits, leaves the group. Idempotent. */
  stop(): void {
    this.#stopping = true;
    this.#endSession?.();
    this.#wakeBackoff?.();
  }

  async run(): Promise<void> {
    const { logger, metrics, kafka } = this.#o;
    const pump = this.#pump();
    const commitTimer = setInterval(() => void this.#commit('interval'), kafka.commitIntervalMs);
    const tickTimer = setInterval(() => void this.#tick(), Math.min(1000, kafka.idleFlushMs));
    const lagTimer = setInterval(() => void this.#pollHighWatermarks(), kafka.lagIntervalMs);
    let attempt = 0;
    try {
      while (!this.#stopping && this.#fatal === null) {
        try {
          await this.#session();
          attempt = 0;
        } catch (err) {
          logger.error(
            { err: (err as Error).message, brokers: kafka.brokers },
            'kafka: session failed (brokers unreachable or consumer crashed); reconnecting',
          );
        }
        if (this.#stopping || this.#fatal !== null) break;
        attempt++;
        metrics.kafkaReconnects.inc();
        // Jittered exponential back-off, capped: no tight crash loop while a broker is down.
        const delay = Math.min(kafka.retryMaxMs, 500 * 2 ** Math.min(attempt, 10)) * (0.5 + Math.random() / 2);
        logger.warn({ attempt, delayMs: Math.round(delay) }, 'kafka: reconnecting after back-off');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          this.#wakeBackoff = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.#wakeBackoff = null;
      }
    } finally {
      clearInterval(commitTimer);
      clearInterval(tickTimer);
      clearInterval(lagTimer);
      this.#finished = true;
      this.#wakePump?.();
      await pump;
    }
    if (this.#fatal !== null) throw this.#fatal;
  }

  async #session(): Promise<void> {
    const { kafka, logger, metrics } = this.#o;
    const consumer = this.#kafka.consumer({
      groupId: kafka.groupId,
      sessionTimeout: kafka.sessionTimeoutMs,
      heartbeatInterval: kafka.heartbeatIntervalMs,
      maxWaitTimeInMs: kafka.maxWaitMs,
      maxBytesPerPartition: kafka.maxBytesPerPartition,
      allowAutoTopicCreation: false,
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: Math.min(kafka.retryMaxMs, 30000) },
    });
    const admin = this.#kafka.admin();
    let fail: (err: Error) => void = () => {};
    const ended = new Promise<void>((resolve, reject) => {
      this.#endSession = resolve;
      fail = reject;
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => this.#onJoin(e.payload.memberAssignment, e.payload.memberId));
    consumer.on(consumer.events.REBALANCING, () => {
      // Best effort: the old generation may still commit while the group prepares to rebalance.
      void this.#commit('rebalance');
    });
    consumer.on(consumer.events.CRASH, (e) => {
      this.#joined = false;
      metrics.kafkaConnected.set(0);
      if (e.payload.restart) {
        logger.warn({ err: e.payload.error.message }, 'kafka: consumer crashed; kafkajs restarts it');
      } else {
        fail(e.payload.error);
      }
    });
    try {
      if (this.#stopping) return;
      await admin.connect();
      this.#admin = admin;
      await consumer.connect();
      this.#consumer = consumer;
      await consumer.subscribe({ topics: kafka.topics, fromBeginning: kafka.from === 'earliest' });
      logger.info({ brokers: kafka.brokers, topics: kafka.topics, groupId: kafka.groupId }, 'kafka: consuming');
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: (payload) => this.#onBatch(payload),
      });
      if (this.#stopping) this.#endSession?.();
      await ended;
    } finally {
      this.#endSession = null;
      if (this.#stopping && this.#consumer !== null) await this.#drainAndCommit(consumer);
      this.#joined = false;
      metrics.kafkaConnected.set(0);
      void this.#dropAll();
      this.#consumer = null;
      this.#admin = null;
      // disconnect() leaves the group; bounded so a dead broker cannot hold shutdown.
      await withTimeout(consumer.disconnect(), 10_000).catch(() => {});
      await withTimeout(admin.disconnect(), 5_000).catch(() => {});
    }
  }

  /** Shutdown: no more fetching, every batch already fetched is applied, then the final commit. */
  async #drainAndCommit(consumer: Consumer): Promise<void> {
    const { logger, engine } = this.#o;
    try {
      const byTopic = new Map<string, number[]>();
      for (const l of this.#live.values()) byTopic.set(l.tp.topic, [...(byTopic.get(l.tp.topic) ?? []), l.tp.partition]);
      if (byTopic.size > 0) consumer.pause([...byTopic].map(([topic, partitions]) => ({ topic, partitions })));
    } catch {
      // Not running (never joined): nothing to pause.
    }
    // Fetched batches not yet handed to the pool are dropped, not processed: shutdown stays short, and
    // nothing is lost, since commits never pass them (the next owner fetches them again).
    this.#intake = [];
    this.#intakeBytes = 0;
    await this.#intakeEmpty();
    await engine.drain().catch(() => {});
    await this.#commit('shutdown');
    logger.info('kafka: in-flight batches applied and offsets committed');
  }

  #onJoin(assignment: Record<string, number[]>, memberId: string): void {
    const { metrics, logger } = this.#o;
    const gen = ++this.#gen;
    metrics.rebalances.inc();
    // kafkajs restarts every assigned partition from its committed offset after a join, so what we
    // held (open windows, batches in flight) is rebuilt from the commit instead of being continued.
    const pausedBefore = [...this.#live.values()].filter((l) => l.paused);
    const settled = this.#dropAll();
    if (pausedBefore.length > 0 && this.#consumer !== null) {
      // Pause state survives a rebalance in kafkajs; what we paused is ours to resume.
      for (const l of pausedBefore) this.#consumer.resume([{ topic: l.tp.topic, partitions: [l.tp.partition] }]);
    }
    const tps: TopicPartition[] = [];
    for (const [topic, partitions] of Object.entries(assignment)) for (const partition of partitions) tps.push({ topic, partition });
    // An emission of the previous generation may still be writing to the sink: the restore must read
    // positions after it, or it would resume from before rows that are already out (and, with the
    // exactly-once sink, fence our own transaction in flight).
    const ready = settled.then(() => this.#initPartitions(gen, tps));
    for (const tp of tps) {
      const id = this.#nextId++;
      this.#identity.set(id, tp);
      this.#live.set(key(tp), { id, tp, gen, ready, hw: null, start: null, paused: false, lastCommitted: null, seekTo: null });
    }
    metrics.assignedPartitions.set(tps.length);
    metrics.pausedPartitions.set(0);
    this.#joined = true;
    metrics.kafkaConnected.set(1);
    logger.info({ memberId, generation: gen, partitions: tps.map(key) }, 'kafka: joined the group');
  }

  /** Restores each partition from its commit: the emitted-window boundary and the processed position. */
  async #initPartitions(gen: number, tps: readonly TopicPartition[]): Promise<void> {
    const { kafka, logger, engine } = this.#o;
    const topics = [...new Set(tps.map((t) => t.topic))];
    const committed = new Map<string, { offset: number; meta: RestoredPoint | null }>();
    const ends = new Map<string, { low: number; high: number }>();
    const stored = new Map<string, CommitPoint>();
    for (let attempt = 1; attempt <= 5 && topics.length > 0; attempt++) {
      try {
        const admin = this.#admin;
        if (admin === null) break;
        const res = await admin.fetchOffsets({ groupId: kafka.groupId, topics });
        for (const t of res) {
          for (const p of t.partitions) {
            committed.set(`${t.topic}:${p.partition}`, { offset: Number(p.offset), meta: parseCommitMeta(p.metadata) });
          }
        }
        for (const topic of topics) {
          for (const o of await admin.fetchTopicOffsets(topic)) {
            ends.set(`${topic}:${o.partition}`, { low: Number(o.low), high: Number(o.high) });
          }
          const reader = this.#o.positions?.readPositions;
          if (reader !== undefined) {
            const parts = tps.filter((t) => t.topic === topic).map((t) => t.partition);
            for (const [p, pos] of await reader.call(this.#o.positions, topic, parts)) stored.set(`${topic}:${p}`, pos);
          }
        }
        break;
      } catch (err) {
        logger.warn({ err: (err as Error).message, attempt }, 'kafka: reading committed offsets failed; retrying');
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    }
    if (gen !== this.#gen) return;
    for (const tp of tps) {
      const l = this.#live.get(key(tp));
      if (l === undefined || l.gen !== gen) continue;
      const c = committed.get(key(tp));
      const e = ends.get(key(tp));
      if (e !== undefined) l.hw = e.high;
      const s = stored.get(key(tp));
      if (s !== undefined) {
        // The sink's position was written with its rows: it, not the group's commit, is the truth.
        engine.openPartition(l.id, { identity: tp, watermarkMs: s.watermarkMs, appliedEnd: s.appliedEnd });
        l.start = s.position;
        if (c === undefined || c.offset !== s.position) l.seekTo = s.position;
        logger.info({ partition: key(tp), offset: s.position, watermark: new Date(s.watermarkMs).toISOString() }, 'kafka: resuming from the position stored in the sink');
        continue;
      }
      const meta = c?.meta ?? null;
      engine.openPartition(l.id, { identity: tp, ...meta });
      l.start = c !== undefined && c.offset >= 0 ? c.offset : e === undefined ? null : kafka.from === 'earliest' ? e.low : e.high;
      if (meta !== null) logger.info({ partition: key(tp), offset: c?.offset, watermark: new Date(meta.watermarkMs).toISOString(), appliedEnd: meta.appliedEnd }, 'kafka: resuming from commit');
    }
  }

  async #onBatch({ batch, resolveOffset, isStale }: EachBatchPayload): Promise<void> {
    const { metrics, batchSize, batchMaxBytes, intakeMaxBytes } = this.#o;
    if (isStale() || batch.messages.length === 0) return;
    const l = this.#live.get(key(batch));
    if (l === undefined) return;
    await l.ready;
    if (this.#live.get(key(batch)) !== l || isStale()) return;
    if (l.seekTo !== null) {
      const to = l.seekTo;
      l.seekTo = null;
      if (Number(batch.firstOffset()) !== to && this.#consumer !== null) {
        // kafkajs started from the group's commit; the sink's position wins. Drop this batch.
        this.#consumer.seek({ topic: l.tp.topic, partition: l.tp.partition, offset: String(to) });
        return;
      }
    }
    metrics.fetchBatchMessages.observe(batch.messages.length);
    const hw = Number(batch.highWatermark);
    if (Number.isFinite(hw)) l.hw = hw;
    // Split a fetch into pool-sized batches; each carries its positions for commits and dead letters.
    const builder = new BatchBuilder(Math.min(batchMaxBytes, 1 << 20));
    let positions: string[] = [];
    let keys: Array<Buffer | null> = [];
    let oversized = new Map<number, { bytes: number; detail?: string }>();
    let refusal: string | null = null;
    const maxMessageBytes = this.#o.maxMessageBytes ?? Infinity;
    let firstTs = 0;
    let lastTs = 0;
    const msgs = batch.messages;
    const cut = (endPosition: number) => {
      const { data, offsets } = builder.take();
      const b: SourceBatch = {
        partition: l.id,
        data,
        offsets,
        positions,
        keys,
        startPosition: Number(positions[0]),
        endPosition,
        firstTimestampMs: firstTs,
        lastTimestampMs: lastTs,
        ...(oversized.size > 0 ? { oversized } : {}),
      };
      this.#intake.push({ gen: l.gen, live: l, batch: b });
      this.#intakeBytes += data.length;
      positions = [];
      keys = [];
      oversized = new Map();
    };
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i]!;
      const ts = Number(m.timestamp);
      if (builder.count === 0) firstTs = ts;
      lastTs = ts;
      const attributes = (m as { attributes?: number }).attributes;
      if (attributes === REFUSED_RECORD_ATTRIBUTE && m.value !== null && m.value.length === 0) {
        // A stand-in for a record of a compressed batch refused by the decompression bound.
        const h = m.headers?.[REFUSED_HEADER];
        if (h !== undefined) refusal = String(h);
        oversized.set(builder.count, { bytes: -1, detail: refusal ?? 'compressed record batch over the decompression bound: refused' });
        builder.push(Buffer.alloc(0));
      } else if (m.value !== null && m.value.length > maxMessageBytes) {
        // Only what the decoder needs to reject it as too_large (and the dead letter keeps) is copied.
        oversized.set(builder.count, { bytes: m.value.length });
        builder.push(m.value.subarray(0, maxMessageBytes + 1));
      } else {
        // A null value (tombstone) becomes an empty message: dead-lettered as empty_message, not dropped.
        builder.push(m.value ?? Buffer.alloc(0));
      }
      positions.push(m.offset);
      keys.push(m.key ?? null);
      const last = i === msgs.length - 1;
      if (last) cut(Number(batch.lastOffset()) + 1);
      else if (builder.count >= batchSize || builder.bytes >= batchMaxBytes) cut(Number(msgs[i + 1]!.offset));
    }
    // The fetch position moves on now; what we commit is decided by the engine's windows.
    resolveOffset(batch.lastOffset());
    this.#wakePump?.();
    if (this.#intakeBytes >= intakeMaxBytes && !l.paused && this.#consumer !== null) {
      this.#consumer.pause([{ topic: l.tp.topic, partitions: [l.tp.partition] }]);
      l.paused = true;
      metrics.pausedPartitions.inc();
    }
  }

  /** Moves fetched batches into the engine in order; engine.submit waits for pool capacity. */
  async #pump(): Promise<void> {
    const { engine, logger } = this.#o;
    for (;;) {
      const item = this.#intake.shift();
      if (item !== undefined) this.#intakeBytes -= item.batch.data.length;
      if (item === undefined) {
        for (const w of this.#intakeWaiters.splice(0)) w();
        if (this.#finished) return;
        await new Promise<void>((resolve) => (this.#wakePump = resolve));
        this.#wakePump = null;
        continue;
      }
      if (item.gen !== this.#gen || this.#live.get(key(item.live.tp)) !== item.live) continue;
      this.#submitting = true;
      try {
        await engine.submit(item.batch);
      } catch (err) {
        this.#fatal = err instanceof Error ? err : new Error(String(err));
        logger.error({ err: this.#fatal.message }, 'kafka: engine failed; stopping');
        this.stop();
        this.#intake = [];
        this.#intakeBytes = 0;
      } finally {
        this.#submitting = false;
      }
      if (this.#intakeBytes <= this.#o.intakeMaxBytes / 2) this.#resumePaused();
    }
  }

  #resumePaused(): void {
    const consumer = this.#consumer;
    if (consumer === null || this.#stopping) return;
    for (const l of this.#live.values()) {
      if (!l.paused) continue;
      try {
        consumer.resume([{ topic: l.tp.topic, partitions: [l.tp.partition] }]);
      } catch {
        continue;
      }
      l.paused = false;
      this.#o.metrics.pausedPartitions.dec();
    }
  }

  #intakeEmpty(): Promise<void> {
    if (this.#intake.length === 0 && !this.#submitting) return Promise.resolve();
    return new Promise<void>((resolve) => this.#intakeWaiters.push(resolve));
  }

  /** Forgets every held partition; resolves when their applies already under way have finished. */
  #dropAll(): Promise<void> {
    const settled: Array<Promise<void>> = [];
    for (const l of this.#live.values()) {
      settled.push(this.#o.engine.dropPartition(l.id));
      this.#o.metrics.lagMessages.remove({ topic: l.tp.topic, partition: String(l.tp.partition) });
      this.#o.metrics.lagSeconds.remove({ topic: l.tp.topic, partition: String(l.tp.partition) });
    }
    this.#live.clear();
    this.#intake = [];
    this.#intakeBytes = 0;
    for (const w of this.#intakeWaiters.splice(0)) w();
    this.#o.metrics.assignedPartitions.set(0);
    this.#o.metrics.pausedPartitions.set(0);
    return Promise.all(settled).then(() => {});
  }

  /** Commits, per held partition, the engine's commit point with the emitted boundary as metadata. */
  #commit(reason: 'interval' | 'rebalance' | 'shutdown'): Promise<void> {
    this.#commitChain = this.#commitChain.then(async () => {
      const consumer = this.#consumer;
      if (consumer === null) return;
      // A sink that owns positions stores them itself, with its rows (PostgreSQL: in its table; Kafka
      // exactly-once: in its transactions, to this very group). Committing here too would race with it:
      // the broker keeps the offset commit appended last to __consumer_offsets, and a transaction's
      // offsets are appended before it commits, so a plain commit of an older point sent meanwhile
      // wins, and the next owner emits windows again.
      if (this.#o.positions !== undefined) return;
      const { engine, metrics, logger } = this.#o;
      const gen = this.#gen;
      const offsets: Array<{ topic: string; partition: number; offset: string; metadata: string }> = [];
      const commitsFor: Array<[Live, string]> = [];
      for (const l of this.#live.values()) {
        const cp = engine.commitPoint(l.id);
        if (cp === null) continue;
        const text = formatCommitMeta(cp);
        const id = `${cp.position}|${text}`;
        if (id === l.lastCommitted) continue;
        offsets.push({ topic: l.tp.topic, partition: l.tp.partition, offset: String(cp.position), metadata: text });
        commitsFor.push([l, id]);
      }
      if (offsets.length === 0) return;
      const end = metrics.commitSeconds.startTimer();
      try {
        await consumer.commitOffsets(offsets);
        end();
        metrics.commits.inc({ result: 'ok' });
        if (gen === this.#gen) for (const [l, id] of commitsFor) l.lastCommitted = id;
        logger.debug({ reason, offsets }, 'kafka: committed');
      } catch (err) {
        metrics.commits.inc({ result: 'error' });
        logger.warn({ reason, err: (err as Error).message }, 'kafka: commit failed; the next one retries');
      }
    });
    return this.#commitChain;
  }

  /** Once a second: lag metrics, and idle flushing of caught-up partitions. */
  async #tick(): Promise<void> {
    const { engine, metrics, kafka } = this.#o;
    const now = Date.now();
    for (const l of [...this.#live.values()]) {
      const next = engine.appliedEnd(l.id) ?? l.start;
      const labels = { topic: l.tp.topic, partition: String(l.tp.partition) };
      const pending = this.#intake.some((i) => i.live === l) || engine.pendingAgeSeconds(l.id, now) !== null;
      if (l.hw === null || next === null) continue;
      const lag = Math.max(0, l.hw - next);
      metrics.lagMessages.set(labels, lag);
      if (lag === 0 && !pending) {
        metrics.lagSeconds.set(labels, 0);
        const last = engine.lastActivityMs(l.id);
        if (last !== null && now - last >= kafka.idleFlushMs) await engine.advanceIdle(l.id, now);
      } else {
        const age = engine.pendingAgeSeconds(l.id, now) ?? this.#ageOfNextUnfetched(l, now);
        if (age !== null) metrics.lagSeconds.set(labels, age);
      }
    }
  }

  /**
   * Nothing of this partition is in hand (paused or not yet fetched): the next record to process is
   * at least as old as the last one applied, so that age is a lower bound of the lag.
   */
  #ageOfNextUnfetched(l: Live, now: number): number | null {
    const ts = this.#o.engine.lastAppliedTimestampMs(l.id);
    return ts === null ? null : Math.max(0, (now - ts) / 1000);
  }

  /** High watermarks for partitions that fetch nothing (idle, paused): lag stays fresh. */
  async #pollHighWatermarks(): Promise<void> {
    const admin = this.#admin;
    if (admin === null || this.#live.size === 0) return;
    const topics = new Set([...this.#live.values()].map((l) => l.tp.topic));
    try {
      for (const topic of topics) {
        for (const o of await admin.fetchTopicOffsets(topic)) {
          const l = this.#live.get(`${topic}:${o.partition}`);
          if (l !== undefined) l.hw = Number(o.high);
        }
      }
    } catch (err) {
      this.#o.logger.debug({ err: (err as Error).message }, 'kafka: high watermark poll failed');
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<T>((_, reject) => {
      t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    }),
  ]);
}
