// PostgreSQL sink: the rows of the emissions queued since the last transaction and, for a Kafka source,
// each partition's latest commit point in one transaction. Rows PostgreSQL refuses for a reason of their own (a data error, a value over a limit)
// are returned as rejections and the rest is still written with the commit point: found by cheap checks
// in JS first, and by bisection under savepoints for whatever the checks did not foresee.
import pg from 'pg';
import type { Logger } from 'pino';
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import { retry } from '../../async/index.js';
import { StreamstatsError } from '../../errors.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import { WRITTEN_ALL, type RowRejection, type Sink, type SinkCommit, type SinkWriteResult } from '../types.js';
import { groupbyKey, SeriesRefs, textProblem, type SeriesRef } from './identity.js';
import { MIGRATIONS, SCHEMA_LOCK_ID, TABLES } from './schema.js';
import { binaryProblem, isoMs } from './encode.js';
import { ensureStaging, RowSet, type PreparedRow, type WriteSet } from './write.js';
import { rollUp, wantRoll } from './roll.js';
import { TupleSet } from './tuple-set.js';
import { tupleSeriesId, tupleSeriesKey, tupleSeriesMeta, tupleStartMs } from './tuples.js';
import { redactUrl } from '../../config/redact.js';

export { groupbyKey, redactUrl };

export async function migrate(client: pg.ClientBase): Promise<number> {
  await client.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK_ID]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS streamstats_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM streamstats_migrations');
    const current = rows[0]?.v ?? 0;
    for (let v = current + 1; v <= MIGRATIONS.length; v++) {
      await client.query('BEGIN');
      try {
        await client.query(MIGRATIONS[v - 1]!);
        await client.query('INSERT INTO streamstats_migrations (version) VALUES ($1)', [v]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      }
    }
    return MIGRATIONS.length;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK_ID]);
  }
}

const SAVE_POSITIONS = `
INSERT INTO ${TABLES.positions} (group_id, topic, partition, next_offset, watermark_ms, applied_end, kept_from_ms, updated_at)
SELECT $1, t.*, now() FROM unnest($2::text[], $3::int[], $4::int8[], $5::float8[], $6::int8[], $7::float8[]) AS t
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
  next_offset = EXCLUDED.next_offset, watermark_ms = EXCLUDED.watermark_ms, applied_end = EXCLUDED.applied_end,
  kept_from_ms = EXCLUDED.kept_from_ms, updated_at = now()`;

/** Attempts of one transaction when it fails for a transient reason. */
const WRITE_ATTEMPTS = 5;
/** Rows of queued emissions that go into one transaction at most (an emission larger goes alone). */
const GROUP_ROWS = 40_000;
/** Transactions written the careful way straight away once a replay was seen (a row stored already). */
const CAREFUL_GROUPS = 32;
/**
 * Series kept by id for COPY tuples at most, unless MAX_SERIES says (as the row formatter keeps its
 * series); past it they are forgotten: stored again with DO NOTHING, offered to roll up again.
 */
const SERIES_BY_ID_DEFAULT = 100_000;

/** Rows in a batch, without making row objects of a batch formatted elsewhere. */
function rowCount(batch: RowBatch): number {
  return batch.lineEnds?.().length ?? batch.rows.length;
}

/** Bytes in a buffer, as a Buffer over the same memory. */
function bytesOf(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

interface Pending {
  readonly batch: RowBatch;
  readonly commit: SinkCommit | undefined;
  resolve(r: SinkWriteResult): void;
  reject(err: unknown): void;
}

/** The latest commit point of each partition in a group, in the order first seen. */
function lastCommits(group: readonly Pending[]): SinkCommit[] {
  const byPartition = new Map<string, SinkCommit>();
  for (const { commit } of group) if (commit !== undefined) byPartition.set(`${commit.topic}\u0000${commit.partition}`, commit);
  return [...byPartition.values()];
}

/** Deadlock, serialization failure, a connection lost or the server going away: retrying can help. */
function isTransient(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return err instanceof Error && /Connection terminated|ECONNRESET|ECONNREFUSED|EPIPE/.test(err.message);
  return code === '40P01' || code === '40001' || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}

export class PostgresSink implements Sink, PositionStore {
  readonly describe: string;
  /** Commit points live in the positions table, written in the rows' transaction. */
  readonly positions: PositionStore = this;
  readonly #pool: pg.Pool;
  readonly #groupId: string;
  readonly #logger: Logger | undefined;
  readonly #series = new SeriesRefs();
  /** Series of COPY tuples by their id's 16 bytes as latin1 (their rows carry no groupby object to key them by). */
  readonly #seriesById = new Map<string, SeriesRef>();
  readonly #seriesByIdMax: number;
  readonly pipelined = true;
  readonly readsCopyTuples = true;
  readonly #queue: Pending[] = [];
  #draining: Promise<void> | null = null;
  #carefulGroups = 0;
  #closing: Promise<void> | null = null;

  private constructor(pool: pg.Pool, url: string, groupId: string, logger?: Logger, maxSeries = SERIES_BY_ID_DEFAULT) {
    this.#pool = pool;
    this.#seriesByIdMax = maxSeries;
    this.#logger = logger;
    this.#groupId = groupId;
    this.describe = redactUrl(url);
  }

  /** `maxSeries`: MAX_SERIES, the series whose state the sink keeps by id for COPY tuples. */
  static async open(url: string, opts: { groupId: string; logger: Logger; maxSeries?: number }): Promise<PostgresSink> {
    const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 10_000 });
    pool.on('error', (err) => opts.logger.warn({ err }, 'postgres: idle client error'));
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      await pool.end().catch(() => {});
      // The driver's message may echo the URL; ours never carries the password.
      throw new StreamstatsError('STREAMSTATS_SINK', `SINK=${redactUrl(url)}: cannot connect to PostgreSQL (${redactSecrets((err as Error).message, url)})`, { canRetry: true });
    }
    try {
      const version = await migrate(client);
      opts.logger.info({ sink: redactUrl(url), schemaVersion: version }, 'postgres: schema ready');
    } finally {
      client.release();
    }
    return new PostgresSink(pool, url, opts.groupId, opts.logger, opts.maxSeries);
  }

  /**
   * Emissions are queued and written in call order by one writer: whatever queued up while a
   * transaction ran goes into the next one together (rows of several emissions and partitions, each
   * partition's latest commit point), so the engine goes on applying records while PostgreSQL commits,
   * and a commit, its round trips and its WAL flush are shared by every emission in it. One
   * transaction at a time keeps the points of a partition in order; all-or-nothing keeps each point
   * with the rows it implies. The queue is bounded by the engine (writes in flight per partition).
   */
  write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    if (commit === undefined && rowCount(batch) === 0) return Promise.resolve(WRITTEN_ALL);
    if (this.#closing !== null) return Promise.reject(new StreamstatsError('STREAMSTATS_SINK', 'postgres: write after close', { canRetry: false }));
    return new Promise((resolve, reject) => {
      this.#queue.push({ batch, commit, resolve, reject });
      this.#kick();
    });
  }

  /** Starts the writer unless it runs; one that ended as a write came in (resolving a caller) starts again. */
  #kick(): void {
    if (this.#draining !== null) return;
    this.#draining = this.#drain().finally(() => {
      this.#draining = null;
      if (this.#queue.length > 0) this.#kick();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const group: Pending[] = [];
      let rows = 0;
      // A group's writes are all COPY tuples or all row objects (an engine writes one kind).
      const tuples = hasTuples(this.#queue[0]!.batch);
      while (this.#queue.length > 0 && (group.length === 0 || (rows + rowCount(this.#queue[0]!.batch) <= GROUP_ROWS && hasTuples(this.#queue[0]!.batch) === tuples))) {
        const p = this.#queue.shift()!;
        rows += rowCount(p.batch);
        group.push(p);
      }
      try {
        // A deadlock or serialization failure (two owners of a partition during a rebalance writing the
        // same new series) or a dropped connection says nothing about the rows: the transaction is
        // retried, a bounded number of times with jittered back-off, before the error counts as fatal.
        const results = await retry(() => this.#writeOnce(group), {
          attempts: WRITE_ATTEMPTS,
          baseDelayMs: 100,
          maxDelayMs: 2000,
          retriable: (err) => isTransient((err as { cause?: unknown }).cause),
          onRetry: (err, attempt) => this.#logger?.warn({ err, attempt }, 'postgres: transient write failure; retrying the transaction'),
        });
        group.forEach((p, i) => p.resolve(results[i]!));
      } catch (err) {
        // Nothing queued behind a failed write may commit: its points would pass rows never stored.
        for (const p of [...group, ...this.#queue.splice(0)]) p.reject(err);
      }
    }
  }

  async #writeOnce(group: readonly Pending[]): Promise<SinkWriteResult[]> {
    const rejected: RowRejection[][] = group.map(() => []);
    const rows = hasTuples(group[0]!.batch) ? this.#prepareTuples(group, rejected) : this.#prepareGroup(group, rejected);
    const commits = lastCommits(group);
    const n = group.reduce((a, p) => a + rowCount(p.batch), 0);
    const client = await this.#connect(n);
    // A checked-out client that loses its connection emits 'error' besides failing its query; without
    // a listener that would be an uncaught exception instead of this write's rejection.
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
    };
    client.on('error', onError);
    const refused: Array<{ at: number; detail: string }> = [];
    try {
      await this.#transaction(client, rows, commits, refused);
    } catch (err) {
      broken ??= err as Error;
      await client.query('ROLLBACK').catch(() => {});
      client.off('error', onError);
      client.release(broken);
      throw new StreamstatsError('STREAMSTATS_SINK', `postgres: writing ${n} rows failed: ${pgDetail(err)}`, { cause: err, canRetry: !isRowError(err) });
    }
    const refusedNow = new Set(refused.map((r) => r.at));
    const want = new Map<SeriesRef, number>();
    for (let i = 0; i < rows.length; i++) {
      if (refusedNow.size > 0 && refusedNow.has(i)) continue;
      const series = rows.series(i);
      series.stored = true;
      wantRoll(want, series, rows.startMs(i), rows.period(i));
    }
    // The rows are stored: rolling up is a cache of them, and its failure (logged) fails nothing.
    try {
      for (const [ref, ms] of await rollUp(client, want, this.#logger)) ref.rolledMs = ms;
    } catch (err) {
      broken ??= err as Error;
      this.#logger?.warn({ err: pgDetail(err) }, 'postgres: rolling up stored windows failed; they stay readable as they are');
    } finally {
      client.off('error', onError);
      // A client whose write failed is discarded, not pooled: its session state is not known.
      client.release(broken);
    }
    for (const r of refused) rejected[rows.batchOf(r.at)]!.push({ index: rows.indexOf(r.at), detail: r.detail });
    return rejected.map((list) => (list.length === 0 ? WRITTEN_ALL : { rejected: list.sort((a, b) => a.index - b.index) }));
  }

  /**
   * The rows and points of a group in one transaction. First the cheap way: new series, one binary
   * COPY into the table, the points, no savepoint. A row PostgreSQL refuses, or one stored already (a
   * replay after a restart), aborts that: the transaction is rolled back and done again the careful
   * way (#writeRows: savepoints, staging + upsert, bisection), which is also taken directly for a while
   * after a replay was seen.
   */
  async #transaction(client: pg.PoolClient, rows: WriteSet, commits: readonly SinkCommit[], refused: Array<{ at: number; detail: string }>): Promise<void> {
    // Amended rows (a revision above 0) are stored already: the COPY would fail on them, so they go
    // straight the careful way, without making the groups after them careful too.
    const amends = rows.amends;
    if (this.#carefulGroups > 0 && rows.length > 0) this.#carefulGroups--;
    else if (!amends) {
      await client.query('BEGIN');
      try {
        if (rows.length > 0) {
          await rows.insertSeries(client);
          await rows.insertCopy(client);
        }
        await this.#savePositions(client, commits);
        await client.query('COMMIT');
        return;
      } catch (err) {
        if (!isRowError(err)) throw err;
        await client.query('ROLLBACK');
        if (sqlState(err) === UNIQUE_VIOLATION) this.#carefulGroups = CAREFUL_GROUPS;
      }
    }
    await ensureStaging(client);
    await client.query('BEGIN');
    await this.#writeRows(client, rows, refused, amends);
    await this.#savePositions(client, commits);
    await client.query('COMMIT');
  }

  async #connect(n: number): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw new StreamstatsError('STREAMSTATS_SINK', `postgres: writing ${n} rows failed: cannot connect (${pgDetail(err)})`, { cause: err, canRetry: true });
    }
  }

  /**
   * The rows worth sending, each with its series; the others go to `rejected` (per write of the
   * group): text PostgreSQL cannot store, a value binary COPY cannot carry (a timestamp that does not
   * parse, a count that is not an integer), and a second row of the same identity in one write
   * (stored, it would be the same row: ON CONFLICT DO UPDATE refuses that with 21000, and row by row
   * the later would overwrite the first). A row of the same identity as one of an earlier write of
   * the group replaces it, as writing them one after the other would have.
   */
  #prepareGroup(group: readonly Pending[], rejected: RowRejection[][]): RowSet {
    const out: Array<PreparedRow | null> = [];
    const batchOf = new Map<PreparedRow, number>();
    // The row's identity as stored (series id, period_start as an instant, partition, topic) -> its
    // position in `out`: a group holds a row of most series per emission, so one lookup a row.
    const seen = new Map<string, number>();
    group.forEach(({ batch }, b) => {
      const rows = batch.rows;
      for (let index = 0; index < rows.length; index++) {
        const row = rows[index]!;
        const series = this.#series.of(row.name, row.groupby, row.unit);
        const problem = series.problem ?? textProblem('topic', row.topic ?? '') ?? binaryProblem(row);
        if (problem !== null) {
          rejected[b]!.push({ index, detail: `postgres: not sent: ${problem}` });
          continue;
        }
        const key = `${series.id}${isoMs(row.period_start)}\u0000${row.partition ?? -1}\u0000${row.topic ?? ''}`;
        const at = seen.get(key);
        if (at !== undefined) {
          const first = out[at]!;
          if (batchOf.get(first) === b) {
            rejected[b]!.push({
              index,
              detail: `postgres 21000: not sent: the same identity as row ${first.index} of this batch (name, unit, groupby, topic, partition, period_start; as stored, where a lone surrogate reads U+FFFD)`,
            });
            continue;
          }
          // Written by an earlier emission of the group: this one's row is what stays.
          out[at] = null;
        }
        const p: PreparedRow = { index, row, series };
        batchOf.set(p, b);
        seen.set(key, out.length);
        out.push(p);
      }
    });
    // In primary key order (series first): the index takes the COPY's rows in order, page after
    // page, instead of at random places (about 1 us less server CPU a row on 4,000-row emissions).
    const rows = out.filter((r): r is PreparedRow => r !== null).sort(bySeries);
    return new RowSet(rows, rows.map((r) => batchOf.get(r)!));
  }

  /**
   * #prepareGroup for writes of COPY tuples: the worker that made them refused what the checks
   * refuse (its refusals come back as they are) and put each write's tuples in series order. What
   * is left here is what spans writes: each tuple's series as this sink knows it, and a row of the
   * same identity as one of an earlier write of the group replacing it. Only writes of one lane can
   * share an identity, and only where their windows overlap (an emission cut in chunks shares its
   * boundary window): those alone are keyed row by row.
   */
  #prepareTuples(group: readonly Pending[], rejected: RowRejection[][]): TupleSet {
    const all = group.map((p) => p.batch.copyTuples!()!);
    const set = new TupleSet(all[0]!.quality, all.reduce((n, t) => n + t.ends.length, 0));
    const byId = this.#seriesById;
    const lanes = new Map<string, Array<{ b: number; lo: number; hi: number; min: number; max: number }>>();
    group.forEach(({ batch }, b) => {
      const t = all[b]!;
      for (const r of t.refused) rejected[b]!.push({ index: r.index, detail: r.detail });
      if (t.amends) set.amends = true;
      const data = bytesOf(t.data);
      set.addChunk(data);
      const ends = t.ends;
      const rows = t.rows;
      const lo = set.length;
      let min = Infinity;
      let max = -Infinity;
      let from = 0;
      for (let k = 0; k < ends.length; k++) {
        const to = ends[k]!;
        const key = tupleSeriesKey(data, from);
        let ref = byId.get(key);
        if (ref === undefined) {
          if (byId.size >= this.#seriesByIdMax) byId.clear();
          const m = tupleSeriesMeta(bytesOf(t.meta), k === 0 ? 0 : t.metaEnds[k - 1]!, t.metaEnds[k]!);
          ref = { id: tupleSeriesId(data, from), name: m.name, unit: m.unit, groupbyJson: m.groupbyJson, problem: null, stored: false, rolledMs: -Infinity, rollFailed: false };
          byId.set(key, ref);
        }
        const start = tupleStartMs(data, from);
        if (start < min) min = start;
        if (start > max) max = start;
        set.push(from, to, ref, start, b, rows[k]!);
        from = to;
      }
      const w = batch.where;
      const lane = w === undefined ? '' : `${w.topic}\u0000${w.partition}`;
      let list = lanes.get(lane);
      if (list === undefined) lanes.set(lane, (list = []));
      list.push({ b, lo, hi: set.length, min, max });
    });
    const drop = new Set<number>();
    for (const writes of lanes.values()) {
      if (writes.length < 2 || !overlapping(writes)) continue;
      const seen = new Map<string, number>();
      for (const { lo, hi } of writes) {
        for (let i = lo; i < hi; i++) {
          const key = `${set.series(i).id}${set.startMs(i)}`;
          const at = seen.get(key);
          // Written by an earlier write of the group (a write's own duplicates were refused): this one stays.
          if (at !== undefined) drop.add(at);
          seen.set(key, i);
        }
      }
    }
    return drop.size === 0 ? set : set.without(drop);
  }

  /**
   * The careful way: the rows by binary COPY under a savepoint, or (a row stored already: a replay
   * after a restart) by COPY into staging and one upsert. A row-level error rolls back to the savepoint
   * and the rows are bisected: log2(n) statements per bad row, all in the same transaction as the
   * commit points.
   */
  async #writeRows(client: pg.ClientBase, rows: WriteSet, rejected: Array<{ at: number; detail: string }>, amends = false): Promise<void> {
    await client.query('SAVEPOINT streamstats_batch');
    try {
      await rows.insertSeries(client);
      if (this.#carefulGroups > 0 || amends) await rows.upsertCopy(client);
      else {
        try {
          await client.query('SAVEPOINT streamstats_copy');
          await rows.insertCopy(client);
          await client.query('RELEASE SAVEPOINT streamstats_copy');
        } catch (err) {
          if (sqlState(err) !== UNIQUE_VIOLATION) throw err;
          await client.query('ROLLBACK TO SAVEPOINT streamstats_copy');
          await rows.upsertCopy(client);
        }
      }
      await client.query('RELEASE SAVEPOINT streamstats_batch');
      return;
    } catch (err) {
      if (!isRowError(err)) throw err;
      await client.query('ROLLBACK TO SAVEPOINT streamstats_batch');
      await client.query('RELEASE SAVEPOINT streamstats_batch');
    }
    await this.#bisect(client, rows, 0, rejected);
  }

  /** `base`: the position of rows' first in the whole set, as refusals name it. */
  async #bisect(client: pg.ClientBase, rows: WriteSet, base: number, rejected: Array<{ at: number; detail: string }>): Promise<void> {
    if (rows.length === 0) return;
    await client.query('SAVEPOINT streamstats_part');
    try {
      await rows.insertSeries(client);
      await rows.upsertUnnest(client);
      await client.query('RELEASE SAVEPOINT streamstats_part');
      return;
    } catch (err) {
      if (!isRowError(err)) throw err;
      await client.query('ROLLBACK TO SAVEPOINT streamstats_part');
      await client.query('RELEASE SAVEPOINT streamstats_part');
      if (rows.length === 1) {
        rejected.push({ at: base, detail: pgDetail(err) });
        return;
      }
    }
    const half = rows.length >>> 1;
    await this.#bisect(client, rows.slice(0, half), base, rejected);
    await this.#bisect(client, rows.slice(half, rows.length), base + half, rejected);
  }

  /** The points of a group, one statement (at most one per partition: lastCommits). */
  async #savePositions(client: pg.ClientBase, commits: readonly SinkCommit[]): Promise<void> {
    if (commits.length === 0) return;
    await client.query({
      name: 'streamstats_save_positions',
      text: SAVE_POSITIONS,
      values: [
        this.#groupId, commits.map((c) => c.topic), commits.map((c) => c.partition), commits.map((c) => c.point.position),
        commits.map((c) => (Number.isFinite(c.point.watermarkMs) ? c.point.watermarkMs : 0)), commits.map((c) => c.point.appliedEnd),
        commits.map((c) => c.point.keptFromMs ?? null),
      ],
    });
  }

  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, CommitPoint>> {
    const { rows } = await this.#pool.query<{ partition: number; next_offset: string; watermark_ms: number; applied_end: string; kept_from_ms: number | null }>(
      `SELECT partition, next_offset, watermark_ms, applied_end, kept_from_ms FROM ${TABLES.positions} WHERE group_id = $1 AND topic = $2 AND partition = ANY($3::int[])`,
      [this.#groupId, topic, partitions],
    );
    return new Map(rows.map((r) => {
      const point = { position: Number(r.next_offset), watermarkMs: r.watermark_ms, appliedEnd: Number(r.applied_end) };
      return [r.partition, r.kept_from_ms === null ? point : { ...point, keptFromMs: r.kept_from_ms }];
    }));
  }

  get pool(): pg.Pool {
    return this.#pool;
  }

  /** Ends the pool once the queued writes are done (or failed). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      while (this.#draining !== null) await this.#draining;
      await this.#pool.end();
    })();
    return this.#closing;
  }
}

function hasTuples(batch: RowBatch): boolean {
  return (batch.copyTuples?.() ?? null) !== null;
}

/** Whether any two of these writes' window ranges meet. */
function overlapping(writes: ReadonlyArray<{ readonly min: number; readonly max: number }>): boolean {
  const byMin = [...writes].sort((a, b) => a.min - b.min);
  let max = -Infinity;
  for (const w of byMin) {
    if (w.min <= max) return true;
    max = Math.max(max, w.max);
  }
  return false;
}

function bySeries(a: PreparedRow, b: PreparedRow): number {
  return a.series.id < b.series.id ? -1 : a.series.id > b.series.id ? 1 : 0;
}

const UNIQUE_VIOLATION = '23505';

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Errors of a row's values: data exceptions (22: bad text, a timestamp out of range), integrity (23),
 * cardinality (21000: one key twice in one upsert), program limits (54: an index row over the btree
 * maximum). Anything else (connection, resources, serialization, the server going away) is the sink's.
 */
function isRowError(err: unknown): boolean {
  const code = sqlState(err);
  return code !== undefined && (code.startsWith('22') || code.startsWith('23') || code.startsWith('54') || code === '21000');
}

/** `postgres 54000: index row size …` from a driver error: SQLSTATE, message and detail, never the connection string. */
function pgDetail(err: unknown): string {
  const e = err as { message?: unknown; detail?: unknown };
  const code = sqlState(err);
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const detail = typeof e?.detail === 'string' && e.detail !== '' ? ` (${e.detail})` : '';
  const text = `${code === undefined ? 'postgres' : `postgres ${code}`}: ${message}${detail}`;
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function redactSecrets(message: string, url: string): string {
  try {
    const pw = decodeURIComponent(new URL(url).password);
    return pw === '' ? message : message.split(pw).join('***');
  } catch {
    return message;
  }
}
