// The bulk statements of one emission, each inside the caller's transaction. The sink uses
// insertCopy (COPY straight into the table) and falls back to upsertCopy when a row exists already
// (a replay); bisection uses upsertUnnest on small slices. bench/scenarios/pg-sink.ts measures them
// side by side.
import type pg from 'pg';
import type { StatsRow } from '../../windows/row.js';
import { BinaryCopyWriter, COPY_NULL, copyFrom, copyText } from './copy.js';
import type { SeriesRef } from './identity.js';
import { TABLES } from './schema.js';

export interface PreparedRow {
  /** Index in the batch. */
  readonly index: number;
  readonly row: StatsRow;
  readonly series: SeriesRef;
}

const COLUMNS = 'series, period_start, duration_start, duration_end, count, sum, min, max, m2, partition, period, topic, unit, sketch, sketch_bin';
const KEY = 'series, period_start, partition, topic';
const UPDATE = `DO UPDATE SET duration_start = EXCLUDED.duration_start, duration_end = EXCLUDED.duration_end, count = EXCLUDED.count,
  sum = EXCLUDED.sum, min = EXCLUDED.min, max = EXCLUDED.max, m2 = EXCLUDED.m2, period = EXCLUDED.period, unit = EXCLUDED.unit,
  sketch = EXCLUDED.sketch, sketch_bin = EXCLUDED.sketch_bin, updated_at = now()`;

const INSERT_SERIES = `INSERT INTO ${TABLES.series} (id, name, groupby, unit)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::text[]) ON CONFLICT (id) DO NOTHING`;

/**
 * Inserts the rows' series not known to be stored. DO NOTHING: another writer may have stored them.
 * In id order: two partitions' transactions inserting the same new series then take their row locks
 * in the same order and wait for each other instead of deadlocking.
 */
export async function insertSeries(client: pg.ClientBase, rows: readonly PreparedRow[]): Promise<void> {
  const fresh = new Map<string, SeriesRef>();
  for (const { series: s } of rows) if (!s.stored) fresh.set(s.id, s);
  if (fresh.size === 0) return;
  const ids = [...fresh.keys()].sort();
  const names = ids.map((id) => fresh.get(id)!.name);
  const groupbys = ids.map((id) => fresh.get(id)!.groupbyJson);
  const units = ids.map((id) => fresh.get(id)!.unit);
  await client.query({ name: 'streamstats_insert_series', text: INSERT_SERIES, values: [ids, names, groupbys, units] });
}

/** The stored m2 (sum of squared deviations) from the row's population stddev. */
function m2Of(r: StatsRow): number {
  return r.stddev * r.stddev * r.count;
}

function sketchJson(r: StatsRow): string | null {
  return r.sketch === undefined ? null : JSON.stringify(r.sketch);
}

/**
 * The sketch's buckets as schema version 3 stores them beside the JSON (sketch_bin: 12 bytes a
 * bucket, int4 code 2k / 2k+1 for positive / negative bucket k, float8 count, big-endian), which
 * rolling up concatenates without parsing; null (the roll then reads the JSON) for a bucket key that
 * is not an int4 bucket number or a count that is not a finite number.
 */
export function sketchBin(r: StatsRow): Buffer | null {
  const sk = r.sketch;
  if (sk === undefined) return null;
  const pos = Object.entries(sk.pos);
  const neg = Object.entries(sk.neg);
  const out = Buffer.allocUnsafe(12 * (pos.length + neg.length));
  let at = 0;
  for (const [entries, sign] of [[pos, 0], [neg, 1]] as const) {
    for (const [k, n] of entries) {
      const i = Number(k);
      const code = 2 * i + sign;
      if (!Number.isInteger(i) || code < -(2 ** 31) || code >= 2 ** 31 || typeof n !== 'number' || !Number.isFinite(n)) return null;
      out.writeInt32BE(code, at);
      out.writeDoubleBE(n, at + 4);
      at += 12;
    }
  }
  return out;
}

/** The rows as COPY text: one line each, columns in COLUMNS order. */
function copyData(rows: readonly PreparedRow[]): Buffer {
  let out = '';
  for (const { row: r, series } of rows) {
    const sketch = sketchJson(r);
    out +=
      `${series.id}\t${copyText(r.period_start)}\t${copyText(r.duration_start)}\t${copyText(r.duration_end)}\t` +
      `${r.count}\t${r.sum}\t${r.min}\t${r.max}\t${m2Of(r)}\t${r.partition ?? -1}\t${r.period}\t${copyText(r.topic ?? '')}\t` +
      `${r.unit === null ? COPY_NULL : copyText(r.unit)}\t${sketch === null ? COPY_NULL : copyText(sketch)}\t${byteaText(sketchBin(r))}\n`;
  }
  return Buffer.from(out, 'utf8');
}

/** A bytea in COPY text: hex format, its backslash escaped for COPY. */
function byteaText(b: Buffer | null): string {
  return b === null ? COPY_NULL : `\\\\x${b.toString('hex')}`;
}

/** How rows travel in a COPY: binary (the default: no parsing on the server) or text. */
export type CopyFormat = 'binary' | 'text';

const FORMAT_OPTION: Readonly<Record<CopyFormat, string>> = { binary: ' WITH (FORMAT binary)', text: '' };

/**
 * ms since the epoch of an ISO timestamp, cached: an emission's rows share period_start and mostly
 * share their first and last point times, and Date.parse was a third of the cost of building a COPY.
 */
const msCache = new Map<string, number>();
export function isoMs(iso: string): number {
  let ms = msCache.get(iso);
  if (ms === undefined) {
    if (msCache.size >= 50_000) msCache.clear();
    ms = Date.parse(iso);
    msCache.set(iso, ms);
  }
  return ms;
}

/**
 * Why a row cannot go into a binary COPY as it is (binary input has no parser to refuse it later),
 * or null. Rows the server refuses for reasons of its own still fail the statement (bisection).
 */
export function binaryProblem(r: StatsRow): string | null {
  for (const [what, v] of [['period_start', r.period_start], ['duration_start', r.duration_start], ['duration_end', r.duration_end]] as const) {
    if (typeof v !== 'string' || !Number.isFinite(isoMs(v))) return `${what} ${JSON.stringify(String(v).slice(0, 40))} is not an ISO 8601 timestamp`;
  }
  if (!Number.isSafeInteger(r.count) || r.count < 0) return `count ${r.count} is not a whole number of points`;
  if (!Number.isInteger(r.period) || r.period < 1 || r.period > 2 ** 31 - 1) return `period ${r.period} is not a whole number of seconds (1 .. 2^31-1)`;
  const p = r.partition ?? -1;
  if (!Number.isInteger(p) || p < -1 || p > 2 ** 31 - 1) return `partition ${p} is not a partition number`;
  return null;
}

/** The rows as binary COPY data, columns in COLUMNS order. Rows must pass binaryProblem(). */
function copyDataBinary(rows: readonly PreparedRow[]): Buffer {
  const w = new BinaryCopyWriter(rows.length * 200);
  for (const { row: r, series } of rows) {
    w.row(15);
    w.uuid(series.id);
    w.timestamp(isoMs(r.period_start));
    w.timestamp(isoMs(r.duration_start));
    w.timestamp(isoMs(r.duration_end));
    w.int8(r.count);
    w.float8(r.sum);
    w.float8(r.min);
    w.float8(r.max);
    w.float8(m2Of(r));
    w.int4(r.partition ?? -1);
    w.int4(r.period);
    w.text(r.topic ?? '');
    w.text(r.unit);
    w.text(sketchJson(r), true);
    w.bytes(sketchBin(r));
  }
  return w.finish();
}

function copyDataAs(rows: readonly PreparedRow[], format: CopyFormat): Buffer {
  return format === 'binary' ? copyDataBinary(rows) : copyData(rows);
}

/** COPY straight into the table: the fast path for rows not stored yet; a stored one fails it with 23505. */
export async function insertCopy(client: pg.ClientBase, rows: readonly PreparedRow[], format: CopyFormat = 'binary'): Promise<void> {
  await copyFrom(client, `COPY ${TABLES.windows} (${COLUMNS}) FROM STDIN${FORMAT_OPTION[format]}`, copyDataAs(rows, format));
}

const STAGING = 'pg_temp.streamstats_staging';
const staged = new WeakSet<pg.ClientBase>();

/**
 * Creates the connection's staging table (temporary, emptied at every commit) once; outside any
 * transaction, so that a rolled-back batch cannot take it away.
 */
export async function ensureStaging(client: pg.ClientBase): Promise<void> {
  if (staged.has(client)) return;
  await client.query(`CREATE TEMP TABLE IF NOT EXISTS streamstats_staging (LIKE ${TABLES.windows} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS`);
  staged.add(client);
}

const UPSERT_STAGED = `INSERT INTO ${TABLES.windows} (${COLUMNS}) SELECT ${COLUMNS} FROM ${STAGING}
ON CONFLICT (${KEY}) ${UPDATE}`;

/** COPY into the staging table, then one upsert from it. At most once per transaction (staging empties at commit). */
export async function upsertCopy(client: pg.ClientBase, rows: readonly PreparedRow[], format: CopyFormat = 'binary'): Promise<void> {
  await copyFrom(client, `COPY ${STAGING} (${COLUMNS}) FROM STDIN${FORMAT_OPTION[format]}`, copyDataAs(rows, format));
  await client.query(UPSERT_STAGED);
}

const UPSERT_UNNEST = `INSERT INTO ${TABLES.windows} (${COLUMNS})
SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::int8[], $6::float8[], $7::float8[],
  $8::float8[], $9::float8[], $10::int[], $11::int[], $12::text[], $13::text[], $14::jsonb[], $15::bytea[])
ON CONFLICT (${KEY}) ${UPDATE}`;

/** One upsert statement with the rows as arrays (what version 1 did for every emission). */
export async function upsertUnnest(client: pg.ClientBase, rows: readonly PreparedRow[]): Promise<void> {
  const cols: unknown[][] = Array.from({ length: 15 }, () => new Array(rows.length));
  rows.forEach(({ row: r, series }, i) => {
    const vals = [
      series.id, r.period_start, r.duration_start, r.duration_end, r.count, r.sum, r.min, r.max, m2Of(r),
      r.partition ?? -1, r.period, r.topic ?? '', r.unit, sketchJson(r), sketchBin(r),
    ];
    for (let c = 0; c < vals.length; c++) cols[c]![i] = vals[c];
  });
  await client.query({ name: 'streamstats_upsert_unnest', text: UPSERT_UNNEST, values: cols });
}
