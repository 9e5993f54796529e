// The commit protocol's types: what a partition's safe point is, and what restores one. Sources,
// sinks and the engine all depend on this file, never on each other.

/** A partition's safe point, recorded after each applied batch once its closed windows reached the sink. */
export interface CommitPoint {
  /** Oldest position still feeding an open window: committing it replays only those windows' input. */
  readonly position: number;
  /** Watermark (ms) up to which windows were emitted. */
  readonly watermarkMs: number;
  /** Position after the last applied batch: positions below it were processed. */
  readonly appliedEnd: number;
}

/** What restores a partition on (re)join: from the committed metadata, or from a sink's stored positions. */
export interface PartitionInit {
  /** Watermark (ms) restored from the last commit: windows it closed were emitted already. */
  readonly watermarkMs?: number;
  /** Records before this position were processed and their windows emitted: replays are skipped. */
  readonly replayBefore?: number;
}
