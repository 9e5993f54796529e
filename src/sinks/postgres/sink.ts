// PostgreSQL sink: the rows of one emission and, for a Kafka source, the partition's commit point in one
// transaction. Rows PostgreSQL refuses for a reason of their own (a data error, a value over a limit)
// are returned as rejections and the rest is still written with the commit point: found by cheap checks
// in JS first, and by bisection under savepoints for whatever the checks did not foresee.
import pg from 'pg';
import type { Logger } from 'pino';
import type { CommitPoint, PositionStore } from '../../commit/types.js';
import { retry } from '../../async/index.js';
import { StreamstatsError } from '../../errors.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import { WRITTEN_ALL, type RowRejection, type Sink, type SinkCommit, type SinkWriteResult } from '../types.js';
import { groupbyKey, SeriesRefs, textProblem } from './identity.js';
import { MIGRATIONS, SCHEMA_LOCK_ID, TABLES } from './schema.js';
import { binaryProblem, ensureStaging, isoMs, insertCopy, insertSeries, upsertCopy, upsertUnnest, type PreparedRow } from './write.js';
import { rollUp } from './roll.js';
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

const SAVE_POSITION = `
INSERT INTO ${TABLES.positions} (group_id, topic, partition, next_offset, watermark_ms, applied_end, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, now())
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
  next_offset = EXCLUDED.next_offset, watermark_ms = EXCLUDED.watermark_ms, applied_end = EXCLUDED.applied_end, updated_at = now()`;

/** Attempts of one emission's transaction when it fails for a transient reason. */
const WRITE_ATTEMPTS = 5;

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
  #closing: Promise<void> | null = null;

  private constructor(pool: pg.Pool, url: string, groupId: string, logger?: Logger) {
    this.#pool = pool;
    this.#logger = logger;
    this.#groupId = groupId;
    this.describe = redactUrl(url);
  }

  static async open(url: string, opts: { groupId: string; logger: Logger }): Promise<PostgresSink> {
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
    return new PostgresSink(pool, url, opts.groupId, opts.logger);
  }

  async write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    if (batch.rows.length === 0 && commit === undefined) return WRITTEN_ALL;
    // A deadlock or serialization failure (two owners of a partition during a rebalance writing the
    // same new series) or a dropped connection says nothing about the rows: the transaction is retried,
    // a bounded number of times with jittered back-off, before the error counts as fatal.
    return retry(() => this.#writeOnce(batch, commit), {
      attempts: WRITE_ATTEMPTS,
      baseDelayMs: 100,
      maxDelayMs: 2000,
      retriable: (err) => isTransient((err as { cause?: unknown }).cause),
      onRetry: (err, attempt) => this.#logger?.warn({ err, attempt }, 'postgres: transient write failure; retrying the transaction'),
    });
  }

  async #writeOnce(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    const rejected: RowRejection[] = [];
    const rows = this.#prepare(batch.rows, rejected);
    const client = await this.#connect(batch.rows.length);
    // A checked-out client that loses its connection emits 'error' besides failing its query; without
    // a listener that would be an uncaught exception instead of this write's rejection.
    let broken: Error | undefined;
    const onError = (err: Error): void => {
      broken = err;
    };
    client.on('error', onError);
    try {
      await ensureStaging(client);
      await client.query('BEGIN');
      if (rows.length > 0) await this.#writeRows(client, rows, rejected);
      if (commit !== undefined) await this.#savePosition(client, commit);
      await client.query('COMMIT');
    } catch (err) {
      broken ??= err as Error;
      await client.query('ROLLBACK').catch(() => {});
      client.off('error', onError);
      client.release(broken);
      throw new StreamstatsError('STREAMSTATS_SINK', `postgres: writing ${batch.rows.length} rows failed: ${pgDetail(err)}`, { cause: err, canRetry: !isRowError(err) });
    }
    // The rows are stored: rolling up is a cache of them, and its failure (logged) fails nothing.
    try {
      const refusedNow = new Set(rejected.map((r) => r.index));
      const stored = rows.filter((r) => !refusedNow.has(r.index));
      for (const [ref, ms] of stored.length > 0 ? await rollUp(client, stored, this.#logger) : []) ref.rolledMs = ms;
    } catch (err) {
      broken ??= err as Error;
      this.#logger?.warn({ err: pgDetail(err) }, 'postgres: rolling up stored windows failed; they stay readable as they are');
    } finally {
      client.off('error', onError);
      // A client whose write failed is discarded, not pooled: its session state is not known.
      client.release(broken);
    }
    const refused = new Set(rejected.map((r) => r.index));
    for (const r of rows) if (!refused.has(r.index)) r.series.stored = true;
    if (rejected.length === 0) return WRITTEN_ALL;
    rejected.sort((a, b) => a.index - b.index);
    return { rejected };
  }

  async #connect(n: number): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw new StreamstatsError('STREAMSTATS_SINK', `postgres: writing ${n} rows failed: cannot connect (${pgDetail(err)})`, { cause: err, canRetry: true });
    }
  }

  /**
   * The rows worth sending, each with its series; the others go to `rejected`: text PostgreSQL cannot
   * store, a value binary COPY cannot carry (a timestamp that does not parse, a count that is not an
   * integer), and a second row of the same identity in one batch (stored, it would be the same row:
   * ON CONFLICT DO UPDATE refuses that with 21000, and row by row the later would overwrite the first).
   */
  #prepare(batch: readonly StatsRow[], rejected: RowRejection[]): PreparedRow[] {
    const out: PreparedRow[] = [];
    // Series id -> positions in `out` of its rows: an emission holds one row per series mostly, so
    // the rest of the identity is compared only for the few series seen twice.
    const seen = new Map<string, number[]>();
    for (let index = 0; index < batch.length; index++) {
      const row = batch[index]!;
      const series = this.#series.of(row.name, row.groupby, row.unit);
      const problem = series.problem ?? textProblem('topic', row.topic ?? '') ?? binaryProblem(row);
      if (problem !== null) {
        rejected.push({ index, detail: `postgres: not sent: ${problem}` });
        continue;
      }
      const same = seen.get(series.id);
      const first = same?.map((j) => out[j]!).find((o) => sameWindow(o.row, row));
      if (first !== undefined) {
        rejected.push({
          index,
          detail: `postgres 21000: not sent: the same identity as row ${first.index} of this batch (name, unit, groupby, topic, partition, period_start; as stored, where a lone surrogate reads U+FFFD)`,
        });
        continue;
      }
      if (same === undefined) seen.set(series.id, [out.length]);
      else same.push(out.length);
      out.push({ index, row, series });
    }
    return out;
  }

  /**
   * The whole batch by binary COPY; when a row is stored already (a replay after a restart), by COPY into
   * staging and one upsert. A row-level error rolls back to the savepoint and the rows are bisected:
   * log2(n) statements per bad row, all in the same transaction as the commit point.
   */
  async #writeRows(client: pg.ClientBase, rows: readonly PreparedRow[], rejected: RowRejection[]): Promise<void> {
    await client.query('SAVEPOINT streamstats_batch');
    try {
      await insertSeries(client, rows);
      try {
        await client.query('SAVEPOINT streamstats_copy');
        await insertCopy(client, rows);
        await client.query('RELEASE SAVEPOINT streamstats_copy');
      } catch (err) {
        if (sqlState(err) !== UNIQUE_VIOLATION) throw err;
        await client.query('ROLLBACK TO SAVEPOINT streamstats_copy');
        await upsertCopy(client, rows);
      }
      await client.query('RELEASE SAVEPOINT streamstats_batch');
      return;
    } catch (err) {
      if (!isRowError(err)) throw err;
      await client.query('ROLLBACK TO SAVEPOINT streamstats_batch');
      await client.query('RELEASE SAVEPOINT streamstats_batch');
    }
    await this.#bisect(client, rows, rejected);
  }

  async #bisect(client: pg.ClientBase, rows: readonly PreparedRow[], rejected: RowRejection[]): Promise<void> {
    if (rows.length === 0) return;
    await client.query('SAVEPOINT streamstats_part');
    try {
      await insertSeries(client, rows);
      await upsertUnnest(client, rows);
      await client.query('RELEASE SAVEPOINT streamstats_part');
      return;
    } catch (err) {
      if (!isRowError(err)) throw err;
      await client.query('ROLLBACK TO SAVEPOINT streamstats_part');
      await client.query('RELEASE SAVEPOINT streamstats_part');
      if (rows.length === 1) {
        rejected.push({ index: rows[0]!.index, detail: pgDetail(err) });
        return;
      }
    }
    const half = rows.length >>> 1;
    await this.#bisect(client, rows.slice(0, half), rejected);
    await this.#bisect(client, rows.slice(half), rejected);
  }

  async #savePosition(client: pg.ClientBase, c: SinkCommit): Promise<void> {
    const p: CommitPoint = c.point;
    await client.query(SAVE_POSITION, [this.#groupId, c.topic, c.partition, p.position, Number.isFinite(p.watermarkMs) ? p.watermarkMs : 0, p.appliedEnd]);
  }

  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, CommitPoint>> {
    const { rows } = await this.#pool.query<{ partition: number; next_offset: string; watermark_ms: number; applied_end: string }>(
      `SELECT partition, next_offset, watermark_ms, applied_end FROM ${TABLES.positions} WHERE group_id = $1 AND topic = $2 AND partition = ANY($3::int[])`,
      [this.#groupId, topic, partitions],
    );
    return new Map(rows.map((r) => [r.partition, { position: Number(r.next_offset), watermarkMs: r.watermark_ms, appliedEnd: Number(r.applied_end) }]));
  }

  get pool(): pg.Pool {
    return this.#pool;
  }

  close(): Promise<void> {
    this.#closing ??= this.#pool.end();
    return this.#closing;
  }
}

/** The same window of one series: what the primary key compares besides the series (period_start as an instant). */
function sameWindow(a: StatsRow, b: StatsRow): boolean {
  return isoMs(a.period_start) === isoMs(b.period_start) && (a.partition ?? -1) === (b.partition ?? -1) && (a.topic ?? '') === (b.topic ?? '');
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
