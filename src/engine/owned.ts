// The engine of LANE_STATE=worker: the same LaneHost as ./index.ts, but each lane's state lives in the
// worker that owns it (../pool/owners.ts, ../windows/owner.ts), which decodes its batches, merges them
// into its windows, closes them and formats their rows. What the main thread does per batch: hand its
// bytes to the owner, write the rows' bytes that come back, build the dead letters it is told of
// (from the batch's bytes, which it keeps until then) and move the lane's commit point once the rows
// are written. Per record it does next to nothing.
//
// Replies of one lane come back in the order its tasks were sent (one owner thread, first in first
// out), so a lane's batches are sent at once and their replies handled along a chain per lane, as
// the main engine chains its applies. A worker that dies loses its lanes' windows: each of them is
// rebuilt by replay where its source can replay a lane (Kafka: the partition is read again from the
// lane's commit point under a fresh lane; the rows it already wrote are not written again, since the
// point is taken once its writes have settled), and the other lanes go on. Where the source cannot
// (a file, the generator, Redis), or a lane keeps losing its owner replaying from one point, the
// engine stops with STREAMSTATS_LANE_OWNER_LOST and the restart resumes every lane from its commit point.
import { Gate } from '../async/index.js';
import { messageCount, movableOffsets, type Batch } from '../core/batch.js';
import type { GeneratedLane } from '../core/generator.js';
import type { DecodeResult, RejectReason, RowRecords } from '../core/messages.js';
import type { CommitPoint, LaneIdentity, LaneInit } from '../commit/types.js';
import { StreamstatsError } from '../errors.js';
import { ownerLost, type LaneOwners } from '../pool/owners.js';
import type { GeneratingLaneHost, LaneHost, LaneRewinder, LaneStatus, SourceBatch } from '../sources/types.js';
import type { RowRejection } from '../sinks/types.js';
import type { ClosedBy } from '../windows/cells.js';
import type { GeneratedBatch, LaneFigures, OwnerTask, PartOutcome, RowsChunk } from '../windows/owner.js';
import type { RowBatch, StatsRow } from '../windows/row.js';
import { FormattedElsewhere, joinRecords, recordsWire } from '../windows/row-task.js';
import { releaseSlab } from '../windows/row-slabs.js';
import { replaySplitAt, subBatch } from '../windows/lane.js';
import type { SharedSeriesBudget } from '../windows/store.js';
import { admit, admitGenerated, type Admission } from './admit.js';
import { DeadLetterBuilder, type BatchOrigin } from './dead-letters.js';
import { setStateGauges, yieldToLoop } from './emission.js';
import { LateWarner, lateLetters } from './late.js';
import type { EngineOptions, EngineTotals } from './types.js';

/**
 * The decode result stays in the owner, so the messages of refused cells are not known here: their
 * dead letters re-read the whole part (late and over-limit records are rare; the owner could send
 * each message's cell along next).
 */
const WHOLE_BATCH: Pick<DecodeResult, 'series' | 'cells'> = { series: [], cells: new Float64Array(0) };

export const OWNED_ENGINE_DEFAULTS = {
  /**
   * Owner losses of one lane replaying from the same commit point before the engine gives up: a
   * record past that point kills its worker every time (memory, the task timeout, a crash), and
   * replaying it again would loop forever behind a healthy-looking process.
   */
  maxRebuildsFromOnePoint: 3,
} as const;

/** Percentiles, amendment and chunking are the owners' (their settings); lateRecords and its horizon stay for the dead letters and gauges. */
export interface OwnedEngineOptions extends Omit<EngineOptions, 'pool' | 'rowPlacement' | 'percentiles' | 'percentileAccuracy' | 'emitChunk'> {
  readonly owners: LaneOwners;
  /** The budget the owners count open series in (its buffer is in their settings). */
  readonly budget: SharedSeriesBudget;
}

/** What the main thread keeps of a lane it does not hold: its order, its writes, and the owner's last figures. */
interface Owned {
  readonly id: number;
  readonly identity: LaneIdentity | undefined;
  /** Its owner died: nothing more is sent for it, replies already made are still written, then it is rebuilt. */
  lost: boolean;
  /** Input below it was processed before the restart: its rejects are not dead-lettered again. */
  readonly restoredAppliedEnd: number;
  dropped: boolean;
  /** Closed clean (end of input): nothing more is sent to its owner. */
  closed: boolean;
  commitPoint: CommitPoint | null;
  figures: LaneFigures;
  nextSeq: number;
  chain: Promise<void>;
  lastActivityMs: number;
  readonly unappliedTimestamps: number[];
  writesInFlight: number;
  unwrittenCells: number;
  unwrittenWindows: number;
  writes: Promise<void>;
  /** The lane's kept windows evicted (MAX_STATE_MB) as last counted in the metric. */
  evictedSeen: number;
}

export class OwnedEngine implements LaneHost, GeneratingLaneHost {
  readonly #o: OwnedEngineOptions;
  readonly #letters: DeadLetterBuilder;
  readonly #late: LateWarner;
  readonly #lanes = new Map<number, Owned>();
  readonly #pending: Gate;
  #fatal: Error | null = null;
  #rewinder: LaneRewinder | null = null;
  /** Per lane identity: the point its last rebuild replayed from and how many rebuilds in a row did. */
  readonly #rebuilds = new Map<string, { position: number | null; count: number }>();
  readonly totals: EngineTotals = { messages: 0, records: 0, ok: 0, rejected: {}, rows: 0, batches: 0, decodeSeconds: 0, poisonedBatches: 0, replayed: 0 };

  constructor(opts: OwnedEngineOptions) {
    this.#o = opts;
    this.#letters = new DeadLetterBuilder({ ...opts, windowMs: opts.windowSeconds * 1000 });
    this.#late = new LateWarner(opts.logger);
    this.#pending = new Gate(2 * opts.owners.stats.maxInFlight);
    if (Number.isFinite(opts.budget.maxBytes)) opts.metrics.stateLimitBytes.set(opts.budget.maxBytes);
    opts.owners.onLost((owner, lanes, cause) => this.#ownerLost(owner, lanes, cause));
  }

  replayWith(rewinder: LaneRewinder): void {
    this.#rewinder = rewinder;
  }

  /** An owner died with these lanes' state: each is rebuilt by replay, or the engine stops. */
  #ownerLost(owner: number, lanes: readonly number[], cause: unknown): void {
    // Its lanes' open series, sketches and kept windows died with it: they leave the shared budget.
    this.#o.budget.forgetOwner(owner);
    const lost: Owned[] = [];
    for (const id of lanes) {
      const s = this.#lanes.get(id);
      if (s === undefined || s.dropped || s.closed) continue;
      s.lost = true;
      this.#lanes.delete(id);
      this.#late.forget(id);
      lost.push(s);
    }
    if (lost.length === 0 || this.#fatal !== null) return;
    if (this.#rewinder === null) {
      this.#fail(ownerLost(owner, lanes, cause));
      return;
    }
    this.#o.logger.warn({ err: cause, owner, lanes: lost.map((s) => s.id) }, 'a lane owner worker failed: its lanes are rebuilt by replaying their input from their commit points; the other lanes go on');
    for (const s of lost) void this.#rebuild(s, owner, cause);
    this.#updateGauges();
  }

  async #rebuild(s: Owned, owner: number, cause: unknown): Promise<void> {
    // Replies the owner made before it died are written; the point is read once those writes settled.
    await s.chain;
    await s.writes.catch(() => {});
    if (this.#fatal !== null) return;
    const point = s.commitPoint;
    const key = s.identity === undefined ? `lane ${s.id}` : `${s.identity.topic}:${s.identity.partition}`;
    const position = point?.position ?? null;
    const prev = this.#rebuilds.get(key);
    const count = prev !== undefined && prev.position === position ? prev.count + 1 : 1;
    this.#rebuilds.set(key, { position, count });
    if (count > OWNED_ENGINE_DEFAULTS.maxRebuildsFromOnePoint) {
      const base = ownerLost(owner, [s.id], cause);
      this.#fail(new StreamstatsError(
        'STREAMSTATS_LANE_OWNER_LOST',
        `${key}: its owner failed ${count} times replaying from ${position === null ? 'where the lane resumed' : `position ${position}`} (a record after that point kills the worker: WORKER_MAX_MEMORY_MB, TASK_TIMEOUT_SECONDS or a crash); ${base.message}`,
        { cause },
      ));
      return;
    }
    let rewound = false;
    try {
      rewound = this.#rewinder!.rewind(s.id, point);
    } catch (err) {
      this.#o.logger.error({ err }, 'replaying a lost lane failed');
    }
    if (!rewound) {
      this.#fail(ownerLost(owner, [s.id], cause));
      return;
    }
    this.#o.metrics.laneRebuilds.inc();
  }

  open(lane: number, init: LaneInit): void {
    this.#open(lane, init);
  }

  /** A lane whose owner generates its input (SOURCE=generator): no bytes cross for it, only counts. */
  openGenerated(lane: number, generated: GeneratedLane): void {
    this.#open(lane, {}, generated);
  }

  #open(id: number, init: LaneInit, generate?: GeneratedLane): Owned {
    if (this.#lanes.has(id)) void this.closeDirty(id);
    const s: Owned = {
      id,
      identity: init.identity,
      lost: false,
      restoredAppliedEnd: init.appliedEnd ?? -Infinity,
      dropped: false,
      closed: false,
      commitPoint: null,
      figures: { watermarkMs: init.watermarkMs ?? -Infinity, appliedEnd: null, lastAppliedTimestampMs: null, openSeries: 0, openWindows: 0, keptWindows: 0, keptBytes: 0, evictedWindows: 0 },
      nextSeq: 0,
      chain: Promise.resolve(),
      lastActivityMs: Date.now(),
      unappliedTimestamps: [],
      writesInFlight: 0,
      unwrittenCells: 0,
      unwrittenWindows: 0,
      writes: Promise.resolve(),
      evictedSeen: 0,
    };
    this.#lanes.set(id, s);
    this.#o.owners.assign(id);
    const opened = this.#send(generate === undefined ? { kind: 'open', lane: id, init } : { kind: 'open', lane: id, init, generate });
    s.chain = opened.then(() => {}, (err: unknown) => {
      if (!s.lost) this.#fail(err);
    });
    return s;
  }

  /** Sends a task to the lane's owner now; its rejection is handled where the reply is awaited. */
  #send(task: OwnerTask, transfer?: ArrayBuffer[]): ReturnType<LaneOwners['run']> {
    const reply = this.#o.owners.run(task, transfer);
    reply.catch(() => {});
    return reply;
  }

  closeDirty(id: number): Promise<void> {
    const s = this.#lanes.get(id);
    if (s === undefined) return Promise.resolve();
    s.dropped = true;
    this.#lanes.delete(id);
    this.#late.forget(id);
    if (!s.closed) {
      // A lost owner's lanes are gone anyway; the tasks still pending for them report the loss.
      void this.#send({ kind: 'close-dirty', lane: id }).catch(() => {});
      this.#o.owners.unassign(id);
    }
    this.#updateGauges();
    return s.chain.then(() => s.writes).catch(() => {});
  }

  status(id: number): LaneStatus | null {
    const s = this.#lanes.get(id);
    if (s === undefined) return null;
    return {
      commitPoint: s.commitPoint,
      appliedEnd: s.figures.appliedEnd,
      oldestPendingMs: s.unappliedTimestamps[0] ?? null,
      lastAppliedTimestampMs: s.figures.lastAppliedTimestampMs,
      lastActivityMs: s.lastActivityMs,
    };
  }

  async submit(b: SourceBatch): Promise<void> {
    const admitted = await admit(b, this.#admission((id) => this.#lanes.get(id) ?? (this.#o.autoOpenLanes ? this.#open(id, {}) : null)));
    if (admitted === null) return;
    const { state, batch } = admitted;
    const nowMs = Date.now();
    const { task, transfer } = applyTask(batch, nowMs);
    this.#chainReply(state, this.#send(task, transfer), nowMs, () => batch, () => {
      if (batch.firstTimestampMs !== undefined) state.unappliedTimestamps.shift();
    }, () => batch.release?.());
  }

  /**
   * submit() for a generated lane: its owner writes points from..from+count of its share and applies
   * them. The batch's bytes come back only when its dead letters need them.
   */
  async generate(lane: number, from: number, count: number): Promise<void> {
    const admitted = await admitGenerated(lane, count, this.#admission((id) => this.#lanes.get(id) ?? null));
    if (admitted === null) return;
    const { state, seq } = admitted;
    const nowMs = Date.now();
    this.#chainReply(state, this.#send({ kind: 'generate', lane, from, count, nowMs }), nowMs, (r) => {
      this.#o.metrics.batchBytes.observe(r.generated?.bytes ?? 0);
      return generatedBatch(lane, seq, r.generated);
    });
  }

  #admission(lane: (id: number) => Owned | null): Admission<Owned> {
    return { fatal: () => this.#fatal, pending: this.#pending, capacity: this.#o.owners, metrics: this.#o.metrics, totals: this.totals, lane };
  }

  /**
   * Handles an apply or generate reply on the lane's chain, in the order sent: the owners' permit
   * back as soon as it settles, then timings, then what the owner did (unless the lane went), then
   * the engine's permit. `batchOf` gives the batch the reply is about.
   */
  #chainReply(state: Owned, reply: ReturnType<LaneOwners['run']>, nowMs: number, batchOf: (r: Awaited<ReturnType<LaneOwners['run']>>) => Batch, onReply?: () => void, done?: () => void): void {
    const { owners, metrics } = this.#o;
    const sentAt = performance.now();
    const settled = reply.finally(() => owners.release());
    settled.catch(() => {});
    state.chain = state.chain.then(async () => {
      try {
        const r = await settled;
        onReply?.();
        metrics.taskRunSeconds.observe(r.seconds);
        metrics.taskWaitSeconds.observe(Math.max(0, (performance.now() - sentAt) / 1000 - r.seconds));
        const batch = batchOf(r);
        if (this.#fatal === null && !state.dropped) await this.#applied(state, batch, r.parts, r.chunks, r.point, r.figures, nowMs);
      } catch (err) {
        if (!state.lost) this.#fail(err);
      } finally {
        done?.();
        this.#pending.release();
      }
    });
  }

  #fail(err: unknown): void {
    if (this.#fatal !== null) return;
    this.#fatal = err instanceof Error ? err : new Error(String(err));
    if (this.#o.onFatal === undefined) this.#o.logger.error({ err: this.#fatal }, `engine stopped: ${this.#fatal.message}`);
    else this.#o.onFatal(this.#fatal);
  }

  async drain(): Promise<void> {
    let before: Array<Promise<void>>;
    do {
      before = [...this.#lanes.values()].map((s) => s.chain);
      await Promise.all(before);
      await Promise.all([...this.#lanes.values()].map((s) => s.writes));
    } while ([...this.#lanes.values()].some((s, i) => s.chain !== before[i]));
    if (this.#fatal !== null) throw this.#fatal;
  }

  async closeAll(closedBy: ClosedBy = 'end_of_input'): Promise<void> {
    await this.drain();
    for (const s of this.#lanes.values()) {
      if (s.closed || s.dropped) continue;
      s.closed = true;
      try {
        const r = await this.#send({ kind: 'close-clean', lane: s.id, closedBy });
        this.#o.owners.unassign(s.id);
        s.figures = { ...s.figures, openSeries: 0, openWindows: 0, keptWindows: 0, keptBytes: 0 };
        await this.#emit(s, r.chunks, null, true);
      } catch (err) {
        this.#fail(err);
      }
    }
    await this.drain();
    this.#updateGauges();
  }

  async advanceIdle(id: number, wallMs: number): Promise<void> {
    const s = this.#lanes.get(id);
    if (s === undefined || s.closed || s.dropped || this.#fatal !== null) return;
    const reply = this.#send({ kind: 'idle', lane: id, wallMs });
    s.chain = s.chain.then(async () => {
      try {
        const r = await reply;
        if (s.dropped || this.#fatal !== null) return;
        if (r.figures !== null) s.figures = r.figures;
        this.#setWatermarkGauge(s);
        await this.#emit(s, r.chunks, r.point);
        this.#updateGauges();
      } catch (err) {
        if (!s.lost) this.#fail(err);
      }
    });
    await s.chain;
  }

  #setWatermarkGauge(s: Owned): void {
    const id = s.identity;
    const labels = id === undefined ? { topic: '', partition: String(s.id) } : { topic: id.topic, partition: String(id.partition) };
    const wm = s.figures.watermarkMs;
    this.#o.metrics.watermark.set(labels, Number.isFinite(wm) ? wm / 1000 : 0);
  }

  #origin(s: Owned, batch: Batch): BatchOrigin {
    return { batch, identity: s.identity, replay: (msg) => this.#replayed(s, batch, msg) };
  }

  #replayed(s: Owned, batch: Batch, msg: number): boolean {
    const pos = batch.positions?.[msg];
    if (pos === undefined || !(Number(pos) < s.restoredAppliedEnd)) return false;
    this.totals.replayed++;
    this.#o.metrics.replayed.inc();
    return true;
  }

  #count(reason: RejectReason, n: number): void {
    this.#o.metrics.records.inc({ result: reason }, n);
    this.totals.rejected[reason] = (this.totals.rejected[reason] ?? 0) + n;
  }

  /** What the owner did with a batch: its parts' counts and dead letters here, then its rows out. */
  async #applied(s: Owned, batch: Batch, parts: readonly PartOutcome[], chunks: readonly RowsChunk[], point: CommitPoint | null, figures: LaneFigures | null, nowMs: number): Promise<void> {
    const { metrics, deadLetter } = this.#o;
    const n = messageCount(batch);
    // With amendment, a batch straddling the restored applied end comes back as its two parts (replay, new).
    const split = this.#o.lateRecords === 'amend' ? replaySplitAt(batch.positions, s.restoredAppliedEnd) : -1;
    if (parts.length > (split > 0 ? 2 : 1) || parts.some((p) => p.poisoned !== undefined)) {
      this.#o.logger.warn({ lane: batch.lane, seq: batch.seq, messages: n }, 'decoding a batch threw in its owner: decoded again in halves to isolate the message that throws');
    }
    for (const part of parts) {
      const sub = part.lo === 0 && part.hi === n ? batch : subBatch(batch, part.lo, part.hi);
      const origin = this.#origin(s, sub);
      if (part.poisoned !== undefined) {
        const m = part.hi - part.lo;
        metrics.poisonedBatches.inc();
        this.totals.poisonedBatches++;
        this.#count('poisoned_batch', m);
        this.totals.records += m;
        await deadLetter.write(this.#letters.poisoned(origin, part.poisoned));
        continue;
      }
      metrics.decodeSeconds.observe(part.decodeSeconds);
      this.totals.decodeSeconds += part.decodeSeconds;
      this.totals.records += part.records;
      if (part.rejects.length > 0) await deadLetter.write(this.#letters.rejects(origin, part.rejects, (reason, k) => this.#count(reason, k)));
      if (s.dropped) return;
      const applied = part.applied!;
      this.totals.ok += applied.accepted + applied.amended;
      metrics.records.inc({ result: 'ok' }, applied.accepted + applied.amended);
      if (applied.amended > 0) metrics.lateRecords.inc({ outcome: 'amended' }, applied.amended);
      if (applied.rebuilt > 0) {
        this.totals.replayed += applied.rebuilt;
        metrics.replayed.inc(applied.rebuilt);
      }
      if (applied.late.length > 0 || applied.overLimit.length > 0) {
        const { entries, found, beyondHorizon } = this.#letters.refusedRecords(origin, WHOLE_BATCH, applied.late, applied.overLimit, part.watermarkBefore, nowMs);
        const lateN = lateLetters(entries);
        if (beyondHorizon > 0) metrics.lateRecords.inc({ outcome: 'beyond_horizon' }, beyondHorizon);
        if (lateN > beyondHorizon) metrics.lateRecords.inc({ outcome: 'dead_lettered' }, lateN - beyondHorizon);
        let expected = 0;
        for (const c of applied.late) expected += c.count;
        this.#late.observe({ partition: s.id, identity: s.identity, accepted: applied.accepted, late: lateN, watermarkMs: part.watermarkBefore, oldestWindowMs: applied.late.reduce((m, c) => Math.min(m, c.windowStart), Infinity) });
        for (const c of applied.overLimit) expected += c.count;
        if (found !== expected) this.#o.logger.error({ expected, found }, 're-decode of late/over-limit records disagrees with the owner worker');
        for (const e of entries) this.#count(e.reason, 1);
        await deadLetter.write(entries);
        if (s.dropped) return;
      }
    }
    if (figures !== null) s.figures = figures;
    this.#setWatermarkGauge(s);
    await this.#emit(s, chunks, point);
    this.#updateGauges();
  }

  /**
   * Writes an emission's rows (the owner cut them in chunks); only the last chunk carries the commit
   * point, which becomes the lane's once that write and every earlier one settled. `closing`: the
   * last emission of a finite input, awaited, with no point.
   */
  async #emit(s: Owned, chunks: readonly RowsChunk[], point: CommitPoint | null, closing = false): Promise<void> {
    if (chunks.length === 0) {
      if (point !== null) {
        if (s.writesInFlight === 0) this.#advancePoint(s, point);
        else s.writes = s.writes.then(() => this.#advancePoint(s, point));
      }
      return;
    }
    let cells = 0;
    let windows = 0;
    for (const c of chunks) {
      cells += c.cells;
      windows += c.windows;
    }
    const unwritten = { cells, windows };
    s.unwrittenCells += cells;
    s.unwrittenWindows += windows;
    this.#updateGauges();
    try {
      if (this.#o.sink.wholeEmissions === true) {
        unwritten.cells = 0;
        unwritten.windows = 0;
        await this.#write(s, joined(chunks.map((c) => this.#rows(c, s.identity)), s.identity), cells, windows, point, closing, chunks);
        return;
      }
      for (let i = 0; i < chunks.length; i++) {
        if (i > 0) {
          await yieldToLoop();
          if (s.dropped || this.#fatal !== null) {
            // Never to be written: their slabs go back to the owner now.
            release(chunks.slice(i));
            return;
          }
        }
        const c = chunks[i]!;
        unwritten.cells -= c.cells;
        unwritten.windows -= c.windows;
        await this.#write(s, this.#rows(c, s.identity), c.cells, c.windows, i === chunks.length - 1 ? point : null, closing, [c]);
      }
    } finally {
      if (unwritten.cells > 0 || unwritten.windows > 0) {
        s.unwrittenCells -= unwritten.cells;
        s.unwrittenWindows -= unwritten.windows;
        this.#updateGauges();
      }
    }
  }

  /** A chunk's rows as bytes; row objects only when a sink refused one (read back from the row's JSON). */
  #rows(c: RowsChunk, ident: LaneIdentity | undefined): RowBatch {
    // Row objects from the batch's own lines (those of a chunk sent as records are made once, there).
    const batch: FormattedElsewhere = new FormattedElsewhere(c.wire, ident, () => parsedRows(batch.ndjsonBytes(), ident));
    return batch;
  }

  /** `from`: the chunks the batch's bytes are in, whose slabs go back to their owner once the write settled. */
  async #write(s: Owned, batch: RowBatch, cells: number, windows: number, point: CommitPoint | null, closing: boolean, from: readonly RowsChunk[]): Promise<void> {
    const ident = s.identity;
    const { metrics, sink } = this.#o;
    const end = metrics.sinkWriteSeconds.startTimer({ output: 'statistics' });
    const written = sink.write(batch, ident !== undefined && point !== null ? { ...ident, point } : undefined).finally(() => {
      s.unwrittenCells -= cells;
      s.unwrittenWindows -= windows;
      this.#updateGauges();
    });
    const settle = async (): Promise<void> => {
      try {
        const result = await written;
        end();
        if (result.rejected.length > 0) await this.#deadLetterRows(s, batch.rows, result.rejected);
        metrics.windowsEmitted.inc(cells - result.rejected.length);
        let amended = 0;
        for (const c of from) amended += c.amended;
        if (amended > 0) metrics.amendments.inc(amended);
        this.totals.rows += cells - result.rejected.length;
        if (point !== null) this.#advancePoint(s, point);
      } finally {
        release(from);
      }
    };
    if (sink.pipelined !== true || closing) {
      await settle();
      return;
    }
    const prev = s.writes;
    s.writesInFlight++;
    metrics.sinkWritesInFlight.inc();
    s.writes = prev.then(settle).catch((err: unknown) => this.#fail(err)).finally(() => {
      s.writesInFlight--;
      metrics.sinkWritesInFlight.dec();
    });
    if (s.writesInFlight >= (this.#o.maxWritesInFlight ?? 16)) await s.writes;
    if (this.#fatal !== null) throw this.#fatal;
  }

  #advancePoint(s: Owned, point: CommitPoint): void {
    if (this.#fatal === null) s.commitPoint = point;
  }

  async #deadLetterRows(s: Owned, rows: readonly StatsRow[], rejected: readonly RowRejection[]): Promise<void> {
    const { entries, records } = this.#letters.rows(s.id, s.identity, rows, rejected, this.#o.sink.describe);
    this.#o.metrics.sinkRejectedRows.inc(entries.length);
    this.#o.logger.warn({ rows: entries.length, records, first: entries[0]?.detail }, 'sink refused rows; dead-lettered as sink_rejected');
    this.totals.ok -= records;
    this.#count('sink_rejected', records);
    await this.#o.deadLetter.write(entries);
  }

  #updateGauges(): void {
    setStateGauges(this.#o.metrics, this.#lanes.values(), (s) => s.figures, this.#o.budget.bytes, this.#o.lateRecords === 'amend');
  }

}

/** A batch as an apply task: its bytes moved (or shared memory read in place) and its positions as numbers. */
function applyTask(batch: Batch, nowMs: number): { task: OwnerTask; transfer: ArrayBuffer[] } {
  const data = batch.data;
  const shared = data.buffer instanceof SharedArrayBuffer;
  const { offsets, ends } = movableOffsets(batch, shared);
  const transfer: ArrayBuffer[] = [offsets.buffer as ArrayBuffer];
  if (ends !== undefined) transfer.push(ends.buffer as ArrayBuffer);
  let buffer: ArrayBuffer | SharedArrayBuffer;
  if (shared) buffer = data.buffer;
  else {
    // One copy into a buffer that can move: the batch's own bytes stay here for its dead letters.
    const own = new ArrayBuffer(data.length);
    new Uint8Array(own).set(data);
    buffer = own;
    transfer.push(own);
  }
  let positions: Float64Array | undefined;
  if (batch.positions !== undefined) {
    const from = batch.positions;
    // A copy that moves: the batch keeps its own for dead letters.
    if (from instanceof Float64Array) positions = from.slice();
    else {
      positions = new Float64Array(from.length);
      for (let i = 0; i < positions.length; i++) positions[i] = Number(from[i]);
    }
    transfer.push(positions.buffer as ArrayBuffer);
  }
  const task: OwnerTask = {
    kind: 'apply',
    lane: batch.lane,
    buffer,
    offsets,
    ...(ends === undefined ? {} : { ends }),
    nowMs,
    ...(positions === undefined ? {} : { positions }),
    ...(batch.startPosition === undefined ? {} : { startPosition: batch.startPosition }),
    ...(batch.endPosition === undefined ? {} : { endPosition: batch.endPosition }),
    ...(batch.lastTimestampMs === undefined ? {} : { lastTimestampMs: batch.lastTimestampMs }),
  };
  return { task, transfer };
}

/** The chunks' rows are written (or never will be): the owners may write over their slabs. */
function release(chunks: readonly RowsChunk[]): void {
  for (const c of chunks) if (c.slab != null) releaseSlab(c.slab);
}

const NO_BYTES = Buffer.alloc(0);

/** A generated batch as the main thread holds it: its offsets, and its bytes only when an owner sent them. */
function generatedBatch(lane: number, seq: number, g: GeneratedBatch | undefined): Batch {
  if (g === undefined) throw new Error(`lane ${lane}: the owner's reply to a generate task has no batch`);
  return { lane, seq, data: g.data === null ? NO_BYTES : Buffer.from(g.data), offsets: g.offsets };
}

/** A chunk's row objects, read back from its NDJSON: only for rows a sink refused (their dead letters). */
function parsedRows(lines: Buffer, where: LaneIdentity | undefined): RowBatch {
  const text = lines.toString('utf8');
  const rows = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as StatsRow);
  return { rows, ndjson: () => text, where };
}

/** One RowBatch over several chunks (a sink that writes an emission as one piece: exactly-once Kafka). */
function joined(parts: readonly RowBatch[], where: LaneIdentity | undefined): RowBatch {
  if (parts.length === 1) return parts[0]!;
  const records = parts.map((p) => p.rowRecords?.() ?? null);
  if (records.every((r) => r !== null && r.partitions === records[0]!.partitions && r.budget === records[0]!.budget)) {
    let rows: StatsRow[] | null = null;
    return new FormattedElsewhere(recordsWire(joinRecords(records as RowRecords[]), 0), where, () => {
      rows ??= parts.flatMap((p) => p.rows);
      const all = rows;
      return { rows: all, ndjson: () => all.map((r) => `${JSON.stringify(r)}\n`).join(''), where };
    });
  }
  const bytes = Buffer.concat(parts.map((p) => p.ndjsonBytes!()));
  const ends: number[] = [];
  const keyBytes: Buffer[] = [];
  const keyEnds: number[] = [];
  let base = 0;
  let keyBase = 0;
  let keys = true;
  for (const p of parts) {
    for (const e of p.lineEnds!()) ends.push(base + e);
    base += p.ndjsonBytes!().length;
    const k = p.identityKeyBytes?.() ?? null;
    if (k === null) keys = false;
    else {
      keyBytes.push(k.bytes);
      for (const e of k.ends) keyEnds.push(keyBase + e);
      keyBase += k.bytes.length;
    }
  }
  const lineEnds = Int32Array.from(ends);
  const wire = { kind: 'rows' as const, ndjson: bytes, lineEnds, keys: keys ? Buffer.concat(keyBytes) : null, keyEnds: keys ? Int32Array.from(keyEnds) : null, seconds: 0 };
  let rows: StatsRow[] | null = null;
  return new FormattedElsewhere(wire, where, () => {
    rows ??= parts.flatMap((p) => p.rows);
    const all = rows;
    return { rows: all, ndjson: () => bytes.toString('utf8'), where };
  });
}
