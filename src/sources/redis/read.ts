// One lane's read loop: XREADGROUP replies read into shared memory (wire.ts), their entries placed
// (position.ts) and split into batches (entries.ts) for the lane host, at the pace the pool takes them
// and, once the lane has caught up, at its producers' (lanes/pace.ts). Failed reads are retried; a
// group or stream gone is recreated (group.ts). The loop ends when the source stops or stops serving
// the lane, or, for a taken-over lane, when its pending entries are read.
import { backoffMs, sleep, type Signal } from '../../async/index.js';
import { StreamstatsError } from '../../errors.js';
import { LanePace } from '../lanes/pace.js';
import { BufferRecycler } from '../recycle.js';
import { ackIds } from './acks.js';
import type { RedisConn } from './client.js';
import { missingFieldLetters } from './dead-letters.js';
import { splitEntries, type Missing } from './entries.js';
import { recreateGroup } from './group.js';
import type { RedisSourceOptions, StreamLane } from './lane.js';
import type { LaneConn } from './lane-conn.js';
import { compareIds, type PositionChanges } from './position.js';
import { writeSegments } from './positions.js';
import { XReadReader } from './wire.js';

/**
 * Read buffers kept free for reuse per lane: the batches of a lane in flight are bounded by the pool's
 * queue, so a few cover a steady stream, and a stream of many lanes keeps few idle buffers (a read
 * may hold up to REDIS_READ_MAX_BYTES).
 */
const REDIS_RECYCLED_BUFFERS = 4;

/** Retries of a lane's reads and segment writes: capped, jittered, exponential (the Kafka supervisor's shape). */
const RETRY_BACKOFF = { baseDelayMs: 200, maxDelayMs: 5000 } as const;

export interface LaneReadContext extends Pick<RedisSourceOptions, 'redis' | 'lanes' | 'metrics' | 'logger' | 'deadLetter' | 'batchSize' | 'batchMaxBytes' | 'maxMessageBytes'> {
  /** The source as dead letters name it. */
  readonly describe: string;
  readonly stop: Signal;
  /** The source's control connection: acknowledgements, segments, the group's recreation. */
  readonly ctl: RedisConn;
  /** The source still serves the lane under its number (it was not closed, nor rebuilt as another). */
  readonly serves: (lane: StreamLane) => boolean;
}

/** Reads while the lane host takes batches: submit() waits for pool capacity, so a full pool stops reading. */
export async function readLane(lane: StreamLane, conn: LaneConn, c: LaneReadContext): Promise<void> {
  const { redis, lanes, metrics } = c;
  // The reads' buffers become their batches and come back when the engine is done with them: a few
  // per lane go round (batches in flight are bounded), so the reader writes into pages already touched.
  const recycler = new BufferRecycler(REDIS_RECYCLED_BUFFERS);
  const reader = new XReadReader({ field: Buffer.from(redis.field), maxValueBytes: c.maxMessageBytes + 1, limitBytes: redis.readMaxBytes, allocate: recycler.allocate }, Math.min(redis.readCount, 4096));
  // COUNT of the next read: one entry first, then as many as REDIS_READ_MAX_BYTES holds of the
  // largest entry the last read saw (what the bound keeps is decided in the reader; this keeps the
  // entries it has to leave pending, delivered and read again, few).
  let count = 1;
  let attempt = 0;
  const pace = new LanePace(lanes, lane.id);
  while (!c.stop.raised && c.serves(lane)) {
    const pel = lane.cursor !== '>';
    const paced = pace.wait();
    if (paced !== null) await paced;
    try {
      let asked = count;
      await readGroup(c, conn, lane, reader, asked, lane.cursor);
      // Nothing new: wait for the next entry (one entry, bounded by itself).
      if (reader.count === 0 && !pel) {
        asked = 1;
        await readGroup(c, conn, lane, reader, 1, '>', redis.blockMs);
      }
      // A read of one entry is completed by a read sized by it, as one read (the script that bounded
      // reads in Redis did the same in its steps): a lane that opens, is rebuilt or restarts reads as
      // many entries at a time as a steady one, so its batches, and the merges of their partial
      // moments, fall where an undisturbed run's do.
      if (asked === 1 && reader.count === 1 && !reader.more && redis.readCount > 1 && reader.keptBytes < redis.readMaxBytes) {
        const rest = Math.max(1, Math.min(redis.readCount - 1, Math.floor((redis.readMaxBytes - reader.keptBytes) / Math.max(1, reader.largest))));
        await readGroup(c, conn, lane, reader, rest, pel ? reader.ids[0]! : '>', 0, true);
      }
      pace.read({ asked: count, got: reader.count, more: reader.more, behind: pel });
      // Entries delivered beyond the byte limit wait in our PEL: read them next, after the last one kept.
      if (reader.more && reader.count > 0) lane.cursor = reader.ids[reader.count - 1]!;
      if (reader.largest > 0) count = Math.max(1, Math.min(redis.readCount, Math.floor(redis.readMaxBytes / reader.largest)));
      attempt = 0;
      if (lane.stalled !== null) {
        c.logger.info({ stream: lane.stream, consumer: lane.consumer }, 'redis: lane reads again');
        lane.stalled = null;
      }
    } catch (err) {
      // Credentials refused: retrying cannot help.
      if (err instanceof StreamstatsError && !err.canRetry) throw err;
      attempt++;
      // A reply lost with the connection still delivered its entries to us (they are in our PEL, and
      // '>' never returns them again): read the PEL from the last entry we did receive first.
      if (lane.cursor === '>') lane.cursor = lane.lastId;
      if (String((err as Error).message).startsWith('NOGROUP')) {
        // The stream was deleted or the group destroyed: retrying the read cannot help; recreating the group can.
        lane.stalled = 'group';
        try {
          await recreateGroup(c.ctl, c, lane);
          continue;
        } catch (e) {
          c.logger.warn({ err: e, stream: lane.stream, attempt }, 'redis: recreating the consumer group failed; retrying');
        }
      } else {
        c.logger.warn({ err, stream: lane.stream, attempt }, 'redis: read failed; retrying');
      }
      await sleep(backoffMs(attempt, RETRY_BACKOFF), c.stop);
      continue;
    }
    const n = reader.count;
    if (pel) {
      if (n === 0) {
        // The PEL is read: own lanes go on with new entries; a taken-over lane has nothing more.
        if (!lane.own) {
          lane.caughtUp = true;
          return;
        }
        lane.cursor = '>';
        continue;
      }
      lane.cursor = reader.ids[n - 1]!;
    }
    lane.caughtUp = n === 0;
    if (n === 0) continue;
    lane.lastId = reader.ids[n - 1]!;
    let from = 0;
    if (lane.replayUpTo !== null) {
      const upTo = lane.replayUpTo;
      while (from < n && compareIds(reader.ids[from]!, upTo) <= 0) from++;
      if (from < n) lane.replayUpTo = null;
      if (from === n) continue;
    }
    const positions = new Array<number>(n - from);
    for (let i = from; i < n; i++) positions[i - from] = lane.positions.assign(reader.ids[i]!, reader.idMs[i]!, reader.idSeq[i]!);
    const changes = lane.positions.takeChanges();
    // Segments are stored before their entries go on: a restart must place them where this run did.
    if (changes !== null && !(await storeSegments(c, lane, changes))) return;
    const split = splitEntries(reader, from, { laneId: lane.id, positions, batchSize: c.batchSize, batchMaxBytes: c.batchMaxBytes, maxMessageBytes: c.maxMessageBytes, skipBelow: lane.restoredPosition });
    metrics.fetchBatchMessages.observe(n - from);
    if (split.missing.length > 0) await deadLetterMissing(c, lane, split.missing);
    // Early, for a short PEL; if it fails (Redis away) the next commit acknowledges them anyway.
    if (split.done.length > 0) await ackIds(c.ctl, redis.groupId, lane, split.done).catch((err: unknown) => c.logger.warn({ err }, 'redis: acknowledgement failed; the next commit retries'));
    // The batches are views of the read's buffer: the reader gets a fresh one for its next reply.
    if (split.batches.length > 0) reader.take();
    for (const b of recycler.trackShared(split.batches, pace.applied)) await lanes.submit(b);
  }
}

/**
 * XREADGROUP of the lane into `reader` (onto its last reply: append), waiting up to blockMs for
 * new entries when above 0; an error reply (NOGROUP ...) throws with Redis's text.
 */
async function readGroup(c: LaneReadContext, conn: LaneConn, lane: StreamLane, reader: XReadReader, count: number, cursor: string, blockMs = 0, append = false): Promise<void> {
  const block = blockMs > 0 ? ['BLOCK', String(blockMs)] : [];
  await conn.request(['XREADGROUP', 'GROUP', c.redis.groupId, lane.consumer, 'COUNT', String(count), ...block, 'STREAMS', lane.stream, cursor], reader, blockMs, append);
  if (reader.error !== null) throw new Error(reader.error);
}

/** Retried until stored (false: stopping first; the entries are read again by the next run, as new). */
async function storeSegments(c: LaneReadContext, lane: StreamLane, changes: PositionChanges): Promise<boolean> {
  for (let attempt = 1; !c.stop.raised; attempt++) {
    try {
      await writeSegments(c.ctl, c.redis.groupId, lane, changes);
      return true;
    } catch (err) {
      c.logger.warn({ err, stream: lane.stream, attempt }, 'redis: storing position segments failed; retrying');
      await sleep(backoffMs(attempt, RETRY_BACKOFF), c.stop);
    }
  }
  return false;
}

async function deadLetterMissing(c: LaneReadContext, lane: StreamLane, missing: readonly Missing[]): Promise<void> {
  const { redis, metrics } = c;
  const entries = missingFieldLetters(missing, { ...lane, field: redis.field, source: c.describe });
  if (entries.length > 0) {
    await c.deadLetter.write(entries);
    metrics.records.inc({ result: 'missing_field' }, entries.length);
  }
  // A dead-lettered entry is done: acknowledged at once (XACK is per entry, not a cumulative offset);
  // if that fails, the next commit acknowledges it with the rest below its point.
  await ackIds(c.ctl, redis.groupId, lane, missing.map((m) => m.id)).catch((err: unknown) => c.logger.warn({ err }, 'redis: acknowledgement failed; the next commit retries'));
}
