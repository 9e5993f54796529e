// The consumer group's life as the source sees it: created where missing at the start, read back,
// and created again where a lane needs it after its stream was deleted or the group destroyed.
import { compareIds, LanePositions } from './position.js';
import { pairs, text, type RedisConn, type Reply } from './client.js';
import { clearSegments } from './positions.js';
import type { RedisSourceOptions, StreamLane } from './lane.js';

type GroupOptions = Pick<RedisSourceOptions, 'redis' | 'logger'>;

/** Creates the group on the stream (and the stream) unless it exists. */
export async function createGroup(ctl: RedisConn, o: GroupOptions, stream: string): Promise<void> {
  const { redis } = o;
  try {
    await ctl.send(['XGROUP', 'CREATE', stream, redis.groupId, redis.from === 'earliest' ? '0' : '$', 'MKSTREAM']);
    o.logger.info({ stream, group: redis.groupId, from: redis.from }, 'redis: consumer group created');
  } catch (err) {
    if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
  }
}

/** The group's XINFO GROUPS fields on a stream (undefined: no such group). */
export async function groupInfo(ctl: RedisConn, groupId: string, stream: string): Promise<Map<string, Reply> | undefined> {
  const groups = await ctl.send(['XINFO', 'GROUPS', stream]);
  return (Array.isArray(groups) ? groups : []).map(pairs).find((m) => text(m.get('name')) === groupId);
}

/**
 * The lane's stream or group is gone (XGROUP DESTROY, DEL of the stream): the group is created
 * again where the lane needs it, at its commit point, so that the entries it has handed on and not
 * yet committed are pending again (delivered once more, not processed twice) and the rest follows.
 * A stream deleted with its entries starts the lane's ids afresh; its positions go on growing.
 */
export async function recreateGroup(ctl: RedisConn, o: GroupOptions & Pick<RedisSourceOptions, 'lanes'>, lane: StreamLane): Promise<void> {
  const { redis, lanes, logger } = o;
  const since = lane.positions.lastId;
  const point = lanes.status(lane.id)?.commitPoint?.position ?? lane.restoredPosition;
  let from: string;
  if (since === '') {
    from = point > 0 ? lane.positions.idBefore(point) : redis.from === 'earliest' ? '0-0' : '$';
  } else {
    const older = await ctl.send(['XREVRANGE', lane.stream, since, '-', 'COUNT', '1']);
    if (Array.isArray(older) && older.length > 0) {
      from = lane.positions.idBefore(point);
      lane.replayUpTo = since;
    } else {
      // None of the entries read is left: the stream was deleted (or trimmed empty). New ids may be
      // lower than the old ones; the lane places them above everything it handed on.
      from = '0-0';
      lane.replayUpTo = null;
      lane.positions = new LanePositions([], null, lane.positions.last + 1);
      await clearSegments(ctl, redis.groupId, lane);
    }
  }
  logger.error({ stream: lane.stream, group: redis.groupId, consumer: lane.consumer, from }, 'redis: the consumer group or the stream is gone (NOGROUP); recreating the group from the lane\'s commit point');
  try {
    await ctl.send(['XGROUP', 'CREATE', lane.stream, redis.groupId, from, 'MKSTREAM']);
  } catch (err) {
    if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
    // Another lane or instance recreated it first: moved back if this lane needs entries before its start.
    const at = text((await groupInfo(ctl, redis.groupId, lane.stream))?.get('last-delivered-id'));
    if (from !== '$' && at !== '' && compareIds(from, at) < 0) await ctl.send(['XGROUP', 'SETID', lane.stream, redis.groupId, from]);
  }
  lane.cursor = lane.own ? '>' : '0';
  lane.lastId = '0';
  logger.info({ stream: lane.stream, group: redis.groupId, from }, 'redis: consumer group recreated; the lane reads on');
}
