// The Kafka source: wires the pieces of a consumer-group member, split where kafkajs splits its own
// consumer. supervisor.ts runs one session after another with back-off; session.ts is one kafkajs
// consumer from connect to leave; assignment.ts the partitions held in the current generation;
// restore.ts where each partition resumes on a join; fetch.ts cuts a fetch into pool batches;
// intake.ts queues them for the lane host, pausing partitions at its byte budget; commits.ts commits
// the lanes' commit points; lag.ts and idle.ts keep lag metrics fresh and close idle windows. Each
// held partition is a lane of the host (the engine), named by its Held id; the source never reaches
// into the engine beyond the LaneHost calls (../types.ts).
//
// kafkajs facts this relies on (2.2.4): the resolved offset IS the fetch position, so eachBatch
// resolves right away and returns (heartbeats only flow between batches); after every group join
// kafkajs restarts each assigned partition from its committed offset, so on a join all partition
// state is dropped and rebuilt from the commit (offset + metadata).
import { connect } from 'node:net';
import kafkajs, { type EachBatchPayload, type Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { Signal, withTimeout } from '../../async/index.js';
import type { KafkaConfig } from '../../config/index.js';
import type { Metrics } from '../../metrics/index.js';
import type { CommitPoint, LaneInit, PositionStore } from '../../commit/types.js';
import { kafkajsConfig } from '../../kafka/client.js';
import { notKafkaHint } from '../../kafka/errors.js';
import { registerCodecs } from '../../kafka/codecs.js';
import { Assignment, byTopic, tpKey, type TopicPartition } from './assignment.js';
import { Committer } from './commits.js';
import { cutFetch } from './fetch.js';
import { flushIdle } from '../lanes/idle.js';
import { Intake } from './intake.js';
import { Lag } from './lag.js';
import { installFastBatch } from './batch.js';
import { installFastRecords } from './records.js';
import { useRuns } from './runs.js';
import { restore } from './restore.js';
import { GroupSession } from './session.js';
import { Supervisor } from './supervisor.js';
import { limitRepeats } from './repeat-log.js';
import { BufferRecycler } from '../recycle.js';
import type { LaneHost } from '../types.js';

/** Identical warnings and errors are written at most once per this interval, with a count (an outage repeats them). */
export const REPEATED_LOG_INTERVAL_MS = 10_000;

/** Longest a back-off's broker probe (a TCP connect) waits for an answer. */
const BROKER_PROBE_TIMEOUT_MS = 500;

/** Whether any of the brokers (host:port) accepts a TCP connection within `timeoutMs`. */
function anyBrokerAnswers(brokers: readonly string[], timeoutMs: number): Promise<boolean> {
  return Promise.all(brokers.map((b) => new Promise<boolean>((resolve) => {
    const at = b.lastIndexOf(':');
    const socket = connect({ host: b.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(b.slice(at + 1)), timeout: timeoutMs });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  }))).then((r) => r.includes(true));
}

/** Longest a scrape waits for the high watermarks it polls; past it the last known ones are used. */
export const LAG_SCRAPE_POLL_MS = 1_000;

export interface KafkaSourceOptions {
  readonly kafka: KafkaConfig;
  /** Runs the partitions' lanes: the engine. */
  readonly lanes: LaneHost;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  /**
   * Bytes fetched and waiting for the lane host before busy partitions are paused (resumed below half).
   * Large on purpose: once every partition is paused, kafkajs sleeps a whole KAFKA_MAX_WAIT_MS before
   * fetching again, so pausing early starves the pool.
   */
  readonly intakeMaxBytes: number;
  /** MAX_MESSAGE_BYTES: longer values are copied into batches cut to this + 1 bytes. */
  readonly maxMessageBytes?: number;
  /** A sink that stores positions with its rows: where a partition resumes is read from it. */
  readonly positions?: PositionStore;
  /**
   * With `positions`: whether the points it stored are committed to the group too, trailing it, so
   * lag tools see the group (default false). Only for a store that is not the group's offsets
   * itself: the exactly-once Kafka sink writes them in its transactions, and a second writer races.
   */
  readonly commitStoredPositions?: boolean;
}

export class KafkaSource {
  readonly describe: string;
  readonly #o: KafkaSourceOptions;
  readonly #client: Kafka;
  readonly #stop = new Signal();
  readonly #held = new Assignment();
  readonly #intake: Intake;
  readonly #lag: Lag;
  readonly #committer: Committer;
  readonly #supervisor: Supervisor;
  /** Whether a session ever joined the group: failures before that may be a wrong address. */
  #everJoined = false;
  /** Batch buffers the lane host gave back (Batch.release), for the next fetches' batches. */
  readonly #recycler = new BufferRecycler();
  #session: GroupSession | null = null;
  #fatal: Error | null = null;
  /** Messages behind when the group was left at shutdown (null until then). */
  #lagAtStop: number | null = null;
  /** The scrape-time refresh under way: concurrent scrapes share it. */
  #refreshing: Promise<void> | null = null;

  constructor(opts: KafkaSourceOptions) {
    const { kafka, lanes, metrics } = opts;
    const logger = limitRepeats(opts.logger, REPEATED_LOG_INTERVAL_MS);
    this.#o = { ...opts, logger };
    this.describe = `kafka:${kafka.topics.join(',')}`;
    registerCodecs(opts.intakeMaxBytes);
    // Before the first fetch: kafkajs loads its fetch response decoder lazily (./records.ts).
    if (!installFastRecords()) logger.debug('kafka: kafkajs fetch decoder already loaded, or not kafkajs 2.2.4: its own record decoding stays');
    if (!installFastBatch()) logger.debug('kafka: kafkajs consumer loaded before ./preload.js, or not kafkajs 2.2.4: its own Batch stays');
    this.#client = new kafkajs.Kafka(kafkajsConfig(kafka, logger));
    this.#intake = new Intake({
      maxBytes: opts.intakeMaxBytes,
      submit: (b) => lanes.submit(b),
      isCurrent: (h) => this.#held.isCurrent(h),
      onFatal: (err) => {
        this.#fatal = err;
        logger.error({ err }, 'kafka: engine failed; stopping');
        this.stop();
      },
      paused: metrics.pausedPartitions,
    });
    this.#lag = new Lag({ lanes, metrics, logger });
    this.#committer = new Committer({
      lanes,
      metrics,
      logger,
      consumer: () => this.#session?.consumer ?? null,
      held: () => this.#held.values(),
      from: opts.positions === undefined ? 'lanes' : opts.commitStoredPositions === true ? opts.positions : 'none',
    });
    this.#supervisor = new Supervisor({
      session: () => this.#runSession(),
      stop: this.#stop,
      baseDelayMs: Math.min(1000, kafka.retryMaxMs),
      maxDelayMs: kafka.retryMaxMs,
      onFailure: (err) => {
        // Before any join, a connection closed or left unanswered says more about the address than
        // about an outage: say so, or the line repeats with no clue for as long as it runs.
        const hint = this.#everJoined ? null : notKafkaHint(err, kafka.brokers, kafka.ssl !== null);
        logger.error({ err, brokers: kafka.brokers, ...(hint === null ? {} : { hint }) }, `kafka: session failed (brokers unreachable or consumer crashed); reconnecting${hint === null ? '' : `; hint: ${hint}`}`);
      },
      onBackoff: (attempt, delayMs) => {
        metrics.kafkaReconnects.inc();
        logger.warn({ attempt, delayMs: Math.round(delayMs) }, 'kafka: reconnecting after back-off (sooner if a broker answers again)');
      },
      probe: () => anyBrokerAnswers(kafka.brokers, BROKER_PROBE_TIMEOUT_MS),
    });
    lanes.replayWith?.({ rewind: (lane, point) => this.#rewind(lane, point) });
  }

  /**
   * A lane's state was lost (its owner worker died): the partition is read again from the lane's
   * commit point (or, before its first, from where it resumed) under a fresh lane, which the host
   * rebuilds by replay; batches of the old lane still queued or fetched are stale from here on.
   */
  #rewind(lane: number, point: CommitPoint | null): boolean {
    const h = this.#held.byId(lane);
    // Revoked or replaced since, or stopping: whoever holds the partition next restores it from the commits.
    if (h === undefined || this.#stop.raised) return true;
    const consumer = this.#session?.consumer ?? null;
    const init: LaneInit | undefined = point !== null ? { identity: h.tp, ...point } : h.restoredAt?.init;
    const start = point !== null ? point.position : (h.restoredAt?.start ?? null);
    if (consumer === null || init === undefined || start === null) return false;
    const next = this.#held.replace(h);
    next.restoredAt = { init, start };
    // The fetch already moved past `start`: a batch fetched before the seek took effect is dropped.
    next.seekTo = start;
    this.#o.lanes.open(next.id, init);
    this.#lag.retrack(next, start);
    try {
      consumer.seek({ topic: h.tp.topic, partition: h.tp.partition, offset: String(start) });
    } catch (err) {
      this.#o.logger.error({ err, partition: tpKey(h.tp) }, 'kafka: seeking back to rebuild a lost lane failed');
      return false;
    }
    this.#o.logger.warn({ partition: tpKey(h.tp), offset: start, lane: next.id }, 'kafka: replaying a partition whose lane lost its state, from its commit point');
    return true;
  }

  /** Ready: in the group with an assignment, and nothing crashed. */
  get ready(): boolean {
    return this.#session?.joined === true && this.#fatal === null;
  }

  /**
   * Sets the lag gauges from high watermarks polled now (bounded by LAG_SCRAPE_POLL_MS), so that a
   * scrape never reads less lag than the broker's log end shows at the moment it asked.
   */
  refreshLag(): Promise<void> {
    this.#refreshing ??= (async () => {
      const admin = this.#session?.admin ?? null;
      if (admin !== null) await withTimeout(this.#lag.poll(admin), LAG_SCRAPE_POLL_MS, 'kafka high watermark poll').catch(() => {});
      this.#lag.update(Date.now(), (h) => this.#intake.has(h));
    })().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  /** Messages behind on the held partitions, as the lag gauges last computed them. */
  lagMessages(): number {
    return this.#lag.totalMessages();
  }

  /** Messages behind when it stopped: after the last batches were applied, from high watermarks polled then. */
  get lagAtStop(): number | null {
    return this.#lagAtStop;
  }

  /** Stop fetching; run() then finishes in-flight batches, commits, leaves the group. Idempotent. */
  stop(): void {
    this.#stop.raise();
    this.#intake.stop();
  }

  async run(): Promise<void> {
    const { kafka } = this.#o;
    // This source cuts its batches from record runs (./fetch.ts): no message object a record.
    const releaseRuns = useRuns(kafka.topics);
    const pump = this.#intake.run();
    const commitTimer = setInterval(() => void this.#committer.commit('interval'), kafka.commitIntervalMs);
    const tickTimer = setInterval(() => void this.#tick(), Math.min(1000, kafka.idleFlushMs));
    const lagTimer = setInterval(() => {
      const admin = this.#session?.admin ?? null;
      if (admin !== null) void this.#lag.poll(admin);
    }, kafka.lagIntervalMs);
    try {
      await this.#supervisor.run();
    } finally {
      clearInterval(commitTimer);
      clearInterval(tickTimer);
      clearInterval(lagTimer);
      this.#intake.stop();
      await pump;
      releaseRuns();
    }
    if (this.#fatal !== null) throw this.#fatal;
  }

  async #runSession(): Promise<void> {
    const session: GroupSession = new GroupSession(this.#client, {
      kafka: this.#o.kafka,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      stop: this.#stop,
      handlers: {
        onJoin: (tps, memberId) => this.#onJoin(session, tps, memberId),
        onRebalancing: () => void this.#committer.commit('rebalance'),
        onCrash: () => this.#lag.detach(Date.now()),
        onBatch: (payload) => this.#onBatch(session, payload),
        onEnd: async (stopping) => {
          if (stopping) {
            await this.#drainAndCommit(session);
            if (this.#lag.size > 0) {
              await this.refreshLag();
              this.#lagAtStop = this.#lag.totalMessages();
            }
          }
          else this.#lag.detach(Date.now());
          this.#intake.attach(null);
          void this.#dropAll({ keepLag: !stopping });
        },
      },
    });
    this.#session = session;
    this.#intake.attach(session.flow);
    try {
      await session.run();
    } finally {
      if (this.#session === session) this.#session = null;
    }
  }

  #onJoin(session: GroupSession, tps: TopicPartition[], memberId: string): void {
    const { metrics, logger, lanes, kafka } = this.#o;
    metrics.rebalances.inc();
    this.#supervisor.joined();
    this.#everJoined = true;
    // An emission of the previous generation may still be writing to the sink: the restore must read
    // positions after it, or it would resume from before rows that are already out (and, with the
    // exactly-once sink, fence our own transaction in flight).
    const settled = this.#dropAll();
    const held = this.#held.open(tps);
    const ready = settled
      .then(() => restore(held, {
        admin: session.admin,
        groupId: kafka.groupId,
        from: kafka.from,
        ...(this.#o.positions === undefined ? {} : { positions: this.#o.positions }),
        logger,
        signal: session.ended,
        lanes,
        isCurrent: (h) => this.#held.isCurrent(h),
        onPlan: (h, plan) => this.#lag.track(h, plan.start, plan.hw),
      }))
      .catch((err: unknown) => logger.error({ err }, 'kafka: restoring the assigned partitions failed'));
    for (const h of held) h.ready = ready;
    metrics.assignedPartitions.set(held.length);
    logger.info({ memberId, generation: this.#held.generation, partitions: tps.map(tpKey) }, 'kafka: joined the group');
  }

  async #onBatch(session: GroupSession, { batch, resolveOffset, isStale }: EachBatchPayload): Promise<void> {
    const { metrics, batchSize, batchMaxBytes, maxMessageBytes } = this.#o;
    if (isStale() || batch.messages.length === 0) return;
    const h = this.#held.get(batch);
    if (h === undefined) return;
    await h.ready;
    if (!this.#held.isCurrent(h) || isStale()) return;
    if (h.seekTo !== null) {
      const to = h.seekTo;
      h.seekTo = null;
      const consumer = session.consumer;
      if (Number(batch.firstOffset()) !== to && consumer !== null) {
        // kafkajs started from the group's commit; the sink's position wins. Drop this batch.
        consumer.seek({ topic: h.tp.topic, partition: h.tp.partition, offset: String(to) });
        return;
      }
    }
    metrics.fetchBatchMessages.observe(batch.messages.length);
    this.#lag.sawHighWatermark(h.tp, Number(batch.highWatermark));
    const batches = cutFetch(h.id, batch, { batchSize, batchMaxBytes, recycler: this.#recycler, ...(maxMessageBytes === undefined ? {} : { maxMessageBytes }) });
    // The fetch position moves on now; what is committed is decided by the lanes' windows.
    resolveOffset(batch.lastOffset());
    this.#intake.push(h, batches);
  }

  /** Shutdown: no more fetching, every batch already handed to the lanes is applied, then the final commit. */
  async #drainAndCommit(session: GroupSession): Promise<void> {
    const { logger, lanes } = this.#o;
    try {
      const tps = byTopic([...this.#held.values()].map((h) => h.tp));
      if (tps.length > 0) session.consumer?.pause(tps);
    } catch {
      // Not running (never joined): nothing to pause.
    }
    // Fetched batches not yet handed to the pool are dropped, not processed: shutdown stays short, and
    // nothing is lost, since commits never pass them (the next owner fetches them again).
    this.#intake.stop();
    await this.#intake.idle();
    await lanes.drain().catch(() => {});
    await this.#committer.commit('shutdown');
    logger.info('kafka: in-flight batches applied and offsets committed');
  }

  /**
   * Forgets every held partition; resolves when their applies already under way have finished.
   * `keepLag`: the group is away, not left: the lag of what was held stays visible until the next join.
   */
  #dropAll(o: { keepLag?: boolean } = {}): Promise<void> {
    const old = this.#held.clear();
    if (o.keepLag !== true) this.#lag.clear();
    this.#intake.reset();
    this.#o.metrics.assignedPartitions.set(0);
    return Promise.all(old.map((h) => this.#o.lanes.closeDirty(h.id))).then(() => undefined);
  }

  /** Once a second: lag metrics, and idle flushing of caught-up partitions. */
  async #tick(): Promise<void> {
    const now = Date.now();
    const caughtUp = this.#lag.update(now, (h) => this.#intake.has(h));
    await flushIdle(caughtUp, now, { lanes: this.#o.lanes, idleFlushMs: this.#o.kafka.idleFlushMs });
  }
}
