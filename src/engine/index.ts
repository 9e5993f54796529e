// The engine: batches in, statistics rows and dead letters out.
// It hosts the sources' lanes (LaneHost, ../sources/types.ts): each a Lane (./lane.ts) with the
// engine's bookkeeping beside it. submit() waits for room (backpressure: batches pending in the
// engine, then the pool's in-flight bound), dispatches the batch, and chains its application per
// lane, so partials reach windows, watermark and commit point in the order the source gave them even
// though workers finish out of order.
import { Gate } from '../async/index.js';
import { messageCount, type Batch } from '../core/batch.js';
import type { RejectReason } from '../core/messages.js';
import type { CommitPoint, LaneInit } from '../commit/types.js';
import type { BatchOutcome } from '../pool/index.js';
import type { LaneHost, LaneStatus, SourceBatch } from '../sources/types.js';
import type { RowRejection } from '../sinks/types.js';
import type { LaneIdentity } from '../commit/types.js';
import type { RowSettings } from '../core/messages.js';
import { RowFormatter, type RowBatch, type StatsRow } from '../windows/row.js';
import { FormattedElsewhere, rowsTask } from '../windows/row-task.js';
import { ClosedCells, SeriesBudget, type CellList, type ClosedBy } from '../windows/store.js';
import { amendedRows } from '../windows/cells.js';
import { admit } from './admit.js';
import { DeadLetterBuilder, type BatchOrigin } from './dead-letters.js';
import { EMIT_CHUNK_DEFAULTS, formatWhole, splitCells, windowCount, windowsEnded, setStateGauges, yieldToLoop } from './emission.js';
import { LateWarner, lateLetters } from './late.js';
import { Lane, subBatch, type StoreSettings } from './lane.js';
import { RowPlacement } from './placement.js';
import type { EngineOptions, EngineTotals } from './types.js';

export type { EngineOptions, EngineTotals } from './types.js';

/** AMEND_HORIZON_SECONDS when the engine is given none (the options table's default). */
export const AMEND_HORIZON_DEFAULT_SECONDS = 3600;

/**
 * Below this many rows a chunk is formatted on the main thread: a worker's round trip (tens of
 * microseconds) costs more than a few rows (about 2 us each).
 */
const ROWS_IN_A_WORKER_MIN = 32;

export class Engine implements LaneHost {
  readonly #o: EngineOptions;
  readonly #store: StoreSettings;
  readonly #rows: RowFormatter;
  readonly #rowSettings: RowSettings;
  readonly #placement: RowPlacement;
  readonly #letters: DeadLetterBuilder;
  readonly #late: LateWarner;
  readonly #lanes = new Map<number, Hosted>();
  #fatal: Error | null = null;
  /** Batches submitted and not yet applied: bounded too, so a slow sink stalls the source, not memory. */
  readonly #pending: Gate;
  readonly totals: EngineTotals = { messages: 0, records: 0, ok: 0, rejected: {}, rows: 0, batches: 0, decodeSeconds: 0, poisonedBatches: 0, replayed: 0 };

  constructor(opts: EngineOptions) {
    this.#o = opts;
    const windowMs = opts.windowSeconds * 1000;
    this.#store = {
      windowMs,
      latenessMs: opts.allowedLatenessSeconds * 1000,
      budget: new SeriesBudget(opts.maxSeries, opts.maxStateMb === undefined ? Infinity : opts.maxStateMb * 1024 * 1024),
      confirmRecords: opts.watermarkConfirmRecords,
      sketchAccuracy: (opts.percentiles?.length ?? 0) > 0 ? (opts.percentileAccuracy ?? 0.01) : 0,
      ...(opts.lateRecords === 'amend' ? { amend: { horizonMs: (opts.amendHorizonSeconds ?? AMEND_HORIZON_DEFAULT_SECONDS) * 1000 } } : {}),
    };
    this.#rows = new RowFormatter(windowMs, opts.maxSeries, opts.percentiles ?? []);
    this.#rowSettings = { windowMs, maxEntries: opts.maxSeries };
    this.#placement = new RowPlacement(opts.pool, opts.rowPlacement);
    this.#letters = new DeadLetterBuilder({ ...opts, windowMs });
    this.#late = new LateWarner(opts.logger);
    this.#pending = new Gate(2 * opts.pool.stats.maxInFlight);
    if (Number.isFinite(this.#store.budget.maxBytes)) opts.metrics.stateLimitBytes.set(this.#store.budget.maxBytes);
  }

  /** Opens a lane at its restored point (a lane already open under the number is closed dirty first). */
  open(lane: number, init: LaneInit): void {
    this.#open(lane, init);
  }

  #open(id: number, init: LaneInit): Hosted {
    if (this.#lanes.has(id)) void this.closeDirty(id);
    const s = hosted(Lane.open(id, init, this.#store));
    this.#lanes.set(id, s);
    return s;
  }

  /**
   * Forgets a lane (revoked, or rebuilt after a rebalance): batches in flight for it are not applied,
   * its open windows are discarded (the next owner rebuilds them from the committed position).
   */
  closeDirty(id: number): Promise<void> {
    const s = this.#lanes.get(id);
    if (s === undefined) return Promise.resolve();
    s.lane.closeDirty();
    this.#lanes.delete(id);
    this.#late.forget(id);
    this.#updateGauges();
    // Resolves once an apply already under way and every write it started have finished.
    return s.chain.then(() => s.writes).catch(() => {});
  }

  /** A copy of the lane's figures (see LaneStatus: nothing of the engine's own state is handed out). */
  status(id: number): LaneStatus | null {
    const s = this.#lanes.get(id);
    if (s === undefined) return null;
    const { lane } = s;
    return {
      commitPoint: lane.commitPoint,
      appliedEnd: lane.appliedEnd,
      oldestPendingMs: s.unappliedTimestamps[0] ?? null,
      lastAppliedTimestampMs: lane.lastAppliedTimestampMs,
      lastActivityMs: s.lastActivityMs,
    };
  }

  /** Resolves once the batch is dispatched (not applied). Throws once the engine has failed. */
  async submit(b: SourceBatch): Promise<void> {
    const { pool } = this.#o;
    const admitted = await admit(b, {
      fatal: () => this.#fatal,
      pending: this.#pending,
      capacity: pool,
      metrics: this.#o.metrics,
      totals: this.totals,
      lane: (id) => this.#lanes.get(id) ?? (this.#o.autoOpenLanes ? this.#open(id, {}) : null),
    });
    if (admitted === null) return;
    const { state, batch } = admitted;
    const nowMs = Date.now();
    const outcome = pool.run(batch, nowMs);
    state.chain = state.chain.then(async () => {
      try {
        const result = await outcome;
        if (batch.firstTimestampMs !== undefined) state.unappliedTimestamps.shift();
        if (this.#fatal === null && !state.lane.dropped) await this.#apply(state, batch, result, nowMs);
      } catch (err) {
        this.#fail(err);
      } finally {
        // Nothing of the engine reads the batch's bytes after its apply: the source may reuse them.
        batch.release?.();
        this.#pending.release();
      }
    });
  }

  /** The first error the engine cannot get past: logged once, reported once, then every submit throws. */
  #fail(err: unknown): void {
    if (this.#fatal !== null) return;
    this.#fatal = err instanceof Error ? err : new Error(String(err));
    // Whoever handles the fatal error logs it (the pipeline does, once); unhandled, the engine does.
    if (this.#o.onFatal === undefined) this.#o.logger.error({ err: this.#fatal }, `engine stopped: ${this.#fatal.message}`);
    else this.#o.onFatal(this.#fatal);
  }

  /** Resolves when every submitted batch has been applied. */
  async drain(): Promise<void> {
    let before: Array<Promise<void>>;
    do {
      before = [...this.#lanes.values()].map((s) => s.chain);
      await Promise.all(before);
      await Promise.all([...this.#lanes.values()].map((s) => s.writes));
    } while ([...this.#lanes.values()].some((s, i) => s.chain !== before[i]));
    if (this.#fatal !== null) throw this.#fatal;
  }

  /** End of a finite input (or shutdown of one): close every window and emit it. */
  async closeAll(closedBy: ClosedBy = 'end_of_input'): Promise<void> {
    await this.drain();
    for (const s of this.#lanes.values()) await this.#emit(s, s.lane.closeClean(closedBy), true);
    await this.drain();
    this.#updateGauges();
  }

  /**
   * An idle lane lets its watermark follow the wall clock (minus the allowed lateness), so its
   * windows still close. Runs in the lane's order, after what was submitted before.
   */
  async advanceIdle(id: number, wallMs: number): Promise<void> {
    const s = this.#lanes.get(id);
    if (s === undefined) return;
    s.chain = s.chain.then(async () => {
      if (s.lane.dropped || this.#fatal !== null) return;
      try {
        s.lane.advanceIdle(wallMs);
        this.#setWatermarkGauge(s.lane);
        await this.#emit(s, s.lane.takeClosed('idle'));
        this.#updateGauges();
      } catch (err) {
        this.#fail(err);
      }
    });
    await s.chain;
  }

  #setWatermarkGauge(lane: Lane): void {
    const id = lane.identity;
    // The lag metrics' labels, so the two join (named topic and partition, as they always were); an
    // unnumbered source has no topic and is labelled with its lane number.
    const labels = id === undefined ? { topic: '', partition: String(lane.id) } : { topic: id.topic, partition: String(id.partition) };
    const wm = lane.watermarkMs;
    this.#o.metrics.watermark.set(labels, Number.isFinite(wm) ? wm / 1000 : 0);
  }

  #origin(lane: Lane, batch: Batch): BatchOrigin {
    return { batch, identity: lane.identity, replay: (msg) => this.#replayed(lane, batch, msg) };
  }

  async #apply(state: Hosted, batch: Batch, outcome: BatchOutcome, nowMs: number): Promise<void> {
    const { metrics, deadLetter } = this.#o;
    const split = state.lane.replaySplit(batch);
    if (split > 0) {
      await this.#applyParts(state, batch, [[0, split], [split, messageCount(batch)]], nowMs);
      return;
    }
    if (outcome.kind === 'poisoned' && messageCount(batch) > 1) {
      await this.#bisect(state, batch, nowMs);
      return;
    }
    const lane = state.lane;
    const origin = this.#origin(lane, batch);
    if (outcome.kind === 'poisoned') {
      const n = messageCount(batch);
      metrics.poisonedBatches.inc();
      this.totals.poisonedBatches++;
      this.#count('poisoned_batch', n);
      this.totals.records += n;
      await deadLetter.write(this.#letters.poisoned(origin, outcome.reason));
      return;
    }
    const r = outcome.result;
    metrics.decodeSeconds.observe(r.decodeSeconds);
    metrics.taskRunSeconds.observe(outcome.runSeconds);
    metrics.taskWaitSeconds.observe(outcome.waitSeconds);
    this.totals.decodeSeconds += r.decodeSeconds;
    this.totals.records += r.records;
    if (r.rejects.length > 0) await deadLetter.write(this.#letters.rejects(origin, r.rejects, (reason, n) => this.#count(reason, n)));
    // Closed dirty while its rejects were written: what it would apply is the next owner's to replay.
    if (lane.dropped) return;
    const watermarkBefore = lane.watermarkMs;
    const positions = batch.startPosition !== undefined && batch.endPosition !== undefined
      ? { start: batch.startPosition, end: batch.endPosition }
      : undefined;
    const applied = lane.apply(r, positions, batch.lastTimestampMs, lane.allReplayed(batch));
    // Amended records are in the statistics (their window's new revision); rebuilt ones were before a restart.
    this.totals.ok += applied.accepted + applied.amended;
    metrics.records.inc({ result: 'ok' }, applied.accepted + applied.amended);
    if (applied.amended > 0) metrics.lateRecords.inc({ outcome: 'amended' }, applied.amended);
    if (applied.rebuilt > 0) {
      this.totals.replayed += applied.rebuilt;
      metrics.replayed.inc(applied.rebuilt);
    }
    if (applied.late.length > 0 || applied.overLimit.length > 0) {
      const { entries, found, beyondHorizon } = this.#letters.refusedRecords(origin, r, applied.late, applied.overLimit, watermarkBefore, nowMs);
      const lateN = lateLetters(entries);
      if (beyondHorizon > 0) metrics.lateRecords.inc({ outcome: 'beyond_horizon' }, beyondHorizon);
      if (lateN > beyondHorizon) metrics.lateRecords.inc({ outcome: 'dead_lettered' }, lateN - beyondHorizon);
      let expected = 0;
      for (const c of applied.late) expected += c.count;
      this.#late.observe({ partition: lane.id, identity: lane.identity, accepted: applied.accepted, late: lateN, watermarkMs: watermarkBefore, oldestWindowMs: applied.late.reduce((m, c) => Math.min(m, c.windowStart), Infinity) });
      for (const c of applied.overLimit) expected += c.count;
      if (found !== expected) {
        // Cannot happen unless decoding is not deterministic; say so loudly rather than miscount.
        this.#o.logger.error({ expected, found }, 're-decode of late/over-limit records disagrees with the worker');
      }
      for (const e of entries) this.#count(e.reason, 1);
      await deadLetter.write(entries);
      if (lane.dropped) return;
    }
    this.#setWatermarkGauge(lane);
    await this.#emit(state, lane.takeClosed());
    this.#updateGauges();
  }

  /**
   * A batch that crashed its worker (or ran it out of memory) twice: decoded again in halves, and each
   * half that fails again in halves, until the poison messages stand alone. Only those are
   * dead-lettered (poisoned_batch); every other record is applied, in the batch's order. At most
   * 2 x log2(messages) runs per poison message.
   */
  async #bisect(state: Hosted, batch: Batch, nowMs: number): Promise<void> {
    const n = messageCount(batch);
    const mid = Math.floor(n / 2);
    this.#o.logger.warn({ lane: batch.lane, seq: batch.seq, messages: n }, 'batch poisoned a worker: decoding it again in halves to isolate the poison');
    await this.#applyParts(state, batch, [[0, mid], [mid, n]], nowMs, 'isolated by bisection; ');
  }

  /**
   * A batch applied as parts, in order, each decoded again: the halves of a bisection (`poisoned`
   * prefixes the reason of a part that fails again), or with LATE_RECORDS=amend the replayed messages
   * of a restart apart from the new ones.
   */
  async #applyParts(state: Hosted, batch: Batch, parts: ReadonlyArray<readonly [number, number]>, nowMs: number, poisoned = ''): Promise<void> {
    for (const [lo, hi] of parts) {
      const part = subBatch(batch, lo, hi);
      if (this.#fatal !== null || state.lane.dropped) return;
      await this.#o.pool.acquire();
      const outcome = await this.#o.pool.run(part, nowMs);
      await this.#apply(state, part, outcome.kind === 'poisoned' && poisoned !== '' ? { kind: 'poisoned', reason: `${poisoned}${outcome.reason}` } : outcome, nowMs);
    }
  }

  /** A message already processed before a restart: skipped and counted, never dead-lettered twice. */
  #replayed(lane: Lane, batch: Batch, msg: number): boolean {
    if (!lane.isReplay(batch, msg)) return false;
    this.totals.replayed++;
    this.#o.metrics.replayed.inc();
    return true;
  }

  #count(reason: RejectReason, n: number): void {
    this.#o.metrics.records.inc({ result: reason }, n);
    this.totals.rejected[reason] = (this.totals.rejected[reason] ?? 0) + n;
  }

  /**
   * Hands closed windows to the sink. With a positioned source, the point the lane prepares for this
   * emission goes along, so a sink that stores points writes both in one transaction; the lane posts
   * it as its commit point only once the write (and every earlier one) settled. A pipelined sink gets
   * the next emission while this one is in flight (bounded per lane).
   * `closing` (end of a finite input): the last emission, awaited, with no point.
   */
  async #emit(state: Hosted, cells: CellList, closing = false): Promise<void> {
    const point = closing ? null : state.lane.prepareCommit();
    if (cells.length === 0) {
      if (point !== null) {
        if (state.writesInFlight === 0) state.lane.postCommit(point);
        else state.writes = state.writes.then(() => this.#advancePoint(state, point));
      }
      return;
    }
    const chunks = splitCells(cells, this.#o.emitChunk ?? EMIT_CHUNK_DEFAULTS);
    const ident = state.lane.identity;
    // Taken out of the lane, the cells count as unwritten until their writes settle (each write takes
    // its share over): 0 open series must never be read while rows are being formatted or yielded.
    const windows = windowCount(cells);
    const unwritten = { cells: cells.length, windows };
    state.unwrittenCells += unwritten.cells;
    state.unwrittenWindows += unwritten.windows;
    this.#updateGauges();
    try {
      if (this.#o.sink.wholeEmissions === true) {
        const whole = await formatWhole((c) => this.#format(c, ident), chunks, ident);
        unwritten.cells = 0;
        unwritten.windows = 0;
        await this.#write(state, whole, cells, windows, point, closing);
        return;
      }
      await this.#emitChunks(state, chunks, ident, point, closing, unwritten);
    } finally {
      // What an emission cut short (its lane dropped, the engine failed) never writes.
      if (unwritten.cells > 0 || unwritten.windows > 0) {
        state.unwrittenCells -= unwritten.cells;
        state.unwrittenWindows -= unwritten.windows;
        this.#updateGauges();
      }
    }
  }

  async #emitChunks(state: Hosted, chunks: readonly CellList[], ident: LaneIdentity | undefined, point: CommitPoint | null, closing: boolean, unwritten: { cells: number; windows: number }): Promise<void> {
    // Only the last chunk carries the commit point: a crash between chunks replays the window from
    // the previous point and writes the earlier chunks again (upserts by row identity).
    // One chunk is formatted ahead while the one before it is written: no more, since each holds its rows.
    let next = this.#format(chunks[0]!, ident);
    for (let i = 0; i < chunks.length; i++) {
      const formatted = await next;
      if (i + 1 < chunks.length) {
        next = this.#format(chunks[i + 1]!, ident);
        // Not awaited when the lane is dropped before its turn: its failure is nobody's to handle then.
        next.catch(() => {});
      }
      if (i > 0) {
        await yieldToLoop();
        if (state.lane.dropped || this.#fatal !== null) return;
      }
      const last = i === chunks.length - 1;
      const part = chunks[i]!;
      // A window split over chunks counts in the chunk that ends it.
      const windows = windowsEnded(part, chunks[i + 1]);
      unwritten.cells -= part.length;
      unwritten.windows -= windows;
      await this.#write(state, formatted, part, windows, last ? point : null, closing);
    }
  }

  /**
   * A chunk's rows: formatted in a worker when the sink reads only their bytes and the main thread is
   * busy and the workers have room (./placement.ts), else here. Never rejects.
   */
  async #format(cells: CellList, ident: LaneIdentity | undefined): Promise<RowBatch> {
    const { pool, sink, logger } = this.#o;
    if (sink.readsRowBytes === true && cells instanceof ClosedCells && cells.sketches === null && cells.length >= ROWS_IN_A_WORKER_MIN && this.#placement.inWorker()) {
      const { task, transfer } = rowsTask(cells, this.#rowSettings, ident, sink.readsIdentityKeys === true, pool.keyArena);
      const wire = await pool.formatRows(task, transfer, (err) => logger.warn({ err }, `a worker failed to format rows (${err.message}): the main thread formats them`));
      if (wire !== null) return new FormattedElsewhere(wire, ident, () => this.#rows.format(cells, ident));
    }
    return this.#rows.format(cells, ident);
  }

  async #write(state: Hosted, batch: RowBatch, cells: CellList, windows: number, point: CommitPoint | null, closing: boolean): Promise<void> {
    const ident = state.lane.identity;
    const { metrics, sink } = this.#o;
    // Counted as unwritten by #emit since they left the lane; this write's settling takes them off.
    const end = metrics.sinkWriteSeconds.startTimer({ output: 'statistics' });
    const written = sink.write(batch, ident !== undefined && point !== null ? { ...ident, point } : undefined).finally(() => {
      state.unwrittenCells -= cells.length;
      state.unwrittenWindows -= windows;
      this.#updateGauges();
    });
    const settle = async (): Promise<void> => {
      const result = await written;
      end();
      // batch.rows builds row objects the file sink never needed: only when a row was refused.
      if (result.rejected.length > 0) await this.#deadLetterRows(state.lane, batch.rows, result.rejected);
      metrics.windowsEmitted.inc(cells.length - result.rejected.length);
      const amended = amendedRows(cells);
      if (amended > 0) metrics.amendments.inc(amended);
      this.totals.rows += cells.length - result.rejected.length;
      if (point !== null) this.#advancePoint(state, point);
    };
    if (sink.pipelined !== true || closing) {
      await settle();
      return;
    }
    const prev = state.writes;
    state.writesInFlight++;
    metrics.sinkWritesInFlight.inc();
    // Settled in call order, so commit points only move forward; a failed write stops the engine.
    state.writes = prev.then(settle).catch((err: unknown) => this.#fail(err)).finally(() => {
      state.writesInFlight--;
      metrics.sinkWritesInFlight.dec();
    });
    if (state.writesInFlight >= (this.#o.maxWritesInFlight ?? 16)) await state.writes;
    if (this.#fatal !== null) throw this.#fatal;
  }

  #advancePoint(state: Hosted, point: CommitPoint): void {
    if (this.#fatal === null) state.lane.postCommit(point);
  }

  /**
   * Rows a sink refused for a reason of the row become dead letters, and their records move from ok
   * to sink_rejected, so that ok + rejected still equals the input.
   */
  async #deadLetterRows(lane: Lane, rows: readonly StatsRow[], rejected: readonly RowRejection[]): Promise<void> {
    if (rejected.length === 0) return;
    const { entries, records } = this.#letters.rows(lane.id, lane.identity, rows, rejected, this.#o.sink.describe);
    this.#o.metrics.sinkRejectedRows.inc(entries.length);
    this.#o.logger.warn({ rows: entries.length, records, first: entries[0]?.detail }, 'sink refused rows; dead-lettered as sink_rejected');
    this.totals.ok -= records;
    this.#count('sink_rejected', records);
    await this.#o.deadLetter.write(entries);
  }

  #updateGauges(): void {
    setStateGauges(this.#o.metrics, this.#lanes.values(), (s) => s.lane, this.#store.budget.bytes, this.#store.amend !== undefined);
  }

}

/**
 * What the engine keeps beside each lane to host it: the order its batches apply in, when it last
 * received one, what is submitted and unapplied, and its writes to the sink. Main-thread bookkeeping
 * of the source and the sink; the lane's own state is the Lane's.
 */
interface Hosted {
  readonly lane: Lane;
  nextSeq: number;
  chain: Promise<void>;
  /** Wall-clock time of the last batch submitted, for idle flushing. */
  lastActivityMs: number;
  /** Source timestamp of the oldest submitted batch not yet applied (lag in seconds). */
  readonly unappliedTimestamps: number[];
  /** Writes handed to a pipelined sink and not yet settled; `writes` settles after the last of them. */
  writesInFlight: number;
  /**
   * Cells taken out of the lane whose rows the sink has not yet written: still open for the
   * open_series / open_windows gauges, so that 0 there means every closed window was written.
   */
  unwrittenCells: number;
  unwrittenWindows: number;
  writes: Promise<void>;
  /** The lane's kept windows evicted (MAX_STATE_MB) as last counted in the metric. */
  evictedSeen: number;
}

function hosted(lane: Lane): Hosted {
  return { lane, nextSeq: 0, chain: Promise.resolve(), lastActivityMs: Date.now(), unappliedTimestamps: [], writesInFlight: 0, unwrittenCells: 0, unwrittenWindows: 0, writes: Promise.resolve(), evictedSeen: 0 };
}
