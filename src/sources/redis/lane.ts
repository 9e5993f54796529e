// What the Redis source's parts share: the source's options, and a lane's state, which the read loop,
// the group's recreation and the source's timers all change.
import type { Logger } from 'pino';
import type { LaneInit } from '../../commit/types.js';
import type { Metrics } from '../../metrics/index.js';
import type { LaneHost } from '../types.js';
import type { RedisConfig } from './config.js';
import type { SourceDeadLetter } from './dead-letters.js';
import type { LaneConn } from './lane-conn.js';
import type { LanePositions } from './position.js';
import type { LaneKey, PositionStore } from './positions.js';

export interface RedisSourceOptions {
  readonly redis: RedisConfig;
  /** Runs the lanes: the engine. */
  readonly lanes: LaneHost;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly deadLetter: SourceDeadLetter;
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  readonly maxMessageBytes: number;
  readonly commitIntervalMs: number;
  readonly idleFlushMs: number;
  readonly lagIntervalMs: number;
  /** A sink that stores positions with its rows (PostgreSQL): lanes resume from it. */
  readonly positions?: PositionStore;
}

/** One lane as the source reads it: a stream read for one consumer; `id` is its number at the lane host. */
export interface StreamLane extends LaneKey {
  readonly id: number;
  /** Own lanes read new entries after their PEL; taken-over lanes end once their PEL is acknowledged. */
  readonly own: boolean;
  cursor: string;
  /** Id of the last entry received: after a failed read, the PEL is read again from here. */
  lastId: string;
  /** The restored point's position: entries below it are in the sink already. */
  readonly restoredPosition: number;
  /** The restored point's applied end: entries below it were processed (and dead-lettered, if so) by an earlier run. */
  readonly restoredAppliedEnd: number;
  /** What the lane host opened the lane with: a lane rebuilt before its first commit point opens with it again. */
  readonly init: LaneInit;
  caughtUp: boolean;
  loop: Promise<void>;
  /** Entry ids -> positions: natural, or shifted by the lane's stored segments. */
  positions: LanePositions;
  /** The lane's read connection (its state says whether Redis is reachable). */
  conn: LaneConn | null;
  /** Why the lane cannot read now (its group or stream is gone), null while it reads. */
  stalled: string | null;
  /**
   * After the group was recreated: entries up to this id were handed on before, and are delivered
   * again only to be pending (acknowledged by the commit that passes them), not processed twice.
   */
  replayUpTo: string | null;
}
