// The seed-001 peer: DuckDB (@duckdb/node-api, a devDependency of the bench only) reading the same
// Ceilometer NDJSON file as streamstats and answering the same job with one GROUP BY: statistics per
// (meter, unit, resource, hour), written as NDJSON rows with our row's field names, so the scenario
// can check them equal to ours. Timed from opening the database to the written file.
// Usage: node dist/bench/child/duckdb-ceilometer.js INPUT OUTPUT THREADS   -> one JSON line.
import { DuckDBInstance } from '@duckdb/node-api';

export interface DuckdbResult {
  readonly rows: number;
  readonly seconds: number;
  readonly threads: number;
}

/** SQL string literal: the paths come from our own bench, but quote them anyway. */
const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`;

async function main(): Promise<void> {
  const [input, output, threadsArg] = process.argv.slice(2);
  if (input === undefined || output === undefined) throw new Error('usage: duckdb-ceilometer.js INPUT OUTPUT [THREADS]');
  const threads = Number(threadsArg ?? '2');
  const t0 = process.hrtime.bigint();
  const db = await DuckDBInstance.create(':memory:', { threads: String(threads) });
  const conn = await db.connect();
  // Columns named, so DuckDB neither samples the file for a schema nor reads resource_metadata; the
  // timestamps carry no offset and are UTC, as Ceilometer writes them. Population stddev, as ours.
  // period_start and the duration bounds are written as ISO strings in our rows' form (ms, Z).
  const iso = (e: string): string => `strftime(${e}, '%Y-%m-%dT%H:%M:%S.%gZ')`;
  const sql = `
    COPY (
      SELECT counter_name AS name, counter_unit AS unit, resource_id,
             count(*) AS count, sum(counter_volume) AS sum, min(counter_volume) AS min, max(counter_volume) AS max,
             avg(counter_volume) AS avg, coalesce(stddev_pop(counter_volume), 0) AS stddev,
             ${iso('min("timestamp")')} AS duration_start, ${iso('max("timestamp")')} AS duration_end,
             ${iso("time_bucket(INTERVAL '1 hour', \"timestamp\")")} AS period_start
      FROM read_ndjson(${lit(input)}, columns = {counter_name: 'VARCHAR', counter_unit: 'VARCHAR', counter_volume: 'DOUBLE', "timestamp": 'TIMESTAMP', resource_id: 'VARCHAR'})
      GROUP BY counter_name, counter_unit, resource_id, time_bucket(INTERVAL '1 hour', "timestamp")
    ) TO ${lit(output)} (FORMAT json)`;
  const reader = await conn.runAndReadAll(sql);
  const rows = Number(reader.getRows()[0]?.[0] ?? NaN);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  conn.closeSync();
  db.closeSync();
  const result: DuckdbResult = { rows, seconds, threads };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await main();
