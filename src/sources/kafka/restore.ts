// Restore on join: where each newly assigned partition resumes and what its engine state starts
// from. Two sources of truth: a sink that stores positions with its rows (its position wins, and the
// first fetch seeks to it when kafkajs started elsewhere), else the group's committed offset, whose
// metadata carries the emitted-window boundary (watermark) and the processed position (replays
// before it are skipped). Reads are retried a few times: a partition restored from nothing would
// emit its windows again.
import type { Admin } from 'kafkajs';
import type { Logger } from 'pino';
import { retry, type Signal } from '../../async/index.js';
import { parseCommitMeta } from '../../commit/meta.js';
import type { CommitPoint, PositionStore, RestoredPoint } from '../../commit/types.js';
import type { LaneInit } from '../../commit/types.js';
import type { LaneHost } from '../types.js';
import { tpKey, type Held, type TopicPartition } from './assignment.js';

/** What was read for the partitions of one join, by tpKey. */
export interface RestoreState {
  readonly committed: ReadonlyMap<string, { readonly offset: number; readonly meta: RestoredPoint | null }>;
  readonly ends: ReadonlyMap<string, { readonly low: number; readonly high: number }>;
  readonly stored: ReadonlyMap<string, CommitPoint>;
}

export interface RestorePlan {
  readonly init: LaneInit;
  /** Where consumption of this assignment starts (null: unknown, the topic's ends were not read). */
  readonly start: number | null;
  /** High watermark read with the offsets. */
  readonly hw: number | null;
  /** Where the first fetch must be moved to (the sink's position differs from the group's commit). */
  readonly seekTo: number | null;
  readonly from: 'sink' | 'commit' | 'nothing';
}

export interface RestoreOptions {
  /** Null when the session is gone already: nothing can be read, the partitions start from nothing. */
  readonly admin: Pick<Admin, 'fetchOffsets' | 'fetchTopicOffsets'> | null;
  readonly groupId: string;
  /** KAFKA_FROM: where a partition without a commit starts. */
  readonly from: 'earliest' | 'latest';
  readonly positions?: PositionStore;
  readonly logger: Logger;
  /** Raised when the session ends: retrying stops. */
  readonly signal?: Signal;
  /** Attempts to read (default 5), the first included; back-off doubles from `baseDelayMs` (default 200). */
  readonly attempts?: number;
  readonly baseDelayMs?: number;
}

const EMPTY: RestoreState = { committed: new Map(), ends: new Map(), stored: new Map() };

/** Reads commits, topic ends and the sink's positions, retrying; after the last failure, nothing. */
export async function readRestoreState(tps: readonly TopicPartition[], o: RestoreOptions): Promise<RestoreState> {
  const topics = [...new Set(tps.map((t) => t.topic))];
  const admin = o.admin;
  if (topics.length === 0 || admin === null) return EMPTY;
  try {
    return await retry(() => readOnce(admin, tps, topics, o), {
      attempts: o.attempts ?? 5,
      baseDelayMs: o.baseDelayMs ?? 200,
      maxDelayMs: 5000,
      ...(o.signal === undefined ? {} : { signal: o.signal }),
      onRetry: (err, attempt) => o.logger.warn({ err, attempt }, 'kafka: reading committed offsets failed; retrying'),
    });
  } catch (err) {
    o.logger.error({ err, partitions: tps.map(tpKey) }, 'kafka: reading committed offsets failed; the partitions start without their commit');
    return EMPTY;
  }
}

async function readOnce(admin: Pick<Admin, 'fetchOffsets' | 'fetchTopicOffsets'>, tps: readonly TopicPartition[], topics: readonly string[], o: RestoreOptions): Promise<RestoreState> {
  const committed = new Map<string, { offset: number; meta: RestoredPoint | null }>();
  const ends = new Map<string, { low: number; high: number }>();
  const stored = new Map<string, CommitPoint>();
  for (const t of await admin.fetchOffsets({ groupId: o.groupId, topics: [...topics] })) {
    for (const p of t.partitions) committed.set(tpKey({ topic: t.topic, partition: p.partition }), { offset: Number(p.offset), meta: parseCommitMeta(p.metadata) });
  }
  for (const topic of topics) {
    for (const e of await admin.fetchTopicOffsets(topic)) ends.set(tpKey({ topic, partition: e.partition }), { low: Number(e.low), high: Number(e.high) });
    if (o.positions?.readPositions !== undefined) {
      const parts = tps.filter((t) => t.topic === topic).map((t) => t.partition);
      for (const [partition, pos] of await o.positions.readPositions(topic, parts)) stored.set(tpKey({ topic, partition }), pos);
    }
  }
  return { committed, ends, stored };
}

export function planRestore(tp: TopicPartition, s: RestoreState, from: 'earliest' | 'latest'): RestorePlan {
  const k = tpKey(tp);
  const c = s.committed.get(k);
  const e = s.ends.get(k);
  const hw = e?.high ?? null;
  const pos = s.stored.get(k);
  if (pos !== undefined) {
    // The sink's position was written with its rows: it, not the group's commit, is the truth.
    const seekTo = c === undefined || c.offset !== pos.position ? pos.position : null;
    const init = { identity: tp, watermarkMs: pos.watermarkMs, appliedEnd: pos.appliedEnd };
    return { init: pos.keptFromMs === undefined ? init : { ...init, keptFromMs: pos.keptFromMs }, start: pos.position, hw, seekTo, from: 'sink' };
  }
  const meta = c?.meta ?? null;
  // kafkajs reports "no commit" as offset -1.
  const start = c !== undefined && c.offset >= 0 ? c.offset : e === undefined ? null : from === 'earliest' ? e.low : e.high;
  return { init: { identity: tp, ...meta }, start, hw, seekTo: null, from: meta === null ? 'nothing' : 'commit' };
}

/**
 * Restores the partitions of one join: opens each still-held partition's lane at its plan's point
 * and hands the plan to `onPlan` (lag bookkeeping). Partitions replaced meanwhile are left alone.
 */
export async function restore(
  held: readonly Held[],
  o: RestoreOptions & {
    readonly lanes: Pick<LaneHost, 'open'>;
    readonly isCurrent: (h: Held) => boolean;
    readonly onPlan: (h: Held, plan: RestorePlan) => void;
  },
): Promise<void> {
  const state = await readRestoreState(held.map((h) => h.tp), o);
  for (const h of held) {
    if (!o.isCurrent(h)) continue;
    const plan = planRestore(h.tp, state, o.from);
    o.lanes.open(h.id, plan.init);
    h.seekTo = plan.seekTo;
    h.restoredAt = { init: plan.init, start: plan.start };
    o.onPlan(h, plan);
    if (plan.from === 'sink') {
      o.logger.info({ partition: tpKey(h.tp), offset: plan.start, watermark: new Date(plan.init.watermarkMs!).toISOString() }, 'kafka: resuming from the position stored in the sink');
    } else if (plan.from === 'commit') {
      o.logger.info({ partition: tpKey(h.tp), offset: plan.start, watermark: new Date(plan.init.watermarkMs!).toISOString(), appliedEnd: plan.init.appliedEnd }, 'kafka: resuming from commit');
    }
  }
}
