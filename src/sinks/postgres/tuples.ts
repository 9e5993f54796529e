// COPY tuples made where the rows are formatted (LANE_STATE=worker: the lane's owner worker), so that
// the main thread stores a chunk of rows without a row object, a series lookup by object or an
// encoded value of its own: it reads each tuple's series id and window start from fixed offsets,
// keeps its per-series state (stored, rolled up) by id, and sends the bytes. What the sink decides
// per row before sending (the checks of prepareGroup: a series or topic PostgreSQL cannot store, a
// value binary COPY cannot carry, a second row of one identity in a write) is decided here, with
// the same details. Pure (rows in, bytes out): the owner worker imports it, and so does the sink.
import { groupbyObject, parseSeriesKey } from '../../core/series.js';
import { stddevOf } from '../../core/stats.js';
import type { CopyTuples } from '../../core/messages.js';
import { CLOSED_BY, STAT, type ClosedCells } from '../../windows/cells.js';
import { RowFormatter } from '../../windows/row.js';
import { BinaryCopyWriter, isoMs, PG_EPOCH_MS, sketchBinOf } from './encode.js';
import { groupbyKey, newRef, textProblem } from './identity.js';

/** What the worker keeps of a series: its id and the bytes of its name, groupby and unit. */
interface TupleSeries {
  readonly id: string;
  readonly unit: string | null;
  readonly meta: Buffer;
  readonly problem: string | null;
}

/** Offsets in a tuple (binary COPY, COPY_COLUMNS order): the fields before the topic are of fixed size. */
const SERIES_AT = 6;
const START_AT = 26;

/** Makes a worker's chunks of closed cells into COPY tuples; one per owner, its series cache bounded. */
export class CopyTupleWriter {
  readonly #series = new Map<string, TupleSeries>();
  /** The row formatter's text of an event time outside 0000..9999 (made only for such a time). */
  #text: RowFormatter | null = null;

  constructor(
    private readonly windowMs: number,
    /** Series kept at most (MAX_SERIES), as the row formatter keeps its prefixes. */
    private readonly maxEntries: number,
  ) {}

  #of(key: string): TupleSeries {
    let s = this.#series.get(key);
    if (s === undefined) {
      if (this.#series.size >= this.maxEntries) this.#series.clear();
      const ident = parseSeriesKey(key);
      const ref = newRef(ident.name, groupbyObject(ident), ident.unit);
      const unit = ident.unit === null ? Buffer.from([0]) : Buffer.concat([Buffer.from([1]), Buffer.from(ident.unit, 'utf8')]);
      const meta = Buffer.concat([Buffer.from(ident.name, 'utf8'), Buffer.from([0]), Buffer.from(ref.groupbyJson, 'utf8'), Buffer.from([0]), unit]);
      s = { id: ref.id, unit: ident.unit, meta, problem: ref.problem };
      this.#series.set(key, s);
    }
    return s;
  }

  /** The cells' rows as tuples. */
  tuples(c: ClosedCells, where: { readonly topic: string; readonly partition: number } | undefined): CopyTuples {
    const n = c.length;
    const topic = where?.topic ?? '';
    const partition = where?.partition ?? -1;
    const period = this.windowMs / 1000;
    const q = c.quality;
    const s = c.stats;
    const refused: Array<{ index: number; detail: string }> = [];
    // What every row of the chunk shares: the topic, and binaryProblem's last checks (period, partition).
    const topicProblem = textProblem('topic', topic);
    const lastProblem = (!Number.isInteger(period) || period < 1 || period > 2 ** 31 - 1 ? `period ${period} is not a whole number of seconds (1 .. 2^31-1)` : null)
      ?? (!Number.isInteger(partition) || partition < -1 || partition > 2 ** 31 - 1 ? `partition ${partition} is not a partition number` : null);
    const series = new Array<TupleSeries>(n);
    const sent: number[] = [];
    for (let i = 0; i < n; i++) {
      const ser = this.#of(c.keys[i]!);
      const problem = ser.problem ?? topicProblem ?? this.#cellProblem(c, i) ?? lastProblem;
      if (problem !== null) {
        refused.push({ index: i, detail: `postgres: not sent: ${problem}` });
        continue;
      }
      series[i] = ser;
      sent.push(i);
    }
    // In primary key order (series, then window start): the index takes the rows page after page.
    // Equal neighbours are one identity as stored: the first row keeps it, as prepareGroup decides.
    sent.sort((a, b) => {
      const x = series[a]!.id;
      const y = series[b]!.id;
      return x < y ? -1 : x > y ? 1 : c.starts[a]! - c.starts[b]! || a - b;
    });
    const order: number[] = [];
    for (let k = 0; k < sent.length; k++) {
      const i = sent[k]!;
      const first = order.length === 0 ? -1 : order[order.length - 1]!;
      if (first >= 0 && series[first]!.id === series[i]!.id && c.starts[first] === c.starts[i]) {
        refused.push({
          index: i,
          detail: `postgres 21000: not sent: the same identity as row ${first} of this batch (name, unit, groupby, topic, partition, period_start; as stored, where a lone surrogate reads U+FFFD)`,
        });
        continue;
      }
      order.push(i);
    }
    refused.sort((a, b) => a.index - b.index);
    const w = new BinaryCopyWriter(order.length * 200, false);
    const ends = new Int32Array(order.length);
    const rows = new Int32Array(order.length);
    const metaEnds = new Int32Array(order.length);
    let metaBytes = 0;
    for (const i of order) metaBytes += series[i]!.meta.length;
    const meta = Buffer.allocUnsafe(metaBytes);
    let m = 0;
    let amends = false;
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!;
      const ser = series[i]!;
      const o = i * STAT.STRIDE;
      const count = s[o + STAT.COUNT]!;
      // m2 as the sink stores it from a row (m2Of: the row's stddev squared times its count).
      const stddev = stddevOf(count, s[o + STAT.M2]!);
      w.row(q === null ? 15 : 18);
      w.uuid(ser.id);
      w.timestamp(c.starts[i]!);
      w.timestamp(this.#eventMs(s[o + STAT.TS_MIN]!).ms);
      w.timestamp(this.#eventMs(s[o + STAT.TS_MAX]!).ms);
      w.int8(count);
      w.float8(s[o + STAT.SUM]!);
      w.float8(s[o + STAT.MIN]!);
      w.float8(s[o + STAT.MAX]!);
      w.float8(stddev * stddev * count);
      w.int4(partition);
      w.int4(period);
      w.text(topic);
      w.text(ser.unit);
      // PERCENTILES: the sketch as the row object carries it (toJSON), as JSON and as sketch_bin.
      const sketch = c.sketches?.[i]?.toJSON();
      w.text(sketch === undefined ? null : JSON.stringify(sketch), true);
      w.bytes(sketchBinOf(sketch));
      if (q !== null) {
        const revision = q.revision[i]!;
        if (revision > 0) amends = true;
        w.int8(revision);
        w.text(CLOSED_BY[q.closedBy[i]!]!);
        w.int8(q.lateRecords[i]!);
      }
      ends[k] = w.length;
      rows[k] = i;
      m += ser.meta.copy(meta, m);
      metaEnds[k] = m;
    }
    return { data: w.take(), ends, rows, meta, metaEnds, refused, quality: q !== null, amends };
  }

  /**
   * An event time as a row object carries it (RowFormatter.isoMs, whole ms) and as the sink reads it
   * back (isoMs): the time itself from 0000 to 9999, else what the formatter's text of it parses to
   * (NaN for the text it writes there), with that text for the refusal's detail.
   */
  #eventMs(t: number): { ms: number; text: string | null } {
    const ms = Math.floor(t);
    if (ms >= 0 && ms <= ISO_FIXED_MAX_MS) return { ms, text: null };
    this.#text ??= new RowFormatter(this.windowMs, 1);
    const text = this.#text.isoMs(t);
    return { ms: isoMs(text), text };
  }

  /** binaryProblem's checks of what differs from row to row, on the cell's numbers. */
  #cellProblem(c: ClosedCells, i: number): string | null {
    const o = i * STAT.STRIDE;
    const s = c.stats;
    // A time of the years 1970 to 9999 is written and read back as it is (toISOString, #eventMs):
    // only a time outside them is formatted and parsed to be checked, which for every row made a Date,
    // its text and a parse of it (a fifth of an owner's work on Kafka -> PostgreSQL).
    const ws = c.starts[i]!;
    if (!isFixedIso(ws) && !Number.isFinite(isoMs(new Date(ws).toISOString()))) return `period_start ${JSON.stringify(new Date(ws).toISOString().slice(0, 40))} is not an ISO 8601 timestamp`;
    const problem = this.#eventProblem('duration_start', s[o + STAT.TS_MIN]!) ?? this.#eventProblem('duration_end', s[o + STAT.TS_MAX]!);
    if (problem !== null) return problem;
    const count = s[o + STAT.COUNT]!;
    if (!Number.isSafeInteger(count) || count < 0) return `count ${count} is not a whole number of points`;
    const q = c.quality;
    if (q !== null) {
      const r = q.revision[i]!;
      if (!Number.isSafeInteger(r) || r < 0) return `revision ${r} is not a whole number`;
    }
    return null;
  }

  /** Why the event time t cannot be stored as `what`, or null. */
  #eventProblem(what: string, t: number): string | null {
    if (isFixedIso(t)) return null;
    const { ms, text } = this.#eventMs(t);
    return Number.isFinite(ms) ? null : `${what} ${JSON.stringify(String(text).slice(0, 40))} is not an ISO 8601 timestamp`;
  }
}

/** Whether t (ms) lies in 1970-9999, where its ISO text reads back as t without being made. */
function isFixedIso(t: number): boolean {
  return t >= 0 && t <= ISO_FIXED_MAX_MS;
}

/** Last ms of year 9999: up to here the row formatter writes an event time as toISOString() does. */
const ISO_FIXED_MAX_MS = 253402300799999;

/** Tuple `at`'s series id as a 16-character key (its bytes as latin1: half the string of the hex, no encoding). */
export function tupleSeriesKey(data: Buffer, at: number): string {
  return data.toString('latin1', at + SERIES_AT, at + SERIES_AT + 16);
}

/** Tuple `at`'s series id as 32 hex digits (what SeriesRef.id holds). */
export function tupleSeriesId(data: Buffer, at: number): string {
  return data.toString('hex', at + SERIES_AT, at + SERIES_AT + 16);
}

/** Tuple `at`'s window start in ms (timestamptz: microseconds since 2000-01-01). */
export function tupleStartMs(data: Buffer, at: number): number {
  const hi = data.readInt32BE(at + START_AT);
  const lo = data.readUInt32BE(at + START_AT + 4);
  // Exact below 2^53 microseconds (about 285 years from 2000); past that through BigInt.
  // (Window starts are whole ms, so the division is exact.)
  if (hi > -(2 ** 20) && hi < 2 ** 20) return (hi * 2 ** 32 + lo) / 1000 + PG_EPOCH_MS;
  return Number(data.readBigInt64BE(at + START_AT) / 1000n) + PG_EPOCH_MS;
}

/** A tuple's series as its meta bytes hold it: name, groupby JSON, unit. */
export function tupleSeriesMeta(meta: Buffer, from: number, to: number): { name: string; groupbyJson: string; unit: string | null } {
  const a = meta.indexOf(0, from);
  const b = meta.indexOf(0, a + 1);
  return {
    name: meta.toString('utf8', from, a),
    groupbyJson: meta.toString('utf8', a + 1, b),
    unit: meta[b + 1] === 0 ? null : meta.toString('utf8', b + 2, to),
  };
}

/**
 * A tuple's fields as the unnest upsert takes them (write.ts upsertUnnestValues): what bisection
 * sends of a slice, exactly the values its COPY would have carried.
 */
export function tupleValues(data: Buffer, from: number): unknown[] {
  const fields = data.readInt16BE(from);
  let at = from + 2;
  const out: unknown[] = [];
  for (let f = 0; f < fields; f++) {
    const len = data.readInt32BE(at);
    at += 4;
    if (len < 0) {
      out.push(null);
      continue;
    }
    out.push(fieldValue(f, data, at, len));
    at += len;
  }
  return out;
}

/** COPY_COLUMNS' (and QUALITY_COLUMNS') types in order, as tupleValues reads them. */
const FIELD_TYPES = ['uuid', 'ts', 'ts', 'ts', 'int8', 'float8', 'float8', 'float8', 'float8', 'int4', 'int4', 'text', 'text', 'jsonb', 'bytea', 'int8', 'text', 'int8'] as const;

function fieldValue(f: number, data: Buffer, at: number, len: number): unknown {
  switch (FIELD_TYPES[f]) {
    case 'uuid':
      return data.toString('hex', at, at + 16);
    case 'ts':
      return new Date(Number(data.readBigInt64BE(at) / 1000n) + PG_EPOCH_MS).toISOString();
    case 'int8':
      return Number(data.readBigInt64BE(at));
    case 'int4':
      return data.readInt32BE(at);
    case 'float8':
      return data.readDoubleBE(at);
    case 'jsonb':
      return data.toString('utf8', at + 1, at + len);
    case 'bytea':
      return data.subarray(at, at + len);
    default:
      return data.toString('utf8', at, at + len);
  }
}
