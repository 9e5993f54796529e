// The bulk statements of one transaction (the emissions the sink groups), each inside the caller's
// transaction; the COPY data comes from encode.ts. The sink uses insertCopy (COPY straight into the
// table) and falls back to upsertCopy when a row exists already (a replay); bisection uses
// upsertUnnest on small slices. bench/scenarios/pg-sink.ts measures them
// side by side.
import type pg from 'pg';
import type { StatsRow } from '../../windows/row.js';
import { copyFrom } from './copy.js';
import { copyColumns, encodeCopy, hasQuality, isoMs, m2Of, sketchBin, sketchJson, type CopyFormat, type EncodeRow } from './encode.js';
import type { SeriesRef } from './identity.js';
import { TABLES } from './schema.js';

export interface PreparedRow extends EncodeRow {
  /** Index in the batch. */
  readonly index: number;
  readonly row: StatsRow;
  readonly series: SeriesRef;
}

export const FORMAT_OPTION: Readonly<Record<CopyFormat, string>> = { binary: ' WITH (FORMAT binary)', text: '' };

export type { CopyFormat };
export const KEY = 'series, period_start, partition, topic';
const UPDATE = `DO UPDATE SET duration_start = EXCLUDED.duration_start, duration_end = EXCLUDED.duration_end, count = EXCLUDED.count,
  sum = EXCLUDED.sum, min = EXCLUDED.min, max = EXCLUDED.max, m2 = EXCLUDED.m2, period = EXCLUDED.period, unit = EXCLUDED.unit,
  sketch = EXCLUDED.sketch, sketch_bin = EXCLUDED.sketch_bin, updated_at = now()`;
/**
 * Rows with quality columns (LATE_RECORDS=amend): an amendment replaces the stored row whole (the
 * engine merged the late records into the full window), never with an older revision (a replayed
 * first emission written again after the row was amended).
 */
const UPDATE_REVISED = `${UPDATE}, revision = EXCLUDED.revision, closed_by = EXCLUDED.closed_by, late_records = EXCLUDED.late_records
  WHERE ${TABLES.windows}.revision <= EXCLUDED.revision`;

function updateOf(rows: readonly PreparedRow[]): string {
  return updateFor(hasQuality(rows));
}

export function updateFor(quality: boolean): string {
  return quality ? UPDATE_REVISED : UPDATE;
}

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
  await insertFreshSeries(client, fresh);
}

/** Inserts these series (id -> ref), none known to be stored. */
export async function insertFreshSeries(client: pg.ClientBase, fresh: ReadonlyMap<string, SeriesRef>): Promise<void> {
  if (fresh.size === 0) return;
  const ids = [...fresh.keys()].sort();
  const names = ids.map((id) => fresh.get(id)!.name);
  const groupbys = ids.map((id) => fresh.get(id)!.groupbyJson);
  const units = ids.map((id) => fresh.get(id)!.unit);
  await client.query({ name: 'streamstats_insert_series', text: INSERT_SERIES, values: [ids, names, groupbys, units] });
}

/** COPY straight into the table: the fast path for rows not stored yet; a stored one fails it with 23505. */
export async function insertCopy(client: pg.ClientBase, rows: readonly PreparedRow[], format: CopyFormat = 'binary'): Promise<void> {
  await copyFrom(client, `COPY ${TABLES.windows} (${copyColumns(rows)}) FROM STDIN${FORMAT_OPTION[format]}`, encodeCopy(rows, format));
}

export const STAGING = 'pg_temp.streamstats_staging';
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

/** COPY into the staging table, then one upsert from it. At most once per transaction (staging empties at commit). */
export async function upsertCopy(client: pg.ClientBase, rows: readonly PreparedRow[], format: CopyFormat = 'binary'): Promise<void> {
  const columns = copyColumns(rows);
  await copyFrom(client, `COPY ${STAGING} (${columns}) FROM STDIN${FORMAT_OPTION[format]}`, encodeCopy(rows, format));
  await client.query(`INSERT INTO ${TABLES.windows} (${columns}) SELECT ${columns} FROM ${STAGING}
ON CONFLICT (${KEY}) ${updateOf(rows)}`);
}

const UNNEST = `unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::int8[], $6::float8[], $7::float8[],
  $8::float8[], $9::float8[], $10::int[], $11::int[], $12::text[], $13::text[], $14::jsonb[], $15::bytea[]`;
const UPSERT_UNNEST = `INSERT INTO ${TABLES.windows} (${copyColumns([])})
SELECT * FROM ${UNNEST})
ON CONFLICT (${KEY}) ${UPDATE}`;
const UPSERT_UNNEST_REVISED = `INSERT INTO ${TABLES.windows} (${copyColumns([])}, revision, closed_by, late_records)
SELECT * FROM ${UNNEST}, $16::int8[], $17::text[], $18::int8[])
ON CONFLICT (${KEY}) ${UPDATE_REVISED}`;

/** One upsert statement with the rows as arrays (what version 1 did for every emission). */
export async function upsertUnnest(client: pg.ClientBase, rows: readonly PreparedRow[]): Promise<void> {
  const quality = hasQuality(rows);
  await upsertUnnestValues(client, quality, rows.map(({ row: r, series }) => {
    const vals: unknown[] = [
      series.id, r.period_start, r.duration_start, r.duration_end, r.count, r.sum, r.min, r.max, m2Of(r),
      r.partition ?? -1, r.period, r.topic ?? '', r.unit, sketchJson(r), sketchBin(r),
    ];
    if (quality) vals.push(r.revision ?? 0, r.closed_by ?? null, r.late_records ?? 0);
    return vals;
  }));
}

/** The unnest upsert of rows given as their values, in COPY_COLUMNS (and QUALITY_COLUMNS) order. */
export async function upsertUnnestValues(client: pg.ClientBase, quality: boolean, rows: readonly (readonly unknown[])[]): Promise<void> {
  const cols: unknown[][] = Array.from({ length: quality ? 18 : 15 }, () => new Array(rows.length));
  rows.forEach((vals, i) => {
    for (let c = 0; c < vals.length; c++) cols[c]![i] = vals[c];
  });
  await client.query(quality
    ? { name: 'streamstats_upsert_unnest_revised', text: UPSERT_UNNEST_REVISED, values: cols }
    : { name: 'streamstats_upsert_unnest', text: UPSERT_UNNEST, values: cols });
}

/**
 * The rows of one transaction as its statements take them, whichever way they came: row objects
 * (RowSet) or COPY tuples a worker made (tuple-set.ts). Positions are the set's own, 0..length-1.
 */
export interface WriteSet {
  readonly length: number;
  /** Some row is an amendment (a revision above 0: stored already). */
  readonly amends: boolean;
  series(i: number): SeriesRef;
  /** Row i's window start (ms) and its length (s): what rolling up reads. */
  startMs(i: number): number;
  period(i: number): number;
  /** Which write of the group row i came from, and its index in that write's batch. */
  batchOf(i: number): number;
  indexOf(i: number): number;
  slice(lo: number, hi: number): WriteSet;
  insertSeries(client: pg.ClientBase): Promise<void>;
  insertCopy(client: pg.ClientBase): Promise<void>;
  upsertCopy(client: pg.ClientBase): Promise<void>;
  upsertUnnest(client: pg.ClientBase): Promise<void>;
}

/** Row objects, each with its series and the write it came from. */
export class RowSet implements WriteSet {
  readonly amends: boolean;

  constructor(
    readonly rows: readonly PreparedRow[],
    readonly batches: readonly number[],
  ) {
    this.amends = rows.some((r) => (r.row.revision ?? 0) > 0);
  }

  get length(): number {
    return this.rows.length;
  }

  series(i: number): SeriesRef {
    return this.rows[i]!.series;
  }

  startMs(i: number): number {
    return isoMs(this.rows[i]!.row.period_start);
  }

  period(i: number): number {
    return this.rows[i]!.row.period;
  }

  batchOf(i: number): number {
    return this.batches[i]!;
  }

  indexOf(i: number): number {
    return this.rows[i]!.index;
  }

  slice(lo: number, hi: number): RowSet {
    return new RowSet(this.rows.slice(lo, hi), this.batches.slice(lo, hi));
  }

  insertSeries(client: pg.ClientBase): Promise<void> {
    return insertSeries(client, this.rows);
  }

  insertCopy(client: pg.ClientBase): Promise<void> {
    return insertCopy(client, this.rows);
  }

  upsertCopy(client: pg.ClientBase): Promise<void> {
    return upsertCopy(client, this.rows);
  }

  upsertUnnest(client: pg.ClientBase): Promise<void> {
    return upsertUnnest(client, this.rows);
  }
}
