// Where the sink variants of the kafka-e2e scenario are observed: the end of an output topic and a
// fresh PostgreSQL schema. The observer is the same for streamstats and the Kafka Streams peer.
import { randomBytes } from 'node:crypto';
import type kafkajs from 'kafkajs';
import pg from 'pg';

/**
 * Samples the sum of an output topic's end offsets. kafkajs lists offsets read_committed, so for a
 * transactional producer this is the last stable offset: it includes one control record per partition
 * and committed transaction, and reaches its final value when the last transaction commits. `since`
 * is when the current value was first seen, so "done" = the value stopped moving, at `since`.
 */
export class TopicEnd {
  #value = -1;
  #since = NaN;

  constructor(
    private readonly admin: kafkajs.Admin,
    private readonly topic: string,
  ) {}

  async sample(): Promise<number> {
    const offs = await this.admin.fetchTopicOffsets(this.topic);
    const sum = offs.reduce((a, o) => a + Number(o.high), 0);
    if (sum !== this.#value) {
      this.#value = sum;
      this.#since = performance.now();
    }
    return sum;
  }

  get value(): number {
    return this.#value;
  }

  /** performance.now() of the first sample that saw the current value. */
  get since(): number {
    return this.#since;
  }

  /** At least `rows` records and no change for `stableMs`: the output is complete. */
  settled(rows: number, stableMs: number): boolean {
    return this.#value >= rows && performance.now() - this.#since >= stableMs;
  }
}

export const PG_URL = process.env.STREAMSTATS_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A fresh schema, and the URL whose every connection works in it (`options=-c search_path=...`). */
export async function createPgSchema(prefix = 'ss_bench'): Promise<{ schema: string; url: string }> {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await c.end();
  }
  const u = new URL(PG_URL);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return { schema, url: u.toString() };
}

export async function dropPgSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  try {
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } catch {
    // Best effort: a leftover ss_bench_* schema is harmless and named as ours.
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Rows of `rowsOf` (a table or a view) and the total size on disk (heap, indexes, TOAST) of the tables
 * `sizeOf`, summed: schema version 2 stores a row in streamstats_windows + streamstats_series, and the
 * streamstats_statistics view over them has no size of its own.
 */
export async function pgTableStats(schema: string, rowsOf: string, sizeOf: readonly string[]): Promise<{ rows: number; totalBytes: number }> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    const size = sizeOf.map((t) => `pg_total_relation_size('${schema}.${t}')`).join(' + ');
    const r = await c.query<{ rows: string; bytes: string }>(`SELECT (SELECT count(*) FROM ${schema}.${rowsOf}) AS rows, ${size} AS bytes`);
    return { rows: Number(r.rows[0]!.rows), totalBytes: Number(r.rows[0]!.bytes) };
  } finally {
    await c.end();
  }
}

/** PostgreSQL reachable at PG_URL? The error message, or null. */
export async function pgProblem(): Promise<string | null> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return null;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await c.end().catch(() => {});
  }
}
