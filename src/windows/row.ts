// A closed window as a statistics row, with the field names of the OpenStack Ceilometer v2
// Statistics result (plus name and stddev, and the identity a sink can upsert by).
import type { Sketch, SketchData } from '../core/sketch.js';
import { groupbyObject, isJsonKey, parseSeriesKey } from '../core/series.js';
import { CLOSED_BY, ClosedCells, STAT, type CellList, type ClosedBy } from './cells.js';
import { stddevOf } from '../core/stats.js';
import { qualityText, rowsBytes, type ByteScratch } from './row-bytes.js';
import type { CopyTuples, RowRecords } from '../core/messages.js';

export interface StatsRow {
  name: string;
  unit: string | null;
  groupby: Record<string, string | null>;
  count: number;
  sum: number;
  min: number;
  max: number;
  avg: number;
  stddev: number;
  duration_start: string;
  duration_end: string;
  duration: number;
  period: number;
  period_start: string;
  period_end: string;
  /** Identity for upserts when the source is partitioned (Kafka). */
  topic?: string;
  partition?: number;
  /**
   * LATE_RECORDS=amend: the row's revision (0 for the first emission; a reader keeps the highest per
   * identity), how its window was closed, and the late records merged into it.
   */
  revision?: number;
  closed_by?: ClosedBy;
  late_records?: number;
  /** PERCENTILES: the requested quantiles ("p95": value) and the mergeable sketch they come from. */
  percentiles?: Record<string, number>;
  sketch?: SketchData;
}

/** Rows of one emission, plus their NDJSON text built without re-serialising each row's identity. */
export interface RowBatch {
  readonly rows: readonly StatsRow[];
  ndjson(): string;
  /**
   * The same NDJSON as UTF-8 bytes, written into one buffer from the per-series prefixes: what a file
   * or stdout sink writes, without a string to build and encode again (about half the CPU per row).
   */
  ndjsonBytes?(into?: ByteScratch): Buffer;
  /** Each row's JSON (as JSON.stringify writes it) and identity key, from per-series cached parts. */
  json?(i: number): string;
  identityKey?(i: number): string;
  /**
   * identityKey(i) as UTF-8 written into out at `at`, from the cached parts (no string built): the
   * end, or -1 when out has not room (3 bytes a character; nothing written then).
   */
  identityKeyInto?(i: number, out: Buffer, at: number): number;
  /** lineEnds()[i]: offset of row i's newline in ndjsonBytes() (when the batch knows them). */
  lineEnds?(): Int32Array;
  /** Every identity key as UTF-8, back to back: key i ends at ends[i] (null when not made). */
  identityKeyBytes?(): { readonly bytes: Buffer; readonly ends: Int32Array } | null;
  /** The rows as Kafka records, when the worker that formatted them wrote them so (null: none). */
  rowRecords?(): RowRecords | null;
  /** The rows as PostgreSQL COPY tuples, when the worker that formatted them made those (null: none). */
  copyTuples?(): CopyTuples | null;
  /** The lane's topic and partition the rows carry (undefined: an unpartitioned source), without making rows. */
  readonly where?: { readonly topic: string; readonly partition: number } | undefined;
}

/** A series' parsed identity, for sinks that read row objects or identity keys (PostgreSQL, Kafka). */
interface SeriesIdentityOut {
  readonly name: string;
  readonly unit: string | null;
  /** One object per series while cached: the PostgreSQL sink keys its per-series work by it. */
  readonly groupby: Record<string, string | null>;
  /**
   * `"name",[["dim","value"],…]` of the identity key (groupby pairs sorted by name): made on the first
   * identityKey() of the series (only the Kafka sink asks), then kept.
   */
  identityMiddle: string | null;
}

/**
 * Builds rows. Emitting is the main thread's biggest cost after merging (one row per series per
 * window), so a series' identity is serialised once and cached (bounded by maxEntries), and a row is
 * its cached prefix plus a tail of numbers written straight from the closed cells' columns: no row
 * object is made unless a sink reads `rows`.
 */
export class RowFormatter {
  // Per series whose key is not in JSON form (non-ASCII, or a dimension named like an array index),
  // across windows: `{"name":…,"unit":…,"groupby":{…},` as a flat string. Its UTF-8 size is its
  // length, except for prefixes with non-ASCII characters, whose sizes are kept apart.
  readonly #prefix = new Map<string, string>();
  readonly #wideBytes = new Map<string, number>();
  readonly #ident = new Map<string, SeriesIdentityOut>();
  readonly #iso = new Map<number, string>();
  /** window start -> `"period":…,"period_start":"…","period_end":"…"` */
  readonly #windowPart = new Map<number, string>();
  #minuteMs = Number.NaN;
  #minuteText = '';
  /** ms within a minute -> `SS.mmmZ`, filled as met */
  readonly #secText: Array<string | undefined> = [];

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    /** Percentiles (0..100) read from each cell's sketch. */
    private readonly percentiles: readonly number[] = [],
  ) {}

  format(cells: CellList, where?: { topic: string; partition: number }): RowBatch {
    const c = cells instanceof ClosedCells ? cells : ClosedCells.from(cells);
    const n = c.length;
    const prefixes = new Array<string>(n);
    let prefixBytes = 0;
    for (let i = 0; i < n; i++) {
      const key = c.keys[i]!;
      // A key in JSON form is its row's head already (ASCII): nothing to build or keep.
      if (isJsonKey(key)) {
        prefixes[i] = key;
        prefixBytes += key.length;
        continue;
      }
      const p = this.#prefix.get(key) ?? this.#newPrefix(key);
      prefixes[i] = p;
      prefixBytes += this.#wideBytes.size === 0 ? p.length : (this.#wideBytes.get(key) ?? p.length);
    }
    return new FormattedRows(this, c, prefixes, prefixBytes, where);
  }

  #newPrefix(key: string): string {
    if (this.#prefix.size >= this.maxEntries) {
      this.#prefix.clear();
      this.#wideBytes.clear();
    }
    const id = parseSeriesKey(key);
    const head = JSON.stringify({ name: id.name, unit: id.unit, groupby: groupbyObject(id) });
    // Through bytes and back: one flat string of the prefix alone (a slice or a concatenation would
    // keep the whole head, or a rope, alive for the life of the series), and its UTF-8 size for free.
    const bytes = Buffer.from(`${head.slice(0, -1)},`);
    const p = bytes.toString();
    this.#prefix.set(key, p);
    if (bytes.length !== p.length) this.#wideBytes.set(key, bytes.length);
    return p;
  }

  /** @internal The parsed identity of a series (row objects and identity keys only). */
  identity(key: string): SeriesIdentityOut {
    let s = this.#ident.get(key);
    if (s === undefined) {
      if (this.#ident.size >= this.maxEntries) this.#ident.clear();
      const id = parseSeriesKey(key);
      s = { name: id.name, unit: id.unit, groupby: groupbyObject(id), identityMiddle: null };
      this.#ident.set(key, s);
    }
    return s;
  }

  /** @internal `"count":…` up to the closing brace: the row after its identity, exactly as JSON.stringify writes it. */
  tail(c: ClosedCells, i: number, whereTail: string): string {
    const s = c.stats;
    const o = i * STAT.STRIDE;
    const count = s[o + STAT.COUNT]!;
    const tsMin = s[o + STAT.TS_MIN]!;
    const tsMax = s[o + STAT.TS_MAX]!;
    let t =
      `"count":${count},"sum":${s[o + STAT.SUM]!},"min":${s[o + STAT.MIN]!},"max":${s[o + STAT.MAX]!},"avg":${s[o + STAT.MEAN]!},` +
      `"stddev":${stddevOf(count, s[o + STAT.M2]!)},"duration_start":"${this.isoMs(tsMin)}","duration_end":"${this.isoMs(tsMax)}",` +
      `"duration":${(tsMax - tsMin) / 1000},${this.windowText(c.starts[i]!)}${whereTail}${c.quality === null ? '' : qualityText(c.quality, i)}`;
    const sketch = c.sketches?.[i];
    if (sketch !== undefined) t += `,"percentiles":${JSON.stringify(this.quantiles(sketch))},"sketch":${JSON.stringify(sketch.toJSON())}`;
    return `${t}}`;
  }

  /** @internal */
  quantiles(sketch: Sketch): Record<string, number> {
    const p: Record<string, number> = {};
    for (const q of this.percentiles) p[`p${q}`] = sketch.quantile(q / 100);
    return p;
  }

  /** @internal One row as an object, as sinks that read `rows` get it. */
  row(c: ClosedCells, i: number, where: { topic: string; partition: number } | undefined): StatsRow {
    const id = this.identity(c.keys[i]!);
    const s = c.stats;
    const o = i * STAT.STRIDE;
    const count = s[o + STAT.COUNT]!;
    const tsMin = s[o + STAT.TS_MIN]!;
    const tsMax = s[o + STAT.TS_MAX]!;
    const ws = c.starts[i]!;
    const row: StatsRow = {
      name: id.name,
      unit: id.unit,
      groupby: id.groupby,
      count,
      sum: s[o + STAT.SUM]!,
      min: s[o + STAT.MIN]!,
      max: s[o + STAT.MAX]!,
      avg: s[o + STAT.MEAN]!,
      stddev: stddevOf(count, s[o + STAT.M2]!),
      duration_start: this.isoMs(tsMin),
      duration_end: this.isoMs(tsMax),
      duration: (tsMax - tsMin) / 1000,
      period: this.windowMs / 1000,
      period_start: this.isoOf(ws),
      period_end: this.isoOf(ws + this.windowMs),
    };
    if (where !== undefined) {
      row.topic = where.topic;
      row.partition = where.partition;
    }
    const q = c.quality;
    if (q !== null) {
      row.revision = q.revision[i]!;
      row.closed_by = CLOSED_BY[q.closedBy[i]!]!;
      row.late_records = q.lateRecords[i]!;
    }
    const sketch = c.sketches?.[i];
    if (sketch !== undefined) {
      row.percentiles = this.quantiles(sketch);
      row.sketch = sketch.toJSON();
    }
    return row;
  }

  /** @internal */
  windowText(ws: number): string {
    let t = this.#windowPart.get(ws);
    if (t === undefined) {
      if (this.#windowPart.size > 10_000) this.#windowPart.clear();
      t = `"period":${this.windowMs / 1000},"period_start":"${this.isoOf(ws)}","period_end":"${this.isoOf(ws + this.windowMs)}"`;
      this.#windowPart.set(ws, t);
    }
    return t;
  }

  /**
   * toISOString of an event time, from a cached minute ("2020-02-11T12:42:") and cached seconds
   * ("07.250Z"): a row has two, and a Date per call was a large part of formatting. Event times are
   * 0..MAX_TIMESTAMP_MS, where the ISO form always has 24 characters.
   */
  /** @internal */
  isoMs(t: number): string {
    const ms = Math.floor(t);
    const within = ms % 60_000;
    const minuteMs = ms - within;
    if (minuteMs !== this.#minuteMs) {
      this.#minuteText = this.isoOf(minuteMs).slice(0, 17);
      this.#minuteMs = minuteMs;
    }
    let sec = this.#secText[within];
    if (sec === undefined) {
      const whole = Math.floor(within / 1000);
      const milli = within - whole * 1000;
      sec = `${whole < 10 ? '0' : ''}${whole}.${milli < 100 ? (milli < 10 ? '00' : '0') : ''}${milli}Z`;
      this.#secText[within] = sec;
    }
    return `${this.#minuteText}${sec}`;
  }

  /** @internal */
  isoOf(ms: number): string {
    let s = this.#iso.get(ms);
    if (s === undefined) {
      if (this.#iso.size > 10_000) this.#iso.clear();
      s = new Date(ms).toISOString();
      this.#iso.set(ms, s);
    }
    return s;
  }
}

/** One emission's rows: cached prefixes plus the closed cells, serialised on demand. */
class FormattedRows implements RowBatch {
  readonly #fmt: RowFormatter;
  readonly #cells: ClosedCells;
  readonly #prefixes: readonly string[];
  readonly #prefixBytes: number;
  readonly #where: { topic: string; partition: number } | undefined;
  readonly #whereTail: string;
  /** `[topic,partition,` (or `[null,null,`): the head of every identity key of the emission. */
  readonly #keyHead: string;
  #rows: StatsRow[] | null = null;

  get where(): { topic: string; partition: number } | undefined {
    return this.#where;
  }

  constructor(fmt: RowFormatter, cells: ClosedCells, prefixes: readonly string[], prefixBytes: number, where: { topic: string; partition: number } | undefined) {
    this.#fmt = fmt;
    this.#cells = cells;
    this.#prefixes = prefixes;
    this.#prefixBytes = prefixBytes;
    this.#where = where;
    this.#whereTail = where === undefined ? '' : `,"topic":${JSON.stringify(where.topic)},"partition":${where.partition}`;
    this.#keyHead = where === undefined ? '[null,null,' : `[${JSON.stringify(where.topic)},${where.partition},`;
  }

  /** Made on first use (the file and stdout sinks never ask), then the same objects every time. */
  get rows(): readonly StatsRow[] {
    if (this.#rows === null) {
      const n = this.#cells.length;
      const rows = new Array<StatsRow>(n);
      for (let i = 0; i < n; i++) rows[i] = this.#fmt.row(this.#cells, i, this.#where);
      this.#rows = rows;
    }
    return this.#rows;
  }

  ndjson(): string {
    let out = '';
    for (let i = 0; i < this.#prefixes.length; i++) out += `${this.#prefixes[i]!}${this.#fmt.tail(this.#cells, i, this.#whereTail)}\n`;
    return out;
  }

  /** `into`: the bytes are written into its buffer and returned as a view of it (rows without sketches). */
  ndjsonBytes(into?: ByteScratch): Buffer {
    if (this.#cells.sketches === null) return rowsBytes(this.#fmt, this.#cells, this.#prefixes, this.#prefixBytes, Buffer.from(this.#whereTail), into);
    const n = this.#prefixes.length;
    const tails = new Array<string>(n);
    // A tail is ASCII (numbers, ISO times, field names, sketch numbers) except a topic's own characters.
    const ascii = this.#where === undefined || /^[\x00-\x7f]*$/.test(this.#where.topic);
    let bytes = this.#prefixBytes + n;
    for (let i = 0; i < n; i++) {
      const tail = this.#fmt.tail(this.#cells, i, this.#whereTail);
      tails[i] = tail;
      bytes += ascii ? tail.length : Buffer.byteLength(tail);
    }
    const out = Buffer.allocUnsafe(bytes);
    let o = 0;
    for (let i = 0; i < n; i++) {
      o += out.write(this.#prefixes[i]!, o);
      o += ascii ? out.write(tails[i]!, o, 'latin1') : out.write(tails[i]!, o);
      out[o++] = 0x0a;
    }
    return out;
  }

  json(i: number): string {
    return `${this.#prefixes[i]!}${this.#fmt.tail(this.#cells, i, this.#whereTail)}`;
  }

  identityKey(i: number): string {
    return `${this.#keyHead}${identityMiddle(this.#fmt.identity(this.#cells.keys[i]!))},"${this.#fmt.isoOf(this.#cells.starts[i]!)}"]`;
  }

  identityKeyInto(i: number, out: Buffer, at: number): number {
    const head = this.#keyHead;
    const middle = identityMiddle(this.#fmt.identity(this.#cells.keys[i]!));
    const iso = this.#fmt.isoOf(this.#cells.starts[i]!);
    if (at + 3 * (head.length + middle.length + iso.length) + 4 > out.length) return -1;
    // Each part a flat string written as it is: the concatenation (a rope to flatten) is what costs.
    let o = at + out.write(head, at);
    o += out.write(middle, o);
    out[o++] = 0x2c;
    out[o++] = 0x22;
    o += out.write(iso, o, 'latin1');
    out[o++] = 0x22;
    out[o++] = 0x5d;
    return o;
  }
}

function identityMiddle(s: SeriesIdentityOut): string {
  if (s.identityMiddle === null) {
    const g = s.groupby;
    const pairs = Object.keys(g).sort().map((k) => [k, g[k] ?? null]);
    s.identityMiddle = `${JSON.stringify(s.name)},${JSON.stringify(pairs)}`;
  }
  return s.identityMiddle;
}
