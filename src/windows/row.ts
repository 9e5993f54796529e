// A closed window as a statistics row, with the field names of the OpenStack Ceilometer v2
// Statistics result (plus name and stddev, and the identity a sink can upsert by).
import { stddev, type Moments } from '../core/stats.js';
import type { Sketch, SketchData } from '../core/sketch.js';
import { groupbyObject, parseSeriesKey } from '../core/series.js';

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
  ndjsonBytes?(): Buffer;
  /** Each row's JSON (as JSON.stringify writes it) and identity key, from per-series cached parts. */
  json?(i: number): string;
  identityKey?(i: number): string;
}

interface SeriesOut {
  readonly name: string;
  readonly unit: string | null;
  readonly groupby: Record<string, string | null>;
  /** `{"name":…,"unit":…,"groupby":{…},` : serialised once per series, not once per row. */
  readonly jsonPrefix: string;
  /** UTF-8 bytes of jsonPrefix. */
  readonly prefixBytes: number;
  /**
   * `"name",[["dim","value"],…]` of the identity key (groupby pairs sorted by name): made on the first
   * identityKey() of the series (only the Kafka sink asks), then kept.
   */
  identityMiddle: string | null;
}

/**
 * Builds rows. Emitting is the main thread's biggest cost after merging (one row per series per
 * window), so the per-series parts are parsed and serialised once and cached, bounded by maxEntries.
 */
export class RowFormatter {
  readonly #series = new Map<string, SeriesOut>();
  readonly #iso = new Map<number, string>();

  constructor(
    private readonly windowMs: number,
    private readonly maxEntries: number,
    /** Percentiles (0..100) read from each cell's sketch. */
    private readonly percentiles: readonly number[] = [],
  ) {}

  format(cells: ReadonlyArray<{ key: string; windowStart: number; moments: Moments; sketch?: Sketch }>, where?: { topic: string; partition: number }): RowBatch {
    const rows: StatsRow[] = new Array(cells.length);
    const prefixes: string[] = new Array(cells.length);
    let prefixBytes = 0;
    const series: SeriesOut[] = new Array(cells.length);
    const keyHead = where === undefined ? '[null,null,' : `[${JSON.stringify(where.topic)},${where.partition},`;
    const topicAscii = where === undefined || /^[\x00-\x7f]*$/.test(where.topic);
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      const s = this.#seriesOut(c.key);
      const m = c.moments;
      const row: StatsRow = {
        name: s.name,
        unit: s.unit,
        groupby: s.groupby,
        count: m.count,
        sum: m.sum,
        min: m.min,
        max: m.max,
        avg: m.mean,
        stddev: stddev(m),
        duration_start: this.#isoMs(m.tsMin),
        duration_end: this.#isoMs(m.tsMax),
        duration: (m.tsMax - m.tsMin) / 1000,
        period: this.windowMs / 1000,
        period_start: this.#isoOf(c.windowStart),
        period_end: this.#isoOf(c.windowStart + this.windowMs),
      };
      if (where !== undefined) {
        row.topic = where.topic;
        row.partition = where.partition;
      }
      if (c.sketch !== undefined) {
        const p: Record<string, number> = {};
        for (const q of this.percentiles) p[`p${q}`] = c.sketch.quantile(q / 100);
        row.percentiles = p;
        row.sketch = c.sketch.toJSON();
      }
      rows[i] = row;
      prefixes[i] = s.jsonPrefix;
      prefixBytes += s.prefixBytes;
      series[i] = s;
    }
    return {
      rows,
      ndjson: () => {
        let out = '';
        for (let i = 0; i < rows.length; i++) out += `${prefixes[i]!}${rowTail(rows[i]!)}\n`;
        return out;
      },
      ndjsonBytes: () => {
        const tails: string[] = new Array(rows.length);
        // A tail is ASCII (numbers, ISO times, field names) except a topic's own characters.
        let bytes = prefixBytes + rows.length;
        for (let i = 0; i < rows.length; i++) {
          const tail = rowTail(rows[i]!);
          tails[i] = tail;
          bytes += topicAscii ? tail.length : Buffer.byteLength(tail);
        }
        const out = Buffer.allocUnsafe(bytes);
        let o = 0;
        for (let i = 0; i < rows.length; i++) {
          o += out.write(prefixes[i]!, o);
          o += out.write(tails[i]!, o);
          out[o++] = 0x0a;
        }
        return out;
      },
      json: (i) => `${prefixes[i]!}${rowTail(rows[i]!)}`,
      identityKey: (i) => `${keyHead}${identityMiddle(series[i]!)},"${rows[i]!.period_start}"]`,
    };
  }

  #seriesOut(key: string): SeriesOut {
    let s = this.#series.get(key);
    if (s === undefined) {
      if (this.#series.size >= this.maxEntries) this.#series.clear();
      const id = parseSeriesKey(key);
      const groupby = groupbyObject(id);
      const head = JSON.stringify({ name: id.name, unit: id.unit, groupby });
      const jsonPrefix = `${head.slice(0, -1)},`;
      s = { name: id.name, unit: id.unit, groupby, jsonPrefix, prefixBytes: Buffer.byteLength(jsonPrefix), identityMiddle: null };
      this.#series.set(key, s);
    }
    return s;
  }

  /**
   * toISOString of an event time, from a cached minute ("2020-02-11T12:42:") and the seconds: a row
   * has two, and a Date per call was a large part of formatting. Event times are 0..MAX_TIMESTAMP_MS,
   * where the ISO form always has 24 characters.
   */
  #isoMs(t: number): string {
    const ms = Math.floor(t);
    const within = ms % 60_000;
    const minute = this.#isoOf(ms - within).slice(0, 17);
    const sec = Math.floor(within / 1000);
    const milli = within - sec * 1000;
    return `${minute}${sec < 10 ? '0' : ''}${sec}.${milli < 100 ? (milli < 10 ? '00' : '0') : ''}${milli}Z`;
  }

  #isoOf(ms: number): string {
    let s = this.#iso.get(ms);
    if (s === undefined) {
      if (this.#iso.size > 10_000) this.#iso.clear();
      s = new Date(ms).toISOString();
      this.#iso.set(ms, s);
    }
    return s;
  }
}

function identityMiddle(s: SeriesOut): string {
  if (s.identityMiddle === null) {
    const g = s.groupby;
    const pairs = Object.keys(g).sort().map((k) => [k, g[k] ?? null]);
    s.identityMiddle = `${JSON.stringify(s.name)},${JSON.stringify(pairs)}`;
  }
  return s.identityMiddle;
}

/** The row after its identity, serialised exactly as JSON.stringify would (same keys, same order). */
function rowTail(r: StatsRow): string {
  let s =
    `"count":${r.count},"sum":${r.sum},"min":${r.min},"max":${r.max},"avg":${r.avg},"stddev":${r.stddev},` +
    `"duration_start":"${r.duration_start}","duration_end":"${r.duration_end}","duration":${r.duration},` +
    `"period":${r.period},"period_start":"${r.period_start}","period_end":"${r.period_end}"`;
  if (r.topic !== undefined) s += `,"topic":${JSON.stringify(r.topic)},"partition":${r.partition}`;
  if (r.percentiles !== undefined) s += `,"percentiles":${JSON.stringify(r.percentiles)},"sketch":${JSON.stringify(r.sketch)}`;
  return `${s}}`;
}
