// The Redis Streams source: consumer-group reads handed to the engine, one lane per (stream,
// consumer). Each instance serves its own consumer's lanes, reading its pending entries (PEL) first
// and then new ones ('>'); a consumer whose lease expired and that stayed idle REDIS_CLAIM_IDLE_MS
// is taken over: another instance serves that consumer's lanes (its PEL under its name, restored
// from its stored position) until its pending entries are acknowledged, then deletes it.
// Acknowledgement only below the lane's commit point, exactly like Kafka offsets. Built from the lane
// parts the Kafka source uses: the lane host's calls (../types.ts), commits (../lanes/commits.ts),
// idle flush (../lanes/idle.ts), the jittered back-off (backoffMs, in the read loop: read.ts) and the
// lag from lane status; a lane's reads are paced by ../lanes/pace.ts.
import { randomBytes } from 'node:crypto';
import type { CommitPoint, LaneInit } from '../../commit/types.js';
import { LaneCommits, type CommitReason } from '../lanes/commits.js';
import { flushIdle } from '../lanes/idle.js';
import { pendingAgeSeconds } from '../types.js';
import { CatchUp } from '../catch-up.js';
import { Signal, sleep } from '../../async/index.js';
import { StreamstatsError } from '../../errors.js';
import { commitLane } from './acks.js';
import { createGroup, groupInfo } from './group.js';
import { connect, num, pairs, text, RELEASE_LEASE, RENEW_LEASE, type RedisConn } from './client.js';
import { LaneConn } from './lane-conn.js';
import { redactedRedisUrl } from './config.js';
import { LanePositions, idMs } from './position.js';
import { keys, readPosition, readSegments, partitionOf, type LaneKey } from './positions.js';
import type { RedisSourceOptions, StreamLane } from './lane.js';
import { readLane } from './read.js';

export type { RedisSourceOptions } from './lane.js';

export class RedisSource {
  readonly describe: string;
  readonly #o: RedisSourceOptions;
  readonly #token = randomBytes(8).toString('hex');
  readonly #k: ReturnType<typeof keys>;
  readonly #stop = new Signal();
  readonly #lanes = new Map<number, StreamLane>();
  /** Consumers whose lease we hold (ours, and those we took over), with the lanes serving them. */
  readonly #leases = new Set<string>();
  #nextId = 1;
  #ctl: RedisConn | null = null;
  #ready = false;
  #fatal: Error | null = null;
  #chain: Promise<void> = Promise.resolve();
  readonly #commits: LaneCommits<StreamLane>;
  readonly #catchUp: CatchUp;

  constructor(opts: RedisSourceOptions) {
    this.#catchUp = new CatchUp(opts.metrics);
    this.#o = opts;
    this.describe = `redis:${opts.redis.streams.join(',')}`;
    this.#k = keys(opts.redis.groupId);
    this.#commits = new LaneCommits<StreamLane>({
      metrics: opts.metrics,
      logger: opts.logger,
      points: async () => {
        const out: Array<[StreamLane, CommitPoint]> = [];
        for (const lane of [...this.#lanes.values()]) {
          const cp = opts.lanes.status(lane.id)?.commitPoint ?? null;
          if (cp !== null) out.push([lane, cp]);
        }
        return out;
      },
      mark: (_, cp) => `${cp.position}|${cp.watermarkMs}|${cp.appliedEnd}`,
      send: async (points) => {
        for (const [lane, cp] of points) await commitLane(this.#ctl!, opts.redis.groupId, opts.positions, lane, cp);
      },
      // A lane's failed commit (Redis away) costs that lane only, until the next commit.
      per: 'each',
      onFailed: (err, _, points) => opts.logger.warn({ err, stream: points[0]?.[0].stream }, 'redis: commit failed; the next one retries'),
    });
    opts.lanes.replayWith?.({ rewind: (lane, point) => this.#rewind(lane, point) });
  }

  /**
   * A lane's state was lost (its owner worker died): the lane is read again from its commit point
   * under a fresh lane number, as a restart would read it. Everything it read and did not commit is
   * still pending for its consumer (acknowledgement stops below the commit point), so its PEL from
   * the start holds the replay; the entries below the point in it are skipped (their rows are
   * written) and acknowledged, as after a restart. The old lane's read loop ends first, so no read
   * of it delivers entries the new lane's PEL read has already passed.
   */
  #rewind(id: number, point: CommitPoint | null): boolean {
    const old = this.#lanes.get(id);
    // Closed since (a finished takeover), or stopping: the next run restores it from the stored point.
    if (old === undefined || this.#stop.raised) return true;
    const init: LaneInit = point === null ? old.init : { identity: old.init.identity, ...point };
    // The same stream, consumer, ownership, positions and replay bound; read from the PEL's start.
    const lane: StreamLane = {
      ...old, id: this.#nextId++, init, cursor: '0', lastId: '0', caughtUp: false, loop: Promise.resolve(), conn: null, stalled: null,
      restoredPosition: point?.position ?? old.restoredPosition, restoredAppliedEnd: point?.appliedEnd ?? old.restoredAppliedEnd,
    };
    this.#lanes.delete(id);
    this.#lanes.set(lane.id, lane);
    this.#o.lanes.open(lane.id, init);
    this.#o.logger.warn({ stream: lane.stream, consumer: lane.consumer, position: lane.restoredPosition, lane: lane.id }, 'redis: replaying a lane that lost its state, from its commit point (its pending entries)');
    lane.loop = (async () => {
      await old.loop;
      if (this.#stop.raised || this.#lanes.get(lane.id) !== lane) return;
      // Built after the old loop ended: it may have placed entries (segments) that the replay reads again.
      lane.positions = old.positions.rewound(Math.max(lane.restoredPosition, lane.restoredAppliedEnd));
      const conn = new LaneConn(this.#o.redis, `${this.#o.redis.consumer}:${lane.id}`);
      lane.conn = conn;
      await this.#read(lane, conn).finally(() => conn.close());
    })().catch((err: unknown) => this.#fail(err));
    return true;
  }

  /** Ready: every lane reading, over connections that are up (not while Redis is away or a group is being recreated). */
  get ready(): boolean {
    return this.#ready && this.#fatal === null && this.#ctl?.connected === true && this.#stalledLanes() === 0;
  }

  #stalledLanes(): number {
    let n = 0;
    for (const l of this.#lanes.values()) if (l.stalled !== null || l.conn?.connected === false) n++;
    return n;
  }

  stop(): void {
    this.#stop.raise();
  }

  async run(): Promise<void> {
    const { redis, logger } = this.#o;
    const ctl = await connect(redis, logger, `${redis.consumer}:ctl`, this.#stop);
    if (ctl === null) return;
    this.#ctl = ctl;
    const timers: NodeJS.Timeout[] = [];
    try {
      for (const s of redis.streams) await createGroup(ctl, this.#o, s);
      await this.#acquireOwnLease();
      if (this.#stop.raised) return;
      const partition = await partitionOf(ctl, redis.groupId, redis.consumer);
      for (const stream of redis.streams) await this.#openLane({ stream, consumer: redis.consumer, partition }, true);
      this.#ready = true;
      logger.info({ url: redactedRedisUrl(redis), streams: redis.streams, group: redis.groupId, consumer: redis.consumer, partition }, 'redis: consuming');
      const every = (ms: number, fn: () => Promise<void>) => timers.push(setInterval(() => void this.#serial(fn), ms));
      every(this.#o.commitIntervalMs, () => this.#commitAll());
      every(Math.min(1000, this.#o.idleFlushMs), () => this.#idleFlush());
      every(this.#o.lagIntervalMs, () => this.#lag());
      every(Math.max(200, Math.floor(redis.claimIdleMs / 3)), () => this.#takeOver());
      // Renewals do not queue behind commits and lag polls: a slow commit must not cost the lease.
      const renew = () => void this.#renewLeases().catch((err: unknown) => logger.warn({ err }, 'redis: lease renewal failed; retrying'));
      timers.push(setInterval(renew, Math.max(100, Math.floor(redis.claimIdleMs / 4))));
      // Outside the serial chain: that waits on Redis while it is away, and this gauge must say so then.
      timers.push(setInterval(() => this.#o.metrics.redisLanesStalled.set(this.#stalledLanes()), 500));
      await this.#stop.wait();
    } finally {
      for (const t of timers) clearInterval(t);
      this.#ready = false;
      this.#stop.raise();
      await Promise.all([...this.#lanes.values()].map((l) => l.loop));
      // Shutdown: every batch handed over is applied, the final commit, leases given back.
      await this.#o.lanes.drain().catch(() => {});
      await this.#serial(() => this.#commitAll('shutdown'));
      for (const c of this.#leases) await ctl.send(['EVAL', RELEASE_LEASE, '1', this.#k.lease(c), this.#token]).catch(() => {});
      await ctl.close();
      logger.info('redis: in-flight batches applied, entries acknowledged, leases released');
    }
    if (this.#fatal !== null) throw this.#fatal;
  }

  /** Timer work runs one at a time and in order (commit, flush, lag, leases share one connection). */
  #serial(fn: () => Promise<void>): Promise<void> {
    this.#chain = this.#chain.then(fn).catch((err: unknown) => this.#o.logger.warn({ err }, 'redis: periodic task failed; the next run retries'));
    return this.#chain;
  }

  #fail(err: unknown): void {
    if (this.#fatal === null) this.#fatal = err instanceof Error ? err : new Error(String(err));
    this.#o.logger.error({ err: this.#fatal }, 'redis: source failed; stopping');
    this.stop();
  }

  /** Waits while an earlier incarnation's lease (or a taker-over's) is live: one server per consumer. */
  async #acquireOwnLease(): Promise<void> {
    const { redis, logger } = this.#o;
    let logged = false;
    while (!this.#stop.raised) {
      if (await this.#tryLease(redis.consumer)) return;
      if (!logged) logger.warn({ consumer: redis.consumer, waitMs: redis.claimIdleMs }, 'redis: consumer lease held (an earlier run, or an instance taking over); waiting for it');
      logged = true;
      await sleep(Math.min(1000, redis.claimIdleMs / 4), this.#stop);
    }
  }

  async #tryLease(consumer: string): Promise<boolean> {
    const r = await this.#ctl!.send(['SET', this.#k.lease(consumer), this.#token, 'NX', 'PX', String(this.#o.redis.claimIdleMs)]);
    if (r === null) return false;
    this.#leases.add(consumer);
    return true;
  }

  async #openLane(key: LaneKey, own: boolean): Promise<void> {
    const { lanes, logger, redis } = this.#o;
    const stored = await readPosition(this.#ctl!, redis.groupId, key, this.#o.positions);
    const seg = await readSegments(this.#ctl!, redis.groupId, key);
    const positions = new LanePositions(seg.segments, seg.mark, stored === null ? 0 : Math.max(stored.position, stored.appliedEnd));
    const id = this.#nextId++;
    const identity = { topic: key.stream, partition: key.partition };
    const restored = stored === null ? { identity } : { identity, watermarkMs: stored.watermarkMs, appliedEnd: stored.appliedEnd };
    const init: LaneInit = stored?.keptFromMs === undefined ? restored : { ...restored, keptFromMs: stored.keptFromMs };
    lanes.open(id, init);
    const lane: StreamLane = { ...key, id, own, init, cursor: '0', lastId: '0', restoredPosition: stored?.position ?? 0, restoredAppliedEnd: stored?.appliedEnd ?? -1, caughtUp: false, loop: Promise.resolve(), positions, conn: null, stalled: null, replayUpTo: null };
    this.#lanes.set(id, lane);
    if (stored !== null) logger.info({ stream: key.stream, consumer: key.consumer, position: stored.position, before: positions.idBelow(stored.position), segments: seg.segments.length, own }, 'redis: lane resumes from its stored position');
    const conn = new LaneConn(redis, `${redis.consumer}:${id}`);
    lane.conn = conn;
    lane.loop = this.#read(lane, conn).catch((err: unknown) => this.#fail(err)).finally(() => conn.close());
    this.#o.metrics.assignedPartitions.set(this.#lanes.size);
  }

  #read(lane: StreamLane, conn: LaneConn): Promise<void> {
    return readLane(lane, conn, { ...this.#o, describe: this.describe, stop: this.#stop, ctl: this.#ctl!, serves: (l) => this.#lanes.get(l.id) === l });
  }

  /** Per lane: store the commit point (unless the sink did), then XACK the lane's entries below it. */
  #commitAll(reason: CommitReason = 'interval'): Promise<void> {
    return this.#commits.commit(reason);
  }

  /**
   * Lanes caught up with nothing pending: those without entries for IDLE_FLUSH_SECONDS let their
   * watermark follow the wall clock; a taken-over one whose PEL is acknowledged is closed.
   */
  async #idleFlush(): Promise<void> {
    const { lanes, idleFlushMs } = this.#o;
    const now = Date.now();
    const quiet = [...this.#lanes.values()].filter((l) => l.caughtUp && (lanes.status(l.id)?.oldestPendingMs ?? null) === null);
    await flushIdle(quiet, now, { lanes, idleFlushMs });
    for (const lane of quiet) if (!lane.own) await this.#finishTakeover(lane);
  }

  /** Lag per stream: entries not yet delivered to the group, entries pending, and the age of the oldest of them. */
  async #lag(): Promise<void> {
    const { metrics, redis, lanes } = this.#o;
    const now = Date.now();
    for (const stream of redis.streams) {
      const g = await groupInfo(this.#ctl!, redis.groupId, stream);
      if (g === undefined) continue;
      // The group's lag counter keeps counting entries trimmed (XTRIM) or deleted before delivery, for
      // good: the first undelivered entry says whether any is left, and the stream's length bounds them.
      const next = await this.#ctl!.send(['XRANGE', stream, `(${text(g.get('last-delivered-id')) || '0-0'}`, '+', 'COUNT', '1']);
      const first = Array.isArray(next) && Array.isArray(next[0]) ? text(next[0][0]) : '';
      let lag = 0;
      if (first !== '') {
        const len = num(await this.#ctl!.send(['XLEN', stream])) ?? 1;
        lag = Math.max(1, Math.min(num(g.get('lag')) ?? len, len));
      }
      const pending = num(g.get('pending')) ?? 0;
      metrics.lagMessages.set({ stream }, lag);
      metrics.redisPending.set({ stream }, pending);
      let ageS = 0;
      if (first !== '') {
        ageS = Math.max(0, (now - idMs(first)) / 1000);
      } else {
        for (const l of this.#lanes.values()) if (l.stream === stream) ageS = Math.max(ageS, pendingAgeSeconds(lanes.status(l.id), now) ?? 0);
      }
      metrics.lagSeconds.set({ stream }, ageS);
      this.#catchUp.observe({ stream }, now, lag, ageS);
    }
  }

  async #renewLeases(): Promise<void> {
    const { redis } = this.#o;
    const ctl = this.#ctl!;
    for (const c of [...this.#leases]) {
      const ok = num(await ctl.send(['EVAL', RENEW_LEASE, '1', this.#k.lease(c), this.#token, String(redis.claimIdleMs)]));
      // Released meanwhile (a takeover finished): not a loss.
      if (ok === 1 || !this.#leases.has(c)) continue;
      // Another instance serves this consumer now (we were stalled past the lease): two servers of
      // one lane would emit its windows twice, so this instance stops and its supervisor restarts it.
      this.#fail(new StreamstatsError('STREAMSTATS_SOURCE', `redis: lease of consumer ${c} lost (no renewal within REDIS_CLAIM_IDLE_MS=${redis.claimIdleMs})`, { canRetry: false }));
      return;
    }
  }

  /** Takes over consumers that are gone: no lease, idle REDIS_CLAIM_IDLE_MS, entries pending. */
  async #takeOver(): Promise<void> {
    const { redis, logger } = this.#o;
    const ctl = this.#ctl!;
    for (const stream of redis.streams) {
      const consumers = await ctl.send(['XINFO', 'CONSUMERS', stream, redis.groupId]);
      for (const m of (Array.isArray(consumers) ? consumers : []).map(pairs)) {
        const name = text(m.get('name'));
        if (this.#leases.has(name) || (num(m.get('pending')) ?? 0) === 0 || (num(m.get('idle')) ?? 0) < redis.claimIdleMs) continue;
        if (!(await this.#tryLease(name))) continue;
        logger.warn({ consumer: name, stream, pending: num(m.get('pending')) }, 'redis: taking over a dead consumer\'s pending entries');
        this.#o.metrics.rebalances.inc();
        try {
          const partition = await partitionOf(ctl, redis.groupId, name);
          for (const s of redis.streams) await this.#openLane({ stream: s, consumer: name, partition }, false);
        } catch (err) {
          // Half a takeover would hold the lease with nobody serving: give it back, the next tick retries.
          for (const l of [...this.#lanes.values()]) {
            if (l.consumer !== name) continue;
            this.#lanes.delete(l.id);
            void this.#o.lanes.closeDirty(l.id);
          }
          this.#leases.delete(name);
          await ctl.send(['EVAL', RELEASE_LEASE, '1', this.#k.lease(name), this.#token]).catch(() => {});
          throw err;
        }
      }
    }
  }

  /** A taken-over lane whose PEL is read and acknowledged is closed; the consumer goes once all its lanes are. */
  async #finishTakeover(lane: StreamLane): Promise<void> {
    const { redis, lanes, logger } = this.#o;
    const ctl = this.#ctl!;
    const summary = await ctl.send(['XPENDING', lane.stream, redis.groupId, '-', '+', '1', lane.consumer]);
    if (Array.isArray(summary) && summary.length > 0) return;
    this.#lanes.delete(lane.id);
    await lane.loop;
    await lanes.closeDirty(lane.id);
    if ([...this.#lanes.values()].some((l) => l.consumer === lane.consumer)) return;
    for (const s of redis.streams) await ctl.send(['XGROUP', 'DELCONSUMER', s, redis.groupId, lane.consumer]);
    this.#leases.delete(lane.consumer);
    await ctl.send(['EVAL', RELEASE_LEASE, '1', this.#k.lease(lane.consumer), this.#token]);
    this.#o.metrics.assignedPartitions.set(this.#lanes.size);
    logger.info({ consumer: lane.consumer }, 'redis: dead consumer\'s entries processed and acknowledged; consumer deleted');
  }
}
