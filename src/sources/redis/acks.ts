// Acknowledgement of a lane's entries: XACK is per entry, not a cumulative offset, so a commit acks
// every entry of the lane below its point, and entries done early (dead-lettered, deleted, already in
// the sink) are acked by id at once.
import type { CommitPoint } from '../../commit/types.js';
import { text, ACK_RANGE, type RedisConn } from './client.js';
import { compareIds, type LanePositions } from './position.js';
import { dropSegments, writePosition, type LaneKey, type PositionStore } from './positions.js';

/** XPENDING pages when acknowledging; one XACK per page. */
const ACK_PAGE = 1000;
/** Pages one ACK_RANGE call acknowledges (10,000 entries: a few ms of Redis's time). */
const ACK_PAGES_PER_CALL = 10;

export async function ackIds(ctl: RedisConn, groupId: string, lane: LaneKey, ids: readonly string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += ACK_PAGE) {
    await ctl.send(['XACK', lane.stream, groupId, ...ids.slice(i, i + ACK_PAGE)]);
  }
}

/** Stores the lane's commit point (unless the sink did), then acknowledges its entries below it. */
export async function commitLane(ctl: RedisConn, groupId: string, store: PositionStore | undefined, lane: LaneKey & { readonly positions: LanePositions }, cp: CommitPoint): Promise<void> {
  await writePosition(ctl, groupId, lane, store, cp);
  // The range holds every entry below the point, and, after a millisecond of more than 4096
  // entries, some at or above it: each is acknowledged only if read in this run and below the point.
  const belowId = lane.positions.idBelow(cp.position);
  const below = `(${belowId}`;
  const lastRead = lane.positions.lastId;
  // Only entries read in this run are acknowledged: with none read (lastRead ''), nothing.
  if (lastRead !== '' && lane.positions.natural) {
    // Natural positions: the range alone says which entries are below the point, and Redis
    // acknowledges them itself; the ids are looked at here only where segments shift positions.
    const end = compareIds(lastRead, belowId) < 0 ? lastRead : below;
    for (let start = '-'; start !== '';) {
      const r = await ctl.send(['EVAL', ACK_RANGE, '1', lane.stream, groupId, lane.consumer, start, end, String(ACK_PAGE), String(ACK_PAGES_PER_CALL)]);
      start = Array.isArray(r) ? text(r[1]) : '';
    }
  } else if (lastRead !== '') {
    for (let start = '-'; ;) {
      const page = await ctl.send(['XPENDING', lane.stream, groupId, start, below, String(ACK_PAGE), lane.consumer]);
      const ids = Array.isArray(page) ? page.map((p) => text(Array.isArray(p) ? p[0] : null)) : [];
      const done = ids.filter((id) => compareIds(id, lastRead) <= 0 && lane.positions.positionOf(id) < cp.position);
      if (done.length > 0) await ackIds(ctl, groupId, lane, done);
      if (ids.length < ACK_PAGE) break;
      start = `(${ids[ids.length - 1]!}`;
    }
  }
  const drop = lane.positions.dropBelow(cp.position);
  if (drop !== null) await dropSegments(ctl, groupId, lane, drop);
}
