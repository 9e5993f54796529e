// The commit protocol's contracts. One concept, one name: a lane's COMMIT POINT (what may be committed
// for it now). The engine records it, commits name only it (a Kafka offset with the point as metadata,
// or a sink's transaction that writes rows and point together), and a restart restores a lane from
// the last one stored. Sources, sinks and the engine depend on this file, never on each other.
//
// A lane is one ordered input: a Kafka partition, a Redis stream. A position is a number that grows
// along the lane (a Kafka offset; a source whose native positions are not numbers maps them to
// numbers that keep their order, and back).

/** A lane's commit point, taken after an applied batch once the windows it closed were handed to the sink. */
export interface CommitPoint {
  /** Oldest position still feeding an open window: resuming here replays only those windows' input. */
  readonly position: number;
  /** Watermark (ms) up to which windows were emitted. */
  readonly watermarkMs: number;
  /** Position after the last applied batch: input below it was processed (a replay of it is skipped). */
  readonly appliedEnd: number;
  /**
   * LATE_RECORDS=amend: every closed window starting from here (ms) is kept for amendment, and
   * `position` is at or before its first record, so a restart rebuilds those windows whole from the
   * replay (and no window before it). Absent otherwise, and in points stored before amendment.
   */
  readonly keptFromMs?: number;
}

/** What a restore needs besides the position to resume from (a Kafka commit carries it as metadata). */
export type RestoredPoint = Omit<CommitPoint, 'position'>;

/**
 * Names a lane in what the sink writes (rows, dead letters, stored points): the input and the lane's
 * number within it. The fields keep the names the outputs have always had (the rows' `topic` and
 * `partition`, the PostgreSQL columns, the dead letters' `kafka_partition`, the metrics' labels).
 */
export interface LaneIdentity {
  /** The input: a Kafka topic, a Redis stream key. */
  readonly topic: string;
  /** The lane within it: a Kafka partition; for a Redis stream, the number its source gives the consumer's lane. */
  readonly partition: number;
}

/** A commit point with the lane it belongs to: handed to the sink with the rows it follows. */
export interface SinkCommit extends LaneIdentity {
  readonly point: CommitPoint;
}

/**
 * A store that keeps commit points with the rows (in the same transaction), so the rows and the point
 * can never disagree: the PostgreSQL sink (a table), the exactly-once Kafka sink (the group's offsets,
 * sent in its transactions). A source given one resumes each lane from it instead of from its own
 * commits. Its own commits then only trail the store, for lag tools (the Kafka source's
 * commitStoredPositions, on for PostgreSQL), and never where the store is the group's offsets
 * itself (two writers of one point would race).
 */
export interface PositionStore {
  /** The stored points of these lanes of `topic`; lanes without one are absent from the map. */
  readPositions(topic: string, lanes: readonly number[]): Promise<Map<number, CommitPoint>>;
}

/**
 * What a lane opens at (its restored point): where its rows say they come from, and what the last
 * commit restored. `position`, where the lane's input resumes, is the source's to seek to (Kafka
 * resumes there itself); the lane keeps it only to say where a rebuild replays from.
 */
export interface LaneInit extends Partial<CommitPoint> {
  /** Stamped on the lane's rows and dead letters; absent for an unnumbered input (file, generator). */
  readonly identity?: LaneIdentity;
}
