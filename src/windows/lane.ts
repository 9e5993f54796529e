// A lane: one ordered input (a Kafka partition, a Redis stream consumer, a file or generator) and
// everything its statistics depend on: its window store, watermark, the point it was restored from
// and its commit point. A small state machine, after Kafka Streams' StreamTask, with verbs named for
// the commit protocol:
//
//   Lane.open(init) ──► running ──closeClean()──► closed-clean   (end of a finite input: every window emitted)
//                          │
//                          └─────closeDirty()──► closed-dirty ──rebuild()──► a new running lane at its commit point
//
// running:   apply, advanceIdle, takeClosed, prepareCommit, postCommit.
// prepareCommit() is the point the lane reaches once the rows of what it applied are written; the
// engine hands it to the sink with those rows, and postCommit(point) makes it the lane's commit point
// once that write (and every earlier one) settled. A lane closed dirty (revoked, or its worker died)
// is rebuilt from its commit point by replay: rebuild() is a fresh open at that point.
//
// The lane does no I/O and holds no promise: what orders its batches and writes is its host's (the
// engine), so the lane's state can move to the worker that owns it (LANE_STATE=worker: ./owner.ts)
// without changing what it does. Pure, like the rest of src/windows, so a worker may import it.
import { messageCount, messageRange, type Batch } from '../core/batch.js';
import type { DecodeResult } from '../core/messages.js';
import type { CommitPoint, LaneIdentity, LaneInit } from '../commit/types.js';
import { WindowStore, type ApplyOutcome, type ClosedBy, type ClosedCells } from './store.js';

export type LaneState = 'running' | 'closed-clean' | 'closed-dirty';

export type StoreSettings = ConstructorParameters<typeof WindowStore>[0];

/** A verb called in a state that does not allow it: a bug of the lane's host, never of the input. */
export class LaneStateError extends Error {
  readonly code = 'STREAMSTATS_LANE_STATE';

  constructor(lane: number, verb: string, state: LaneState, allowed: readonly LaneState[]) {
    super(`lane ${lane}: ${verb}() is not allowed when the lane is ${state} (only when ${allowed.join(' or ')})`);
    this.name = 'LaneStateError';
  }
}

const RUNNING: readonly LaneState[] = ['running'];

export class Lane {
  /** The host's number for the lane (an engine lane id: never reused within a process). */
  readonly id: number;
  /** Stamped on rows and dead letters; undefined for an unnumbered input (file, generator). */
  readonly identity: LaneIdentity | undefined;
  /** What the lane was opened at: its restored point (all of it absent for a lane started from nothing). */
  readonly restored: LaneInit;
  readonly #settings: StoreSettings;
  readonly #store: WindowStore;
  /**
   * The restored point's applied end (-Infinity when none): input below it was processed by an
   * earlier run, so a replay of it is skipped and its rejects are not dead-lettered again.
   */
  readonly #restoredAppliedEnd: number;
  #state: LaneState = 'running';
  #commitPoint: CommitPoint | null = null;
  #lastAppliedTimestampMs: number | null = null;

  private constructor(id: number, init: LaneInit, settings: StoreSettings) {
    this.id = id;
    this.identity = init.identity;
    this.restored = init;
    this.#settings = settings;
    this.#store = new WindowStore(settings);
    if (init.watermarkMs !== undefined) this.#store.advanceWatermark(init.watermarkMs);
    this.#store.restoreKeptFrom(init.keptFromMs);
    this.#restoredAppliedEnd = init.appliedEnd ?? -Infinity;
  }

  /** A running lane at its restored point: the watermark keeps what was emitted closed, the applied end marks replays. */
  static open(id: number, init: LaneInit, settings: StoreSettings): Lane {
    return new Lane(id, init, settings);
  }

  get state(): LaneState {
    return this.#state;
  }

  /** Closed dirty: whatever is still under way for it is dropped, not applied or written. */
  get dropped(): boolean {
    return this.#state === 'closed-dirty';
  }

  get watermarkMs(): number {
    return this.#store.watermark;
  }

  /** Position after the last applied batch (the lane's applied end); null before a positioned batch. */
  get appliedEnd(): number | null {
    return this.#store.appliedEnd;
  }

  /** Source timestamp of the last message applied. */
  get lastAppliedTimestampMs(): number | null {
    return this.#lastAppliedTimestampMs;
  }

  /** What a commit may name now: moved by postCommit only; null before the first. */
  get commitPoint(): CommitPoint | null {
    return this.#commitPoint;
  }

  get openSeries(): number {
    return this.#store.openSeries;
  }

  get openWindows(): number {
    return this.#store.openWindows;
  }

  /** Closed windows kept for amendment (LATE_RECORDS=amend), and their estimated bytes. */
  get keptWindows(): number {
    return this.#store.keptWindows;
  }

  get keptBytes(): number {
    return this.#store.keptBytes;
  }

  get evictedWindows(): number {
    return this.#store.evictedWindows;
  }

  get amending(): boolean {
    return this.#store.amending;
  }

  /**
   * With amendment, a batch whose messages are partly replays (below the restored applied end) and
   * partly new must be applied in two parts: a replay rebuilds kept windows silently, new records
   * amend them. The index of its first new message, or -1 when the batch is all one or the other.
   */
  replaySplit(batch: Pick<Batch, 'positions'>): number {
    return this.#store.amending ? replaySplitAt(batch.positions, this.#restoredAppliedEnd) : -1;
  }

  /** One batch's partials, in the lane's order; `lastTimestampMs`: the batch's last source timestamp. */
  apply(result: DecodeResult, positions: { start: number; end: number } | undefined, lastTimestampMs: number | undefined, replayed?: boolean): ApplyOutcome {
    this.#expect('apply', RUNNING);
    // All of it processed before the restart (replaySplit keeps batches from straddling the
    // boundary): the host says so from the messages' positions (offsets may have gaps), else the range.
    const replay = replayed ?? (positions !== undefined && positions.end <= this.#restoredAppliedEnd);
    const outcome = this.#store.apply(result, positions, replay);
    if (lastTimestampMs !== undefined) this.#lastAppliedTimestampMs = lastTimestampMs;
    return outcome;
  }

  /** An idle lane's watermark follows the wall clock, less the allowed lateness, so its windows still close. */
  advanceIdle(wallMs: number): void {
    this.#expect('advanceIdle', RUNNING);
    this.#store.advanceWatermark(wallMs - this.#settings.latenessMs);
  }

  /**
   * Removes and returns the windows the watermark has closed, oldest first (`closedBy`: how it got
   * there); with amendment, the rows amended since the last call come first.
   */
  takeClosed(closedBy: ClosedBy = 'watermark'): ClosedCells {
    this.#expect('takeClosed', RUNNING);
    return this.#store.takeClosed(closedBy);
  }

  /**
   * The commit point the lane reaches once what it applied so far is written; null before any
   * positioned batch. Handed to the sink with the rows of the windows taken before it.
   */
  prepareCommit(): CommitPoint | null {
    this.#expect('prepareCommit', RUNNING);
    const position = this.#store.commitPosition();
    const appliedEnd = this.#store.appliedEnd;
    if (position === null || appliedEnd === null) return null;
    // After a restart, input below the restored applied end was processed by an earlier run: the
    // point must not claim less, or the next restart would dead-letter its records again (as late).
    const point = { position, watermarkMs: this.#store.watermark, appliedEnd: Math.max(appliedEnd, this.#restoredAppliedEnd) };
    const keptFromMs = this.#store.keptFromMs;
    return keptFromMs === undefined ? point : { ...point, keptFromMs };
  }

  /**
   * The rows a prepared point follows were written: it becomes the commit point. Allowed when closed
   * too: a write handed to the sink before the close may settle after it, and its rows are out, so
   * its point is true (a rebuild starts from it).
   */
  postCommit(point: CommitPoint): void {
    this.#commitPoint = point;
  }

  /** Every message of the batch was processed before the restart (none is new). */
  allReplayed(batch: Batch): boolean {
    const n = batch.positions?.length ?? 0;
    return n > 0 && this.isReplay(batch, n - 1);
  }

  /** A message processed before the restart this lane was restored from (a replay: skipped). */
  isReplay(batch: Batch, msg: number): boolean {
    const pos = batch.positions?.[msg];
    return pos !== undefined && Number(pos) < this.#restoredAppliedEnd;
  }

  /** End of a finite input (or a shutdown that emits): every open window, to emit with no point after it; the lane is closed. */
  closeClean(closedBy: ClosedBy = 'end_of_input'): ClosedCells {
    this.#expect('closeClean', RUNNING);
    this.#state = 'closed-clean';
    const cells = this.#store.takeAll(closedBy);
    this.#store.dispose();
    return cells;
  }

  /**
   * Revoked, or its owner failed: the open windows are discarded (their series leave the shared
   * budget) and nothing more is applied; the next owner rebuilds them from the commit point.
   */
  closeDirty(): void {
    this.#expect('closeDirty', ['running', 'closed-clean']);
    this.#state = 'closed-dirty';
    this.#store.takeAll();
    this.#store.dispose();
  }

  /** Where a rebuild starts: the commit point if there is one, else the point the lane was opened at. */
  restartPoint(): LaneInit {
    const cp = this.#commitPoint;
    const base = this.identity === undefined ? {} : { identity: this.identity };
    if (cp === null) return this.restored;
    const point = { ...base, position: cp.position, watermarkMs: cp.watermarkMs, appliedEnd: cp.appliedEnd };
    return cp.keptFromMs === undefined ? point : { ...point, keptFromMs: cp.keptFromMs };
  }

  /** A lane closed dirty, opened again at its restart point: its input is replayed from the point's position. */
  rebuild(): Lane {
    this.#expect('rebuild', ['closed-dirty']);
    return Lane.open(this.id, this.restartPoint(), this.#settings);
  }

  #expect(verb: string, allowed: readonly LaneState[]): void {
    if (!allowed.includes(this.#state)) throw new LaneStateError(this.id, verb, this.#state, allowed);
  }
}

/**
 * Lane.replaySplit's rule on the messages' positions alone (the owner has them as numbers, the main
 * thread as strings): the index of the first at or past the restored applied end, or -1 when the
 * batch is all replays or all new.
 */
export function replaySplitAt(positions: ArrayLike<string | number> | undefined, restoredAppliedEnd: number): number {
  if (positions === undefined) return -1;
  const n = positions.length;
  if (n < 2 || Number(positions[0]) >= restoredAppliedEnd || Number(positions[n - 1]) < restoredAppliedEnd) return -1;
  for (let i = 1; i < n; i++) if (Number(positions[i]) >= restoredAppliedEnd) return i;
  return -1;
}

/** Messages lo..hi of a batch as a batch of their own (same lane and seq; positions follow). */
export function subBatch(b: Batch, lo: number, hi: number): Batch {
  const r = messageRange(b.offsets, b.ends, lo, hi);
  const part: Batch = {
    lane: b.lane,
    seq: b.seq,
    data: b.data.subarray(r.base, r.end),
    offsets: r.offsets,
    ...(r.ends === undefined ? {} : { ends: r.ends }),
    ...(b.positions === undefined ? {} : { positions: b.positions.slice(lo, hi) }),
    ...(b.keys === undefined ? {} : { keys: b.keys.slice(lo, hi) }),
    ...(b.startPosition === undefined || b.positions === undefined ? {} : { startPosition: Number(b.positions[lo]) }),
    ...(b.endPosition === undefined || b.positions === undefined ? {} : { endPosition: hi < messageCount(b) ? Number(b.positions[hi]) : b.endPosition }),
  };
  if (b.oversized !== undefined) {
    const o = new Map<number, { bytes: number; detail?: string }>();
    for (const [i, v] of b.oversized) if (i >= lo && i < hi) o.set(i - lo, v);
    if (o.size > 0) return { ...part, oversized: o };
  }
  return part;
}
