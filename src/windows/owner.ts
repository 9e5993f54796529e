// The worker side of LANE_STATE=worker: a worker that owns lanes for their whole life. Each owned
// lane's Lane (./lane.ts) lives here, so a batch is decoded, merged into its windows, closed and
// formatted as rows in one place, and what crosses back to the main thread is the rows' bytes, the
// lane's commit point and the few records it must dead-letter (as indexes: the main thread still
// holds the batch's bytes). The tasks and replies are the main <-> owner messages (the decode pool's
// are in ../core/messages.ts; these name the commit contracts, which src/core may not).
// Pure, like the rest of src/windows: the worker entry (workers/lanes.ts) only hands tasks to it.
import { BatchBuilder, messageRange } from '../core/batch.js';
import { Decoder } from '../core/decode.js';
import { LanePoints, type GeneratedLane } from '../core/generator.js';
import type { DecoderSettings, Reject, RowSettings, RowsWire } from '../core/messages.js';
import type { CommitPoint, LaneIdentity, LaneInit } from '../commit/types.js';
import { EMIT_CHUNK_DEFAULTS, splitCells, windowsEnded, type ChunkLimits } from './chunks.js';
import { amendedRows, type ClosedBy } from './cells.js';
import { Lane, replaySplitAt, type StoreSettings } from './lane.js';
import { RowFormatter } from './row.js';
import { recordsWire, rowsWire, type KeyScratch } from './row-task.js';
import { RowSlabs } from './row-slabs.js';
import { SharedSeriesBudget, type AmendSettings, type ApplyOutcome, type ClosedCells } from './store.js';
import { CopyTupleWriter } from '../sinks/postgres/tuples.js';
import { rowRecords, SharedRecordLayout, type RecordsScratch } from '../sinks/kafka/row-records.js';

/** Sent once to each owner (workerData). */
export interface OwnerSettings {
  readonly decoder: DecoderSettings;
  readonly windowMs: number;
  readonly latenessMs: number;
  readonly confirmRecords?: number;
  readonly maxSeries: number;
  readonly maxStateBytes: number;
  /** The SharedSeriesBudget's counters, shared by every owner and the main thread. */
  readonly budget: SharedArrayBuffer;
  /** This owner's index: its share of the budget is counted in that slot too (set per owner by LaneOwners). */
  readonly owner?: number;
  readonly rows: RowSettings;
  /** PERCENTILES (0..100) read from each row's sketch; the sketches' accuracy is the decoder's. */
  readonly percentiles?: readonly number[];
  /** LATE_RECORDS=amend: closed windows are kept in the owner, and late records amend them. */
  readonly amend?: AmendSettings;
  /** The sink keys its messages by row identity (Kafka): each row's identity key comes back too. */
  readonly identityKeys: boolean;
  /** The Kafka sink's output layout (SharedRecordLayout): rows come back as its records once the partitions are known. */
  readonly recordLayout?: SharedArrayBuffer;
  /** The sink stores rows by COPY (PostgreSQL): each chunk's rows come back as COPY tuples too. */
  readonly copyTuples?: boolean;
  readonly chunk?: ChunkLimits;
}

export type OwnerTask =
  /** `generate`: the owner generates the lane's input itself (SOURCE=generator), told how much by 'generate' tasks. */
  | { readonly kind: 'open'; readonly lane: number; readonly init: LaneInit; readonly generate?: GeneratedLane }
  | {
      readonly kind: 'apply';
      readonly lane: number;
      /** The batch's bytes from offset 0 (moved, or shared memory read in place) and its offsets. */
      readonly buffer: ArrayBuffer | SharedArrayBuffer;
      readonly offsets: Uint32Array;
      /** Each message's end where a separator follows it (Batch.ends). */
      readonly ends?: Uint32Array;
      readonly nowMs: number;
      /** Each message's position (a positioned source), for the parts of a bisected batch. */
      readonly positions?: Float64Array;
      readonly startPosition?: number;
      readonly endPosition?: number;
      readonly lastTimestampMs?: number;
    }
  /** Points from..from+count of a generated lane's share, applied as one batch. */
  | { readonly kind: 'generate'; readonly lane: number; readonly from: number; readonly count: number; readonly nowMs: number }
  | { readonly kind: 'idle'; readonly lane: number; readonly wallMs: number }
  | { readonly kind: 'close-clean'; readonly lane: number; readonly closedBy: ClosedBy }
  | { readonly kind: 'close-dirty'; readonly lane: number };

/**
 * What one part of a batch did: the whole batch, or with a batch whose decode threw, each piece of
 * its bisection in order. A part that threw on its own (one message) is `poisoned`.
 */
export interface PartOutcome {
  /** Messages lo..hi of the batch. */
  readonly lo: number;
  readonly hi: number;
  readonly poisoned?: string;
  readonly records: number;
  /** Message indexes are the part's own. */
  readonly rejects: Reject[];
  readonly decodeSeconds: number;
  readonly applied: ApplyOutcome | null;
  /** The watermark before the part was applied: late records are judged against it. */
  readonly watermarkBefore: number;
}

/** A chunk of closed rows as bytes, with the cells it holds and the windows it ends (as the engine counts them). */
export interface RowsChunk {
  readonly wire: RowsWire;
  readonly cells: number;
  readonly windows: number;
  /** Rows of a new revision among them (LATE_RECORDS=amend: streamstats_amendments_total). */
  readonly amended: number;
  /** The shared memory the wire's lines are in, to hand back (releaseSlab) once they are written; null: a buffer of their own. */
  readonly slab?: SharedArrayBuffer | null;
}

/** The lane's figures after a task: what LaneStatus and the gauges read on the main thread. */
export interface LaneFigures {
  readonly watermarkMs: number;
  readonly appliedEnd: number | null;
  readonly lastAppliedTimestampMs: number | null;
  readonly openSeries: number;
  readonly openWindows: number;
  /** LATE_RECORDS=amend: closed windows kept, their estimated bytes, and those evicted since the lane opened (0 otherwise). */
  readonly keptWindows: number;
  readonly keptBytes: number;
  readonly evictedWindows: number;
}

/**
 * The batch a 'generate' task made: its size, and its bytes only when the main thread needs them
 * (a part of it was rejected, poisoned, late or over a limit: dead letters carry the message).
 */
export interface GeneratedBatch {
  readonly offsets: Uint32Array;
  readonly bytes: number;
  /** The messages' bytes (offsets index them); null when no dead letter needs them. */
  readonly data: ArrayBuffer | null;
}

export type OwnerReply =
  /** The owner does not hold the lane: it is a replacement for a worker that died with the lane's state. */
  | { readonly kind: 'lost'; readonly lane: number }
  | {
      readonly kind: 'done';
      readonly lane: number;
      readonly parts: readonly PartOutcome[];
      readonly chunks: readonly RowsChunk[];
      /** The point the lane reaches once these rows are written (null: none yet, or a clean close). */
      readonly point: CommitPoint | null;
      readonly figures: LaneFigures | null;
      /** Worker time the task took. */
      readonly seconds: number;
      /** A 'generate' task's batch. */
      readonly generated?: GeneratedBatch;
    };

const EMPTY: readonly PartOutcome[] = [];

/** The lanes one worker owns, and what it needs to run them. */
export class LaneOwner {
  readonly #settings: OwnerSettings;
  readonly #decoder: Decoder;
  readonly #rows: RowFormatter;
  readonly #store: StoreSettings;
  readonly #lanes = new Map<number, Lane>();
  /** Generated lanes' shares of the workload. */
  readonly #generators = new Map<number, LanePoints>();
  /** The last generated batch's buffer, written over by the next (nothing keeps a batch's bytes once applied). */
  #scratch: Buffer = Buffer.alloc(0);
  readonly #slabs = new RowSlabs();
  /** Where a chunk's rows are written before they are placed in a slab (one chunk at a time). */
  readonly #scratchRows: KeyScratch = { buf: Buffer.allocUnsafeSlow(0) };
  readonly #scratchRecords: RecordsScratch = {};
  readonly #recordLayout: SharedRecordLayout | null;
  readonly #tuples: CopyTupleWriter | null;

  constructor(settings: OwnerSettings) {
    this.#settings = settings;
    this.#decoder = new Decoder(settings.decoder);
    this.#rows = new RowFormatter(settings.rows.windowMs, settings.rows.maxEntries, settings.percentiles ?? []);
    this.#tuples = settings.copyTuples === true ? new CopyTupleWriter(settings.rows.windowMs, settings.rows.maxEntries) : null;
    this.#recordLayout = settings.recordLayout === undefined ? null : new SharedRecordLayout(settings.recordLayout);
    this.#store = {
      windowMs: settings.windowMs,
      latenessMs: settings.latenessMs,
      budget: new SharedSeriesBudget(settings.maxSeries, settings.maxStateBytes, settings.budget, settings.owner === undefined ? {} : { owner: settings.owner }),
      sketchAccuracy: settings.decoder.sketchAccuracy,
      ...(settings.amend === undefined ? {} : { amend: settings.amend }),
      ...(settings.confirmRecords === undefined ? {} : { confirmRecords: settings.confirmRecords }),
    };
  }

  run(task: OwnerTask): OwnerReply {
    const t0 = performance.now();
    if (task.kind === 'open') {
      this.#lanes.get(task.lane)?.closeDirty();
      this.#lanes.set(task.lane, Lane.open(task.lane, task.init, this.#store));
      if (task.generate === undefined) this.#generators.delete(task.lane);
      else this.#generators.set(task.lane, new LanePoints(task.generate.shape, task.generate.share));
      return this.#done(task.lane, EMPTY, null, null, t0, undefined);
    }
    const lane = this.#lanes.get(task.lane);
    if (lane === undefined) return { kind: 'lost', lane: task.lane };
    switch (task.kind) {
      case 'close-dirty':
        lane.closeDirty();
        this.#lanes.delete(task.lane);
        this.#generators.delete(task.lane);
        return this.#done(task.lane, EMPTY, null, null, t0, undefined);
      case 'close-clean': {
        const cells = lane.closeClean(task.closedBy);
        this.#lanes.delete(task.lane);
        this.#generators.delete(task.lane);
        return this.#done(task.lane, EMPTY, cells, null, t0, lane.identity);
      }
      case 'idle':
        lane.advanceIdle(task.wallMs);
        return this.#done(task.lane, EMPTY, lane.takeClosed('idle'), lane, t0, lane.identity);
      case 'apply': {
        const parts = this.#apply(lane, Buffer.from(task.buffer), task);
        return this.#done(task.lane, parts, lane.takeClosed(), lane, t0, lane.identity);
      }
      case 'generate': {
        const points = this.#generators.get(task.lane);
        if (points === undefined) throw new Error(`lane ${task.lane} was not opened as a generated lane`);
        const { data, offsets } = this.#generate(points, task.from, task.count);
        const parts = this.#apply(lane, data, { offsets, nowMs: task.nowMs });
        const reply = this.#done(task.lane, parts, lane.takeClosed(), lane, t0, lane.identity);
        return { ...reply, generated: { offsets, bytes: data.length, data: parts.some(needsBytes) ? copyOut(data) : null } };
      }
    }
  }

  /** The points as one batch, in a buffer reused from task to task. */
  #generate(points: LanePoints, from: number, count: number): { data: Buffer; offsets: Uint32Array } {
    const builder = new BatchBuilder(this.#scratch.length, (bytes) => {
      if (this.#scratch.length < bytes) this.#scratch = Buffer.allocUnsafeSlow(bytes);
      return this.#scratch;
    });
    points.write(builder, from, count);
    return builder.take();
  }

  /** `lane`: the running lane whose figures and prepared point go back (null when it closed). */
  #done(id: number, parts: readonly PartOutcome[], cells: ClosedCells | null, lane: Lane | null, t0: number, where: LaneIdentity | undefined): Extract<OwnerReply, { kind: 'done' }> {
    const chunks = cells === null || cells.length === 0 ? [] : this.#format(cells, where);
    const figures = lane === null ? null : {
      watermarkMs: lane.watermarkMs,
      appliedEnd: lane.appliedEnd,
      lastAppliedTimestampMs: lane.lastAppliedTimestampMs,
      openSeries: lane.openSeries,
      openWindows: lane.openWindows,
      keptWindows: lane.keptWindows,
      keptBytes: lane.keptBytes,
      evictedWindows: lane.evictedWindows,
    };
    return { kind: 'done', lane: id, parts, chunks, point: lane === null ? null : lane.prepareCommit(), figures, seconds: (performance.now() - t0) / 1000 };
  }

  /**
   * Decodes and applies the batch; a decode that throws (a bug the input found: the decoder rejects
   * what it cannot read) is tried again in halves, and each half that throws again in halves, until
   * the message that throws stands alone: it is poisoned, every other record is applied in order. The
   * lane's state is untouched by a decode that threw, so it survives. With amendment, a batch that is
   * partly replay (below the restored applied end) is applied as two parts first, as Lane.replaySplit
   * says: the replay rebuilds kept windows silently, the new records amend them.
   */
  #apply(lane: Lane, data: Buffer, task: Pick<Extract<OwnerTask, { kind: 'apply' }>, 'offsets' | 'ends' | 'nowMs' | 'positions' | 'startPosition' | 'endPosition' | 'lastTimestampMs'>): PartOutcome[] {
    const n = task.offsets.length - 1;
    const out: PartOutcome[] = [];
    const restoredEnd = lane.restored.appliedEnd ?? -Infinity;
    const part = (lo: number, hi: number, prefix: string): void => {
      const r = messageRange(task.offsets, task.ends, lo, hi);
      const t = performance.now();
      let result;
      try {
        result = this.#decoder.decodeBytes(data.subarray(r.base, r.end), r.offsets, task.nowMs, r.ends);
      } catch (err) {
        if (hi - lo > 1) {
          const mid = lo + Math.floor((hi - lo) / 2);
          part(lo, mid, 'isolated by bisection; ');
          part(mid, hi, 'isolated by bisection; ');
          return;
        }
        const reason = `${prefix}decoding threw: ${err instanceof Error ? err.message : String(err)}`;
        out.push({ lo, hi, poisoned: reason, records: hi - lo, rejects: [], decodeSeconds: (performance.now() - t) / 1000, applied: null, watermarkBefore: lane.watermarkMs });
        return;
      }
      const p = task.positions;
      const positions = task.startPosition === undefined || task.endPosition === undefined
        ? undefined
        : p === undefined || (lo === 0 && hi === n)
          ? { start: task.startPosition, end: task.endPosition }
          : { start: p[lo]!, end: hi < n ? p[hi]! : task.endPosition };
      // Every message processed before the restart this lane was restored from: a replay.
      const replayed = p !== undefined && hi > lo && p[hi - 1]! < restoredEnd;
      const watermarkBefore = lane.watermarkMs;
      const applied = lane.apply(result, positions, task.lastTimestampMs, replayed);
      out.push({ lo, hi, records: result.records, rejects: result.rejects, decodeSeconds: result.decodeSeconds, applied, watermarkBefore });
    };
    const split = lane.amending ? replaySplitAt(task.positions, restoredEnd) : -1;
    if (split > 0) {
      part(0, split, '');
      part(split, n, '');
    } else part(0, n, '');
    return out;
  }

  #format(cells: ClosedCells, where: LaneIdentity | undefined): RowsChunk[] {
    const chunks = splitCells(cells, this.#settings.chunk ?? EMIT_CHUNK_DEFAULTS);
    const out: RowsChunk[] = [];
    for (let i = 0; i < chunks.length; i++) {
      const c = chunks[i]!;
      const t = performance.now();
      let rows = rowsWire(this.#rows.format(c, where), c.length, this.#settings.identityKeys, t, this.#scratchRows, true);
      // The Kafka sink's records, once it knows the output topic's partitions.
      const layout = this.#settings.identityKeys ? (this.#recordLayout?.read() ?? null) : null;
      if (layout !== null) rows = recordsWire(rowRecords(rows, layout, this.#scratchRecords), (performance.now() - t) / 1000);
      const copy = this.#tuples?.tuples(c, where);
      const { wire, slab } = this.#slabs.place(copy === undefined ? rows : { ...rows, copy }, true);
      out.push({ wire, slab, cells: c.length, windows: windowsEnded(c, chunks[i + 1]), amended: amendedRows(c) });
    }
    return out;
  }
}

/** A part whose dead letters read its messages' bytes. */
function needsBytes(p: PartOutcome): boolean {
  return p.poisoned !== undefined || p.rejects.length > 0 || (p.applied !== null && (p.applied.late.length > 0 || p.applied.overLimit.length > 0));
}

/** The bytes in an ArrayBuffer of their own, to move to the main thread. */
function copyOut(data: Buffer): ArrayBuffer {
  const own = new ArrayBuffer(data.length);
  new Uint8Array(own).set(data);
  return own;
}
