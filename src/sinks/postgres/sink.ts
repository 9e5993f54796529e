// PostgreSQL sink: rows upserted by identity in one statement per emission (unnest of arrays), and,
// for a Kafka source, the partition's commit point in the same transaction.
import pg from 'pg';
import type { Logger } from 'pino';
import type { CommitPoint } from '../../engine.js';
import { StreamstatsError } from '../../errors.js';
import type { RowBatch, StatsRow } from '../../windows/row.js';
import { WRITTEN_ALL, type PartitionPositions, type Sink, type SinkCommit, type SinkWriteResult } from '../types.js';
import { MIGRATIONS, SCHEMA_LOCK_ID, TABLES } from './schema.js';
import { redactUrl } from '../../config/redact.js';

export { redactUrl };

export function groupbyKey(g: Record<string, string | null>): string {
  return JSON.stringify(Object.keys(g).sort().map((k) => [k, g[k]]));
}

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

const UPSERT = `
INSERT INTO ${TABLES.statistics} (name, groupby_key, groupby, topic, partition, period_start, period_end, period, unit,
  count, sum, min, max, avg, m2, stddev, duration_start, duration_end, duration, sketch, updated_at)
SELECT * , now() FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::int[], $6::timestamptz[], $7::timestamptz[],
  $8::float8[], $9::text[], $10::int8[], $11::float8[], $12::float8[], $13::float8[], $14::float8[], $15::float8[], $16::float8[],
  $17::timestamptz[], $18::timestamptz[], $19::float8[], $20::jsonb[])
ON CONFLICT (name, groupby_key, topic, partition, period_start) DO UPDATE SET
  period_end = EXCLUDED.period_end, period = EXCLUDED.period, unit = EXCLUDED.unit, groupby = EXCLUDED.groupby,
  count = EXCLUDED.count, sum = EXCLUDED.sum, min = EXCLUDED.min, max = EXCLUDED.max, avg = EXCLUDED.avg,
  m2 = EXCLUDED.m2, stddev = EXCLUDED.stddev, duration_start = EXCLUDED.duration_start,
  duration_end = EXCLUDED.duration_end, duration = EXCLUDED.duration, sketch = EXCLUDED.sketch, updated_at = now()`;

const SAVE_POSITION = `
INSERT INTO ${TABLES.positions} (group_id, topic, partition, next_offset, watermark_ms, applied_end, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, now())
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
  next_offset = EXCLUDED.next_offset, watermark_ms = EXCLUDED.watermark_ms, applied_end = EXCLUDED.applied_end, updated_at = now()`;

function columns(rows: readonly StatsRow[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 20 }, () => new Array(rows.length));
  rows.forEach((r, i) => {
    const vals = [
      r.name, groupbyKey(r.groupby), JSON.stringify(r.groupby), r.topic ?? '', r.partition ?? -1, r.period_start, r.period_end,
      r.period, r.unit, r.count, r.sum, r.min, r.max, r.avg, r.stddev * r.stddev * r.count, r.stddev,
      r.duration_start, r.duration_end, r.duration, r.sketch === undefined ? null : JSON.stringify(r.sketch),
    ];
    for (let c = 0; c < vals.length; c++) cols[c]![i] = vals[c];
  });
  return cols;
}

export class PostgresSink implements Sink {
  readonly describe: string;
  readonly ownsPositions = true;
  readonly #pool: pg.Pool;
  readonly #groupId: string;
  #closing: Promise<void> | null = null;

  private constructor(pool: pg.Pool, url: string, groupId: string) {
    this.#pool = pool;
    this.#groupId = groupId;
    this.describe = redactUrl(url);
  }

  static async open(url: string, opts: { groupId: string; logger: Logger }): Promise<PostgresSink> {
    const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 10_000 });
    pool.on('error', (err) => opts.logger.warn({ err: err.message }, 'postgres: idle client error'));
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
    return new PostgresSink(pool, url, opts.groupId);
  }

  async write(batch: RowBatch, commit?: SinkCommit): Promise<SinkWriteResult> {
    if (batch.rows.length === 0 && commit === undefined) return WRITTEN_ALL;
    const client = await this.#pool.connect();
    try {
      await client.query('BEGIN');
      if (batch.rows.length > 0) await client.query(UPSERT, columns(batch.rows));
      if (commit !== undefined) await this.#savePosition(client, commit);
      await client.query('COMMIT');
      return WRITTEN_ALL;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw new StreamstatsError('STREAMSTATS_SINK', `postgres: writing ${batch.rows.length} rows failed: ${(err as Error).message}`, { cause: err });
    } finally {
      client.release();
    }
  }

  async #savePosition(client: pg.ClientBase, c: SinkCommit): Promise<void> {
    const p: CommitPoint = c.point;
    await client.query(SAVE_POSITION, [this.#groupId, c.topic, c.partition, p.position, Number.isFinite(p.watermarkMs) ? p.watermarkMs : 0, p.appliedEnd]);
  }

  async readPositions(topic: string, partitions: readonly number[]): Promise<Map<number, PartitionPositions>> {
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

function redactSecrets(message: string, url: string): string {
  try {
    const pw = decodeURIComponent(new URL(url).password);
    return pw === '' ? message : message.split(pw).join('***');
  } catch {
    return message;
  }
}
