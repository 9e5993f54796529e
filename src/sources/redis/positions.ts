// Where a lane resumes: the one place that reads and writes stored positions. With a sink that owns
// positions (PostgreSQL: written in the rows' transaction, keyed (topic = stream key, partition =
// the consumer's lane number)) the sink is the truth; otherwise a hash in Redis holds each lane's last
// commit point, written before the entries below it are acknowledged.
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import { num, text, type RedisConn } from './client.js';
import { natural, type Mark, type PositionChanges, type Segment } from './position.js';

export type { PositionStore } from '../../commit/types.js';

export interface LaneKey {
  readonly stream: string;
  readonly consumer: string;
  /**
   * The consumer's number: its lanes' LaneIdentity.partition, the rows' `partition` and the sink's
   * position key (kept in the group's `slots` hash: the Redis key keeps its name).
   */
  readonly partition: number;
}

/** Redis keys of the group's own bookkeeping (hash tag keeps them in one cluster slot). */
export function keys(groupId: string) {
  const base = `streamstats:{${groupId}}`;
  return {
    commits: `${base}:commits`,
    slots: `${base}:slots`,
    slotSeq: `${base}:slot-seq`,
    lease: (consumer: string) => `${base}:lease:${consumer}`,
    /** Per lane: a sorted set of its position segments (member the first id, score its position). */
    segments: (lane: LaneKey) => `${base}:segments:${field(lane)}`,
    /** Per lane (field): the mark, `id position`, while the last entry read had seq >= 4096. */
    marks: `${base}:marks`,
  };
}

const field = (l: LaneKey) => `${l.stream}\n${l.consumer}`;

export async function readPosition(redis: RedisConn, groupId: string, lane: LaneKey, sink: PositionStore | undefined): Promise<CommitPoint | null> {
  if (sink !== undefined) {
    const stored = await sink.readPositions(lane.stream, [lane.partition]);
    return stored.get(lane.partition) ?? null;
  }
  const raw = text(await redis.send(['HGET', keys(groupId).commits, field(lane)]));
  if (raw === '') return null;
  try {
    const m = JSON.parse(raw) as Partial<{ v: number; position: number; wm: number; hi: number; kf: number }>;
    if (m.v === 1 && typeof m.position === 'number' && typeof m.wm === 'number' && typeof m.hi === 'number') {
      const point = { position: m.position, watermarkMs: m.wm, appliedEnd: m.hi };
      return typeof m.kf === 'number' ? { ...point, keptFromMs: m.kf } : point;
    }
  } catch {
    // Not ours: the lane starts without a boundary.
  }
  return null;
}

/** Stores a lane's point unless the sink already did (in its own transaction). */
export async function writePosition(redis: RedisConn, groupId: string, lane: LaneKey, sink: PositionStore | undefined, p: CommitPoint): Promise<void> {
  if (sink !== undefined) return;
  const meta = { v: 1, position: p.position, wm: Number.isFinite(p.watermarkMs) ? p.watermarkMs : 0, hi: p.appliedEnd, ...(p.keptFromMs === undefined ? {} : { kf: p.keptFromMs }) };
  await redis.send(['HSET', keys(groupId).commits, field(lane), JSON.stringify(meta)]);
}

/** A lane's stored segments and mark (none for a lane whose ids all had natural positions). */
export async function readSegments(redis: RedisConn, groupId: string, lane: LaneKey): Promise<{ segments: Segment[]; mark: Mark | null }> {
  const k = keys(groupId);
  const flat = await redis.send(['ZRANGE', k.segments(lane), '0', '-1', 'WITHSCORES']);
  const segments: Segment[] = [];
  if (Array.isArray(flat)) {
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = text(flat[i]);
      const position = num(flat[i + 1]);
      if (position !== null && Number.isSafeInteger(position)) segments.push({ id, natural: natural(id), position });
    }
  }
  const raw = text(await redis.send(['HGET', k.marks, field(lane)]));
  const [id, p] = raw.split(' ');
  const position = Number(p);
  return { segments, mark: id !== undefined && id !== '' && Number.isSafeInteger(position) ? { id, position } : null };
}

/** Stores what a read changed in a lane's segments and mark; before its entries go to the engine. */
export async function writeSegments(redis: RedisConn, groupId: string, lane: LaneKey, c: PositionChanges): Promise<void> {
  const k = keys(groupId);
  if (c.segments.length > 0) await redis.send(['ZADD', k.segments(lane), ...c.segments.flatMap((s) => [String(s.position), s.id])]);
  if (c.mark === null) await redis.send(['HDEL', k.marks, field(lane)]);
  else if (c.mark !== undefined) await redis.send(['HSET', k.marks, field(lane), `${c.mark.id} ${c.mark.position}`]);
}

/** Forgets a lane's segments and mark (its stream was deleted: the ids they place are gone). */
export async function clearSegments(redis: RedisConn, groupId: string, lane: LaneKey): Promise<void> {
  const k = keys(groupId);
  await redis.send(['DEL', k.segments(lane)]);
  await redis.send(['HDEL', k.marks, field(lane)]);
}

/** Deletes a lane's segments that start below `position` (their entries are acknowledged). */
export async function dropSegments(redis: RedisConn, groupId: string, lane: LaneKey, position: number): Promise<void> {
  await redis.send(['ZREMRANGEBYSCORE', keys(groupId).segments(lane), '-inf', `(${position}`]);
}

/**
 * A consumer's number: the partition its lanes carry in row identities and in the sink's
 * positions. Allocated once per consumer name, so a restarted consumer keeps its number.
 */
export async function partitionOf(redis: RedisConn, groupId: string, consumer: string): Promise<number> {
  const k = keys(groupId);
  const existing = num(await redis.send(['HGET', k.slots, consumer]));
  if (existing !== null) return existing;
  const next = num(await redis.send(['INCR', k.slotSeq]));
  await redis.send(['HSETNX', k.slots, consumer, String(next)]);
  const partition = num(await redis.send(['HGET', k.slots, consumer]));
  if (partition === null) throw new Error(`redis: no number for consumer ${consumer} in ${k.slots}`);
  return partition;
}
