// The engine: batches in, statistics rows and dead letters out.
// submit() waits for pool capacity (backpressure), dispatches the batch, and chains its application
// per partition, so partials reach windows, watermark and positions in the order the source gave them
// even though workers finish out of order.
import type { Logger } from 'pino';
import { messageBytes, messageCount, type Batch } from './core/batch.js';
import { Decoder } from './core/decode.js';
import type { DecodeResult, RejectReason } from './core/messages.js';
import { safeStringify } from './core/record.js';
import { windowStart } from './core/window.js';
import type { Metrics } from './metrics/index.js';
import type { BatchOutcome, DecodePool } from './pool/index.js';
import type { DeadLetter, DeadLetterEntry } from './sinks/dead-letter.js';
import type { RowRejection, Sink } from './sinks/types.js';
import type { SourceBatch } from './sources/types.js';
import type { CommitPoint, PartitionInit } from './commit/types.js';
import { RowFormatter, type RowBatch } from './windows/row.js';
import { SeriesBudget, WindowStore, type ClosedCell } from './windows/store.js';

export interface EngineOptions {
  readonly pool: DecodePool;
  readonly sink: Sink;
  readonly deadLetter: DeadLetter;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly sourceName: string;
  readonly windowSeconds: number;
  readonly allowedLatenessSeconds: number;
  /** Records that must confirm a forward jump of event time beyond the lateness (WATERMARK_CONFIRM_RECORDS). */
  readonly watermarkConfirmRecords?: number;
  readonly maxSeries: number;
  readonly decoder: Decoder;
  /** Percentiles (0..100) per window, from sketches of this relative accuracy; empty = none. */
  readonly percentiles?: readonly number[];
  readonly percentileAccuracy?: number;
  /**
   * Embedded sources get a partition state on first use; the Kafka source opens partitions itself on
   * assignment, and batches for a partition it dropped (revoked) are ignored.
   */
  readonly autoOpenPartitions: boolean;
  /** For partitioned sources: the identity stamped on rows (topic, partition). */
  readonly rowIdentity?: (partition: number) => { topic: string; partition: number } | undefined;
  /** Called once, when the engine cannot go on (an output failed): the pipeline stops and exits non-zero. */
  readonly onFatal?: (err: Error) => void;
  /** Emissions of one partition that a pipelined sink may hold at once (default 16). */
  readonly maxWritesInFlight?: number;
}

/** Dead letters of refused rows keep at most this much of the row's JSON (value_truncated says so). */
export const MAX_ROW_DEAD_LETTER_BYTES = 64 * 1024;

export interface EngineTotals {
  messages: number;
  records: number;
  ok: number;
  rejected: Partial<Record<RejectReason, number>>;
  rows: number;
  batches: number;
  decodeSeconds: number;
  poisonedBatches: number;
  /** Records skipped on a replay because their window was already emitted (or they were already dead-lettered). */
  replayed: number;
}

interface PartitionState {
  readonly store: WindowStore;
  nextSeq: number;
  chain: Promise<void>;
  /** Positions below this were processed before a restart or rebalance: rejects there are not dead-lettered again. */
  replayBefore: number;
  /** Set when the partition is revoked: batches still in flight for it are not applied. */
  dropped: boolean;
  /** Wall-clock time of the last batch submitted, for idle flushing. */
  lastActivityMs: number;
  /** Source timestamp of the oldest submitted batch not yet applied (lag in seconds). */
  readonly unappliedTimestamps: number[];
  /** Timestamp of the last message applied. */
  lastAppliedTimestampMs: number | null;
  /** What a commit may name, taken only after the rows it implies were handed to the sink. */
  safe: CommitPoint | null;
  /** Writes handed to a pipelined sink and not yet settled; `writes` settles after the last of them. */
  writesInFlight: number;
  writes: Promise<void>;
}

/** A consistent point to commit: the position, and the watermark up to which windows were emitted. */

export type { CommitPoint, PartitionInit } from './commit/types.js';

export class Engine {
  readonly #o: EngineOptions;
  readonly #windowMs: number;
  readonly #budget: SeriesBudget;
  readonly #rows: RowFormatter;
  readonly #partitions = new Map<number, PartitionState>();
  #fatal: Error | null = null;
  /** Batches submitted and not yet applied: bounded too, so a slow sink stalls the source, not memory. */
  #pending = 0;
  readonly #maxPending: number;
  #pendingWaiters: Array<() => void> = [];
  readonly totals: EngineTotals = { messages: 0, records: 0, ok: 0, rejected: {}, rows: 0, batches: 0, decodeSeconds: 0, poisonedBatches: 0, replayed: 0 };

  constructor(opts: EngineOptions) {
    this.#o = opts;
    this.#windowMs = opts.windowSeconds * 1000;
    this.#budget = new SeriesBudget(opts.maxSeries);
    this.#rows = new RowFormatter(this.#windowMs, opts.maxSeries, opts.percentiles ?? []);
    this.#maxPending = 2 * opts.pool.stats.maxInFlight;
  }

  /** Batches submitted and not yet applied. */
  get pending(): number {
    return this.#pending;
  }

  get fatal(): Error | null {
    return this.#fatal;
  }

  partition(p: number): WindowStore | undefined {
    return this.#partitions.get(p)?.store;
  }

  #state(p: number): PartitionState {
    return this.#partitions.get(p) ?? this.openPartition(p, {});
  }

  /** Starts (or restarts) a partition's state, e.g. on assignment with what the last commit stored. */
  openPartition(p: number, init: PartitionInit): PartitionState {
    const old = this.#partitions.get(p);
    if (old !== undefined) this.dropPartition(p);
    const store = new WindowStore({
      windowMs: this.#windowMs,
      latenessMs: this.#o.allowedLatenessSeconds * 1000,
      budget: this.#budget,
      ...(this.#o.watermarkConfirmRecords === undefined ? {} : { confirmRecords: this.#o.watermarkConfirmRecords }),
      sketchAccuracy: (this.#o.percentiles?.length ?? 0) > 0 ? (this.#o.percentileAccuracy ?? 0.01) : 0,
    });
    if (init.watermarkMs !== undefined) store.advanceWatermark(init.watermarkMs);
    const s: PartitionState = {
      store,
      nextSeq: 0,
      chain: Promise.resolve(),
      replayBefore: init.replayBefore ?? -Infinity,
      dropped: false,
      lastActivityMs: Date.now(),
      unappliedTimestamps: [],
      lastAppliedTimestampMs: null,
      safe: null,
      writesInFlight: 0,
      writes: Promise.resolve(),
    };
    this.#partitions.set(p, s);
    return s;
  }

  /**
   * Forgets a partition (revoked, or rebuilt after a rebalance): batches in flight for it are not
   * applied, its open windows are discarded (the next owner rebuilds them from the committed position).
   */
  dropPartition(p: number): Promise<void> {
    const s = this.#partitions.get(p);
    if (s === undefined) return Promise.resolve();
    s.dropped = true;
    s.store.takeAll();
    this.#partitions.delete(p);
    this.#updateGauges();
    // Resolves once an apply already under way and every write it started have finished.
    return s.chain.then(() => s.writes).catch(() => {});
  }

  /** What a commit may name for this partition now; null before any positioned batch was applied. */
  commitPoint(p: number): CommitPoint | null {
    return this.#partitions.get(p)?.safe ?? null;
  }

  #point(s: PartitionState): CommitPoint | null {
    const position = s.store.commitPosition();
    const appliedEnd = s.store.appliedEnd;
    if (position === null || appliedEnd === null) return null;
    // After a restart, positions below replayBefore were processed by an earlier run: the point must
    // not claim less, or the next restart would dead-letter their records again (as late).
    return { position, watermarkMs: s.store.watermark, appliedEnd: Math.max(appliedEnd, s.replayBefore) };
  }

  /** Position after the last applied batch. */
  appliedEnd(p: number): number | null {
    return this.#partitions.get(p)?.store.appliedEnd ?? null;
  }

  /** Age in seconds of the oldest record submitted and not yet applied; null when nothing is pending. */
  pendingAgeSeconds(p: number, nowMs: number): number | null {
    const s = this.#partitions.get(p);
    const ts = s?.unappliedTimestamps[0];
    return ts === undefined ? null : Math.max(0, (nowMs - ts) / 1000);
  }

  lastAppliedTimestampMs(p: number): number | null {
    return this.#partitions.get(p)?.lastAppliedTimestampMs ?? null;
  }

  watermarkMs(p: number): number {
    return this.#partitions.get(p)?.store.watermark ?? -Infinity;
  }

  /** Resolves when every batch submitted so far for this partition has been applied. */
  async drainPartition(p: number): Promise<void> {
    const s = this.#partitions.get(p);
    if (s === undefined) return;
    await s.chain;
    await s.writes;
  }

  /** Resolves once the batch is dispatched (not applied). Throws once the engine has failed. */
  async submit(b: SourceBatch): Promise<void> {
    if (this.#fatal !== null) throw this.#fatal;
    const { pool, metrics } = this.#o;
    if (pool.full || this.#pending >= this.#maxPending) metrics.poolBackpressure.inc();
    while (this.#pending >= this.#maxPending) await new Promise<void>((r) => this.#pendingWaiters.push(r));
    if (this.#fatal !== null) throw this.#fatal;
    this.#pending++;
    try {
      await pool.acquire();
    } catch (err) {
      this.#release();
      throw err;
    }
    const known = this.#partitions.get(b.partition);
    if (known === undefined && !this.#o.autoOpenPartitions) {
      // Revoked while this batch waited for capacity: nothing to apply it to.
      pool.release();
      this.#release();
      return;
    }
    const state = known ?? this.openPartition(b.partition, {});
    const batch: Batch = { ...b, seq: state.nextSeq++ };
    state.lastActivityMs = Date.now();
    if (batch.firstTimestampMs !== undefined) state.unappliedTimestamps.push(batch.firstTimestampMs);
    const n = messageCount(batch);
    metrics.messages.inc(n);
    metrics.batchMessages.observe(n);
    metrics.batchBytes.observe(batch.data.length);
    this.totals.messages += n;
    this.totals.batches++;
    const nowMs = Date.now();
    const outcome = pool.run(batch, nowMs);
    state.chain = state.chain.then(async () => {
      try {
        const result = await outcome;
        if (batch.firstTimestampMs !== undefined) state.unappliedTimestamps.shift();
        if (this.#fatal === null && !state.dropped) await this.#apply(state, batch, result, nowMs);
      } catch (err) {
        this.#fail(err);
      } finally {
        this.#release();
      }
    });
  }

  /** The first error the engine cannot get past: logged once, reported once, then every submit throws. */
  #fail(err: unknown): void {
    if (this.#fatal !== null) return;
    this.#fatal = err instanceof Error ? err : new Error(String(err));
    this.#o.logger.error({ err: this.#fatal }, `engine stopped: ${this.#fatal.message}`);
    const wake = this.#pendingWaiters;
    this.#pendingWaiters = [];
    for (const w of wake) w();
    this.#o.onFatal?.(this.#fatal);
  }

  #release(): void {
    this.#pending--;
    const w = this.#pendingWaiters;
    this.#pendingWaiters = [];
    for (const wake of w) wake();
  }

  /** Resolves when every submitted batch has been applied. */
  async drain(): Promise<void> {
    let before: Array<Promise<void>>;
    do {
      before = [...this.#partitions.values()].map((s) => s.chain);
      await Promise.all(before);
      await Promise.all([...this.#partitions.values()].map((s) => s.writes));
    } while ([...this.#partitions.values()].some((s, i) => s.chain !== before[i]));
    if (this.#fatal !== null) throw this.#fatal;
  }

  /** End of a finite input (or shutdown of one): close every window and emit it. */
  async closeAll(): Promise<void> {
    await this.drain();
    for (const [p, s] of this.#partitions) await this.#emit(p, s.store.takeAll());
    await this.drain();
    this.#updateGauges();
  }

  /** Wall-clock ms of the last batch submitted for the partition. */
  lastActivityMs(p: number): number | null {
    return this.#partitions.get(p)?.lastActivityMs ?? null;
  }

  /**
   * An idle partition lets its watermark follow the wall clock (minus the allowed lateness), so its
   * windows still close. Runs in the partition's order, after what was submitted before.
   */
  async advanceIdle(p: number, wallMs: number): Promise<void> {
    const s = this.#partitions.get(p);
    if (s === undefined) return;
    s.chain = s.chain.then(async () => {
      if (s.dropped || this.#fatal !== null) return;
      try {
        s.store.advanceWatermark(wallMs - this.#o.allowedLatenessSeconds * 1000);
        this.#setWatermarkGauge(p, s);
        await this.#emit(p, s.store.takeClosed(), s);
        this.#updateGauges();
      } catch (err) {
        this.#fail(err);
      }
    });
    await s.chain;
  }

  #setWatermarkGauge(p: number, s: PartitionState): void {
    const id = this.#o.rowIdentity?.(p);
    const label = id === undefined ? String(p) : `${id.topic}/${id.partition}`;
    this.#o.metrics.watermark.set({ partition: label }, Number.isFinite(s.store.watermark) ? s.store.watermark / 1000 : 0);
  }

  async #apply(state: PartitionState, batch: Batch, outcome: BatchOutcome, nowMs: number): Promise<void> {
    const { metrics } = this.#o;
    if (outcome.kind === 'poisoned' && messageCount(batch) > 1) {
      await this.#bisect(state, batch, nowMs);
      return;
    }
    if (outcome.kind === 'poisoned') {
      const n = messageCount(batch);
      metrics.poisonedBatches.inc();
      this.totals.poisonedBatches++;
      const entries: DeadLetterEntry[] = [];
      for (let i = 0; i < n; i++) entries.push(this.#entry(batch, i, -1, 'poisoned_batch', outcome.reason));
      this.#count('poisoned_batch', n);
      this.totals.records += n;
      await this.#o.deadLetter.write(entries);
      return;
    }
    const r = outcome.result;
    metrics.decodeSeconds.observe(r.decodeSeconds);
    metrics.taskRunSeconds.observe(outcome.runSeconds);
    metrics.taskWaitSeconds.observe(outcome.waitSeconds);
    this.totals.decodeSeconds += r.decodeSeconds;
    this.totals.records += r.records;
    if (r.rejects.length > 0) {
      const entries: DeadLetterEntry[] = [];
      for (const x of r.rejects) {
        if (this.#isReplay(state, batch, x.msg)) continue;
        const cut = x.elem < 0 ? batch.oversized?.get(x.msg) : undefined;
        if (cut !== undefined) {
          // Cut or refused at the source: too_large, with what the source knows of the original.
          const detail = cut.detail ?? `message: ${cut.bytes} bytes, more than MAX_MESSAGE_BYTES=${this.#o.decoder.settings.maxMessageBytes}`;
          const e = this.#entry(batch, x.msg, -1, 'too_large', detail);
          if (cut.bytes >= 0) {
            e.value_truncated = true;
            e.value_bytes = cut.bytes;
          } else {
            e.value_truncated = true;
          }
          entries.push(e);
          this.#count('too_large', 1);
          continue;
        }
        entries.push(this.#entry(batch, x.msg, x.elem, x.reason, x.detail, x.raw));
        if (x.counts === undefined) this.#count(x.reason, 1);
        else for (const [reason, n] of Object.entries(x.counts) as Array<[RejectReason, number]>) this.#count(reason, n);
      }
      await this.#o.deadLetter.write(entries);
    }
    const store = state.store;
    const watermarkBefore = store.watermark;
    const positions = batch.startPosition !== undefined && batch.endPosition !== undefined
      ? { start: batch.startPosition, end: batch.endPosition }
      : undefined;
    const applied = store.apply(r, positions);
    if (batch.lastTimestampMs !== undefined) state.lastAppliedTimestampMs = batch.lastTimestampMs;
    this.totals.ok += applied.accepted;
    metrics.records.inc({ result: 'ok' }, applied.accepted);
    if (applied.late.length > 0 || applied.overLimit.length > 0) {
      await this.#deadLetterCells(state, batch, applied.late, applied.overLimit, watermarkBefore, nowMs);
    }
    this.#setWatermarkGauge(batch.partition, state);
    await this.#emit(batch.partition, store.takeClosed(), state);
    this.#updateGauges();
  }

  /**
   * A batch that crashed its worker (or ran it out of memory) twice: decoded again in halves, and each
   * half that fails again in halves, until the poison messages stand alone. Only those are
   * dead-lettered (poisoned_batch); every other record is applied, in the batch's order. At most
   * 2 x log2(messages) runs per poison message.
   */
  async #bisect(state: PartitionState, batch: Batch, nowMs: number): Promise<void> {
    const n = messageCount(batch);
    const mid = Math.floor(n / 2);
    this.#o.logger.warn({ partition: batch.partition, seq: batch.seq, messages: n }, 'batch poisoned a worker: decoding it again in halves to isolate the poison');
    for (const [lo, hi] of [[0, mid], [mid, n]] as const) {
      const part = subBatch(batch, lo, hi);
      if (this.#fatal !== null || state.dropped) return;
      await this.#o.pool.acquire();
      const outcome = await this.#o.pool.run(part, nowMs);
      await this.#apply(state, part, outcome.kind === 'poisoned' ? { kind: 'poisoned', reason: `isolated by bisection; ${outcome.reason}` } : outcome, nowMs);
    }
  }

  /**
   * Late and over-limit records are rare: rather than ship a record index for every record back from
   * the worker, the main thread re-reads just this batch to find them.
   */
  async #deadLetterCells(
    state: PartitionState,
    batch: Batch,
    late: ReadonlyArray<{ key: string; windowStart: number; count: number }>,
    overLimit: ReadonlyArray<{ key: string; windowStart: number; count: number }>,
    watermark: number,
    nowMs: number,
  ): Promise<void> {
    const reasons = new Map<string, RejectReason>();
    for (const c of late) reasons.set(`${c.windowStart}|${c.key}`, 'late');
    for (const c of overLimit) reasons.set(`${c.windowStart}|${c.key}`, 'series_limit');
    const entries: DeadLetterEntry[] = [];
    let expectedFound = 0;
    const decoder = this.#o.decoder;
    const wm = Number.isFinite(watermark) ? new Date(watermark).toISOString() : 'none';
    decoder.forEachRecord(
      batch.data,
      batch.offsets,
      nowMs,
      (rec, msg, elem, raw, key) => {
        const ws = windowStart(rec.tsMs, this.#windowMs);
        const reason = reasons.get(`${ws}|${key}`);
        if (reason === undefined) return;
        expectedFound++;
        if (this.#isReplay(state, batch, msg)) return;
        const detail = reason === 'late'
          ? `window ${new Date(ws).toISOString()} closed: watermark ${wm} (ALLOWED_LATENESS_SECONDS=${this.#o.allowedLatenessSeconds})`
          : `series limit reached: MAX_SERIES=${this.#o.maxSeries} open series`;
        entries.push(this.#entry(batch, msg, elem, reason, detail, elem >= 0 ? safeStringify(raw) : undefined));
      },
      () => {},
    );
    let expected = 0;
    for (const c of late) expected += c.count;
    for (const c of overLimit) expected += c.count;
    if (expectedFound !== expected) {
      // Cannot happen unless decoding is not deterministic; say so loudly rather than miscount.
      this.#o.logger.error({ expected, found: expectedFound }, 're-decode of late/over-limit records disagrees with the worker');
    }
    for (const e of entries) this.#count(e.reason, 1);
    await this.#o.deadLetter.write(entries);
  }

  /** A message already processed before a restart: skipped and counted, never dead-lettered twice. */
  #isReplay(state: PartitionState, batch: Batch, msg: number): boolean {
    const pos = batch.positions?.[msg];
    if (pos === undefined || Number(pos) >= state.replayBefore) return false;
    this.totals.replayed++;
    this.#o.metrics.replayed.inc();
    return true;
  }

  #count(reason: RejectReason, n: number): void {
    this.#o.metrics.records.inc({ result: reason }, n);
    this.totals.rejected[reason] = (this.totals.rejected[reason] ?? 0) + n;
  }

  #entry(batch: Batch, msg: number, elem: number, reason: RejectReason, detail: string, raw?: string): DeadLetterEntry {
    let value: string;
    let encoding: 'utf8' | 'base64' = 'utf8';
    let cutFrom: number | undefined;
    if (raw !== undefined) {
      value = raw;
    } else {
      let bytes = messageBytes(batch, msg);
      // A message over MAX_MESSAGE_BYTES keeps only its first MAX_MESSAGE_BYTES in the dead letter.
      const max = this.#o.decoder.settings.maxMessageBytes;
      if (reason === 'too_large' && bytes.length > max) {
        cutFrom = bytes.length;
        bytes = bytes.subarray(0, max);
      }
      if (reason === 'invalid_utf8') {
        value = bytes.toString('base64');
        encoding = 'base64';
      } else {
        value = bytes.toString('utf8');
      }
    }
    const e: DeadLetterEntry = {
      time: new Date().toISOString(),
      reason,
      detail,
      source: this.#o.sourceName,
      partition: batch.partition,
      batch_seq: batch.seq,
      message_index: msg,
      element: elem,
      value,
      value_encoding: encoding,
    };
    if (cutFrom !== undefined) {
      e.value_truncated = true;
      e.value_bytes = cutFrom;
    }
    const pos = batch.positions?.[msg];
    if (pos !== undefined) e.offset = pos;
    const key = batch.keys?.[msg];
    if (key !== undefined && key !== null) e.key = key.toString('base64');
    const id = this.#o.rowIdentity?.(batch.partition);
    if (id !== undefined) {
      e.topic = id.topic;
      e.kafka_partition = id.partition;
    }
    return e;
  }

  /**
   * Hands closed windows to the sink. With a partitioned source, the partition's commit point after
   * this emission goes along, so a sink that stores positions writes both in one transaction; the
   * point becomes the partition's safe point only once the write (and every earlier one) settled.
   * A pipelined sink gets the next emission while this one is in flight (bounded per partition).
   */
  async #emit(partition: number, cells: readonly ClosedCell[], state?: PartitionState): Promise<void> {
    const point = state === undefined ? null : this.#point(state);
    if (cells.length === 0) {
      if (state !== undefined && point !== null) {
        if (state.writesInFlight === 0) state.safe = point;
        else state.writes = state.writes.then(() => this.#advanceSafe(state, point));
      }
      return;
    }
    const ident = this.#o.rowIdentity?.(partition);
    const batch = this.#rows.format(cells, ident);
    const { metrics, sink } = this.#o;
    const end = metrics.sinkWriteSeconds.startTimer({ output: 'statistics' });
    const written = sink.write(batch, ident !== undefined && point !== null ? { ...ident, point } : undefined);
    const settle = async (): Promise<void> => {
      const result = await written;
      end();
      await this.#deadLetterRows(partition, batch.rows, result.rejected, ident);
      metrics.windowsEmitted.inc(cells.length - result.rejected.length);
      this.totals.rows += cells.length - result.rejected.length;
      if (state !== undefined && point !== null) this.#advanceSafe(state, point);
    };
    if (sink.pipelined !== true || state === undefined) {
      await settle();
      return;
    }
    const prev = state.writes;
    state.writesInFlight++;
    metrics.sinkWritesInFlight.inc();
    // Settled in call order, so safe points only move forward; a failed write stops the engine.
    state.writes = prev.then(settle).catch((err: unknown) => this.#fail(err)).finally(() => {
      state.writesInFlight--;
      metrics.sinkWritesInFlight.dec();
    });
    if (state.writesInFlight >= (this.#o.maxWritesInFlight ?? 16)) await state.writes;
    if (this.#fatal !== null) throw this.#fatal;
  }

  #advanceSafe(state: PartitionState, point: CommitPoint): void {
    if (this.#fatal === null) state.safe = point;
  }

  /**
   * Rows a sink refused for a reason of the row: each becomes a dead letter (its JSON, cut at
   * MAX_ROW_DEAD_LETTER_BYTES), and its records move from ok to sink_rejected, so that ok + rejected
   * still equals the input.
   */
  async #deadLetterRows(
    partition: number,
    rows: RowBatch['rows'],
    rejected: readonly RowRejection[],
    ident: { topic: string; partition: number } | undefined,
  ): Promise<void> {
    if (rejected.length === 0) return;
    const entries: DeadLetterEntry[] = [];
    let records = 0;
    for (const r of rejected) {
      const row = rows[r.index];
      if (row === undefined) continue;
      records += row.count;
      const json = JSON.stringify(row);
      const e: DeadLetterEntry = {
        time: new Date().toISOString(),
        reason: 'sink_rejected',
        detail: `${this.#o.sink.describe}: ${r.detail}`,
        source: this.#o.sourceName,
        partition,
        batch_seq: -1,
        message_index: -1,
        element: -1,
        value: json,
        value_encoding: 'utf8',
      };
      const bytes = Buffer.byteLength(json);
      if (bytes > MAX_ROW_DEAD_LETTER_BYTES) {
        e.value = Buffer.from(json).subarray(0, MAX_ROW_DEAD_LETTER_BYTES).toString('utf8');
        e.value_truncated = true;
        e.value_bytes = bytes;
      }
      if (ident !== undefined) {
        e.topic = ident.topic;
        e.kafka_partition = ident.partition;
      }
      entries.push(e);
    }
    this.#o.metrics.sinkRejectedRows.inc(entries.length);
    this.#o.logger.warn({ rows: entries.length, records, first: entries[0]?.detail }, 'sink refused rows; dead-lettered as sink_rejected');
    this.totals.ok -= records;
    this.#count('sink_rejected', records);
    await this.#o.deadLetter.write(entries);
  }

  #updateGauges(): void {
    let series = 0;
    let windows = 0;
    for (const s of this.#partitions.values()) {
      series += s.store.openSeries;
      windows += s.store.openWindows;
    }
    this.#o.metrics.openSeries.set(series);
    this.#o.metrics.openWindows.set(windows);
  }
}

/** Messages lo..hi of a batch as a batch of their own (same partition and seq; positions follow). */
function subBatch(b: Batch, lo: number, hi: number): Batch {
  const base = b.offsets[lo]!;
  const offsets = new Uint32Array(hi - lo + 1);
  for (let i = lo; i <= hi; i++) offsets[i - lo] = b.offsets[i]! - base;
  const part: Batch = {
    partition: b.partition,
    seq: b.seq,
    data: b.data.subarray(base, b.offsets[hi]!),
    offsets,
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
