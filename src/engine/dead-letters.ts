// Building dead letters: what a rejected record, a poisoned batch, a late or over-limit record, or a
// row the sink refused becomes in the dead-letter output. Pure: the engine counts and writes them.
import { keyOf, messageBytes, messageCount, type Batch } from '../core/batch.js';
import type { Decoder } from '../core/decode.js';
import { CELL, type DecodeResult, type RejectReason } from '../core/messages.js';
import { safeStringify } from '../core/record.js';
import { windowStart } from '../core/window.js';
import type { LaneIdentity } from '../commit/types.js';
import type { DeadLetterEntry, RowRejection } from '../sinks/types.js';
import type { StatsRow } from '../windows/row.js';

/** Dead letters of refused rows keep at most this much of the row's JSON (value_truncated says so). */
export const MAX_ROW_DEAD_LETTER_BYTES = 64 * 1024;

export interface DeadLetterSettings {
  readonly sourceName: string;
  readonly decoder: Decoder;
  readonly windowMs: number;
  readonly allowedLatenessSeconds: number;
  readonly maxSeries: number;
  readonly maxStateMb?: number;
  /** LATE_RECORDS=amend: the horizon a late record's detail names. */
  readonly amendHorizonSeconds?: number;
}

/** Cells the window store refused, with how many records each held. */
type RefusedCells = ReadonlyArray<{ key: string; windowStart: number; count: number; limit?: 'count' | 'bytes'; beyond?: 'horizon' | 'state' }>;

/** Where the entries of one batch come from: the batch, its lane, and which messages are replays. */
export interface BatchOrigin {
  readonly batch: Batch;
  readonly identity: LaneIdentity | undefined;
  /** True for a message processed before the restart (its reject was dead-lettered then): skipped. */
  readonly replay: (msg: number) => boolean;
}

export class DeadLetterBuilder {
  readonly #s: DeadLetterSettings;

  constructor(settings: DeadLetterSettings) {
    this.#s = settings;
  }

  /** Every message of a batch that poisoned a worker (after bisection, one message alone). */
  poisoned(o: BatchOrigin, reason: string): DeadLetterEntry[] {
    const entries: DeadLetterEntry[] = [];
    for (let i = 0; i < messageCount(o.batch); i++) entries.push(this.message(o, i, -1, 'poisoned_batch', reason));
    return entries;
  }

  /** The worker's rejects, each with its reason; `count` is told how many records each stands for. */
  rejects(o: BatchOrigin, rejects: DecodeResult['rejects'], count: (reason: RejectReason, n: number) => void): DeadLetterEntry[] {
    const entries: DeadLetterEntry[] = [];
    for (const x of rejects) {
      if (o.replay(x.msg)) continue;
      const cut = x.elem < 0 ? o.batch.oversized?.get(x.msg) : undefined;
      if (cut !== undefined) {
        // Cut or refused at the source: too_large, with what the source knows of the original.
        const detail = cut.detail ?? `message: ${cut.bytes} bytes, more than MAX_MESSAGE_BYTES=${this.#s.decoder.settings.maxMessageBytes}`;
        const e = this.message(o, x.msg, -1, 'too_large', detail);
        e.value_truncated = true;
        if (cut.bytes >= 0) e.value_bytes = cut.bytes;
        entries.push(e);
        count('too_large', 1);
        continue;
      }
      entries.push(this.message(o, x.msg, x.elem, x.reason, x.detail, x.raw));
      if (x.counts === undefined) count(x.reason, 1);
      else for (const [reason, n] of Object.entries(x.counts) as Array<[RejectReason, number]>) count(reason, n);
    }
    return entries;
  }

  /**
   * Late and over-limit records are rare: rather than ship a record index for every record back from
   * the worker, the main thread re-reads the messages that hold them: those of the refused cells
   * (the decode result's messageCells), else the whole batch. With 1 % of records late nearly every
   * batch has one, and re-reading whole batches doubled the job's CPU. `found`
   * counts every record matched (replays included), to compare with what the store refused.
   */
  refusedRecords(o: BatchOrigin, decoded: Pick<DecodeResult, 'series' | 'cells' | 'messageCells'>, late: RefusedCells, overLimit: RefusedCells, watermark: number, nowMs: number): { entries: DeadLetterEntry[]; found: number; beyondHorizon: number } {
    const reasons = new Map<string, RejectReason>();
    // LATE_RECORDS=amend: late records that could not amend their window, and why.
    const beyond = new Map<string, 'horizon' | 'state'>();
    for (const c of late) {
      reasons.set(`${c.windowStart}|${c.key}`, 'late');
      if (c.beyond !== undefined) beyond.set(`${c.windowStart}|${c.key}`, c.beyond);
    }
    const byBytes = new Set<string>();
    for (const c of overLimit) {
      reasons.set(`${c.windowStart}|${c.key}`, 'series_limit');
      if (c.limit === 'bytes') byBytes.add(`${c.windowStart}|${c.key}`);
    }
    const entries: DeadLetterEntry[] = [];
    let found = 0;
    let beyondHorizon = 0;
    const wm = Number.isFinite(watermark) ? new Date(watermark).toISOString() : 'none';
    for (const [first, last] of messageRanges(decoded, [...late, ...overLimit], messageCount(o.batch))) {
      this.#s.decoder.forEachRecord(
        o.batch.data,
        o.batch.offsets.subarray(first, last + 2),
        nowMs,
        (rec, at, elem, raw, key) => {
          const msg = first + at;
          const ws = windowStart(rec.tsMs, this.#s.windowMs);
          const reason = reasons.get(`${ws}|${key}`);
          if (reason === undefined) return;
          found++;
          if (o.replay(msg)) return;
          const why = reason === 'late' ? beyond.get(`${ws}|${key}`) : undefined;
          if (why === 'horizon') beyondHorizon++;
          const detail = reason === 'late'
            ? `window ${new Date(ws).toISOString()} closed: watermark ${wm} (ALLOWED_LATENESS_SECONDS=${this.#s.allowedLatenessSeconds})${lateWhy(why, this.#s)}`
            : byBytes.has(`${ws}|${key}`)
              ? `state limit reached: MAX_STATE_MB=${this.#s.maxStateMb} (estimated bytes of the open series' keys, row parts and percentile sketches)`
              : `series limit reached: MAX_SERIES=${this.#s.maxSeries} open series`;
          entries.push(this.message(o, msg, elem, reason, detail, elem >= 0 ? safeStringify(raw) : undefined));
        },
        () => {},
        o.batch.ends?.subarray(first, last + 1),
      );
    }
    return { entries, found, beyondHorizon };
  }

  /** Rows a sink refused for a reason of the row: each with its JSON, cut at MAX_ROW_DEAD_LETTER_BYTES. */
  rows(lane: number, identity: LaneIdentity | undefined, rows: readonly StatsRow[], rejected: readonly RowRejection[], sinkName: string): { entries: DeadLetterEntry[]; records: number } {
    const entries: DeadLetterEntry[] = [];
    let records = 0;
    for (const r of rejected) {
      const row = rows[r.index];
      if (row === undefined) continue;
      records += row.count;
      const json = JSON.stringify(row);
      const e = this.#base(lane, 'sink_rejected', `${sinkName}: ${r.detail}`, json, 'utf8');
      const bytes = Buffer.byteLength(json);
      if (bytes > MAX_ROW_DEAD_LETTER_BYTES) {
        e.value = Buffer.from(json).subarray(0, MAX_ROW_DEAD_LETTER_BYTES).toString('utf8');
        e.value_truncated = true;
        e.value_bytes = bytes;
      }
      entries.push(stamp(e, identity));
    }
    return { entries, records };
  }

  /** One message (or one record of a JSON-array message: `elem` >= 0, `raw` its JSON). */
  message(o: BatchOrigin, msg: number, elem: number, reason: RejectReason, detail: string, raw?: string): DeadLetterEntry {
    const { batch } = o;
    let value: string;
    let encoding: 'utf8' | 'base64' = 'utf8';
    let cutFrom: number | undefined;
    if (raw !== undefined) {
      value = raw;
    } else {
      let bytes = messageBytes(batch, msg);
      // A message over MAX_MESSAGE_BYTES keeps only its first MAX_MESSAGE_BYTES in the dead letter.
      const max = this.#s.decoder.settings.maxMessageBytes;
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
    const e = this.#base(batch.lane, reason, detail, value, encoding);
    e.batch_seq = batch.seq;
    e.message_index = msg;
    e.element = elem;
    if (cutFrom !== undefined) {
      e.value_truncated = true;
      e.value_bytes = cutFrom;
    }
    const pos = batch.positions?.[msg];
    if (pos !== undefined) e.offset = String(pos);
    const key = keyOf(batch.keys, msg);
    if (key !== undefined && key !== null) e.key = key.toString('base64');
    return stamp(e, o.identity);
  }

  #base(lane: number, reason: RejectReason, detail: string, value: string, encoding: 'utf8' | 'base64'): DeadLetterEntry {
    return {
      time: new Date().toISOString(),
      reason,
      detail,
      source: this.#s.sourceName,
      partition: lane,
      batch_seq: -1,
      message_index: -1,
      element: -1,
      value,
      value_encoding: encoding,
    };
  }
}

/** Why a late record could not amend its window (LATE_RECORDS=amend); nothing otherwise. */
function lateWhy(why: 'horizon' | 'state' | undefined, s: DeadLetterSettings): string {
  if (why === 'horizon') return `, more than AMEND_HORIZON_SECONDS=${s.amendHorizonSeconds} before; too late to amend`;
  if (why === 'state') return `; its state for amendment is not kept (evicted to stay within MAX_STATE_MB=${s.maxStateMb ?? 'unset'}, or from before a restart)`;
  return '';
}

/** The lane's topic and partition, last (the entry's fields keep the order the output always had). */
function stamp(e: DeadLetterEntry, identity: LaneIdentity | undefined): DeadLetterEntry {
  if (identity !== undefined) {
    e.topic = identity.topic;
    e.kafka_partition = identity.partition;
  }
  return e;
}

/**
 * The runs of messages [first, last] that hold the records of the `wanted` cells, in order, with
 * every message of several cells; the whole batch when the result has no messageCells.
 */
export function messageRanges(decoded: Pick<DecodeResult, 'series' | 'cells' | 'messageCells'>, wanted: ReadonlyArray<{ readonly key: string; readonly windowStart: number }>, messages: number): Array<[number, number]> {
  const of = decoded.messageCells;
  if (of === undefined) return messages === 0 ? [] : [[0, messages - 1]];
  // Looked up by the result's own series strings, whose hashes V8 keeps: a `start|key` string per
  // cell was most of this function's time.
  const windows = new Map<string, Set<number>>();
  for (const c of wanted) {
    const w = windows.get(c.key);
    if (w === undefined) windows.set(c.key, new Set([c.windowStart]));
    else w.add(c.windowStart);
  }
  const cells = decoded.cells;
  const refused = new Uint8Array(cells.length / CELL.STRIDE);
  for (let c = 0, o = 0; o < cells.length; c++, o += CELL.STRIDE) {
    if (windows.get(decoded.series[cells[o + CELL.SERIES]!]!)?.has(cells[o + CELL.WINDOW_START]!) === true) refused[c] = 1;
  }
  const ranges: Array<[number, number]> = [];
  for (let m = 0; m < of.length; m++) {
    const c = of[m]!;
    if (c === -1 || (c >= 0 && refused[c] === 0)) continue;
    const prev = ranges[ranges.length - 1];
    if (prev !== undefined && prev[1] === m - 1) prev[1] = m;
    else ranges.push([m, m]);
  }
  return ranges;
}
