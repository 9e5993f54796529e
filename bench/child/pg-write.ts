// PostgreSQL write paths, one per run: in a fresh schema (dropped after), BATCHES emissions of the
// default workload's shape (1000 names x 4 hosts, 12 Monasca dimensions, one row per series per
// window, each emission one window of every series) written each in one transaction with a commit
// point, timed from the first BEGIN to the last COMMIT. Then the bytes of the tables per row.
// Usage: node dist/bench/child/pg-write.js BASE_URL PATH BATCHES SKETCH(0|1)   -> one JSON line.
//   PATH: v1-unnest (version 1's schema and statement, the baseline) | v2-unnest | v2-copy-upsert(-text) |
//         v2-copy-insert(-text) (COPY binary, or text) | sink (PostgresSink.write) | sink-replay (the same emissions written twice,
//         the second time timed: every row exists) | copy-heap (COPY binary into the windows table without its
//         primary key and triggers: the heap and its WAL alone) | copy-pk (with the primary key, without the triggers)
// Besides the time: client CPU (this process; its main thread runs the driver), the CPU of the server
// backend(s) serving it and the WAL written, each per row (bench/lib/pg-cost.ts), and every table's and
// index's size.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { PgCostProbe, pgCostPerRow, relationSizes, withAppName, type PgCostPerRow } from '../lib/pg-cost.js';
import { groupbyKey, SeriesRefs } from '../../src/sinks/postgres/identity.js';
import { migrate, PostgresSink } from '../../src/sinks/postgres/sink.js';
import { MIGRATIONS } from '../../src/sinks/postgres/schema.js';
import { ensureStaging, insertCopy, insertSeries, upsertCopy, upsertUnnest, type PreparedRow } from '../../src/sinks/postgres/write.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';

export const PATHS = ['v1-unnest', 'v2-unnest', 'v2-copy-upsert-text', 'v2-copy-upsert', 'v2-copy-insert-text', 'v2-copy-insert', 'copy-heap', 'copy-pk', 'sink', 'sink-replay'] as const;
export type WritePath = (typeof PATHS)[number];

export interface PgWriteResult extends PgCostPerRow {
  readonly path: WritePath;
  readonly rows: number;
  readonly seconds: number;
  readonly rowsPerSecond: number;
  readonly bytes: number;
  readonly bytesPerRow: number;
  /** Bytes per stored row of each table (heap + TOAST) and index. */
  readonly relationBytesPerRow: Readonly<Record<string, number>>;
}

const NAMES = 1000;
const HOSTS = 4;
const T0 = Date.parse('2020-02-11T12:42:00Z');

/** One groupby object per series, shared by its rows, as the engine's RowFormatter shares them. */
function seriesOf(): Array<{ name: string; groupby: Record<string, string | null> }> {
  const out = [];
  for (let h = 0; h < HOSTS; h++) {
    const tenant = 'a08ff49b6f772632716c43069c43a8c3';
    for (let n = 0; n < NAMES; n++) {
      out.push({
        name: `aaa.perf_${String(n).padStart(3, '0')}`,
        groupby: {
          _region: 'RegionOne', _tenant_id: tenant, cloud_name: 'monasca', cluster: 'compute', component: 'vm', container: `container_${h}`,
          control_plane: 'ccp', hostname: `agent_${h}`, resource_id: `b7cf3c25-632b-9240-9d3f-b64afebe${String(1000 + h * 17).padStart(4, '0')}`,
          service: `service_${h}`, tenant_id: tenant, zone: 'nova',
        },
      });
    }
  }
  return out;
}

function batches(n: number, sketch: boolean): RowBatch[] {
  const series = seriesOf();
  const out: RowBatch[] = [];
  for (let w = 0; w < n; w++) {
    const start = T0 + w * 60_000;
    const ps = new Date(start).toISOString();
    const pe = new Date(start + 60_000).toISOString();
    const rows: StatsRow[] = series.map((s, i) => {
      const a = 100 + ((i * 7 + w * 13) % 500);
      const r: StatsRow = {
        name: s.name, unit: null, groupby: s.groupby, count: 2, sum: 2 * a + 1, min: a, max: a + 1, avg: a + 0.5, stddev: 0.5,
        duration_start: new Date(start + 13_000).toISOString(), duration_end: new Date(start + 43_000).toISOString(), duration: 30,
        period: 60, period_start: ps, period_end: pe, topic: 'metrics', partition: i % 4,
      };
      // Two points a window, as in the default workload with PERCENTILES set.
      if (sketch) r.sketch = { a: 0.01, pos: { [String(Math.ceil(Math.log(a) / Math.log(1.01 / 0.99)))]: 1, [String(Math.ceil(Math.log(a + 1) / Math.log(1.01 / 0.99)))]: 1 }, neg: {}, zero: 0, count: 2 };
      return r;
    });
    out.push({ rows, ndjson: () => '' });
  }
  return out;
}

// Version 1's statement, kept here as the baseline.
const V1_UPSERT = `
INSERT INTO streamstats_statistics (name, groupby_key, groupby, topic, partition, period_start, period_end, period, unit,
  count, sum, min, max, avg, m2, stddev, duration_start, duration_end, duration, sketch, updated_at)
SELECT * , now() FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::text[], $5::int[], $6::timestamptz[], $7::timestamptz[],
  $8::float8[], $9::text[], $10::int8[], $11::float8[], $12::float8[], $13::float8[], $14::float8[], $15::float8[], $16::float8[],
  $17::timestamptz[], $18::timestamptz[], $19::float8[], $20::jsonb[])
ON CONFLICT (name, groupby_key, topic, partition, period_start) DO UPDATE SET
  period_end = EXCLUDED.period_end, period = EXCLUDED.period, unit = EXCLUDED.unit, groupby = EXCLUDED.groupby,
  count = EXCLUDED.count, sum = EXCLUDED.sum, min = EXCLUDED.min, max = EXCLUDED.max, avg = EXCLUDED.avg,
  m2 = EXCLUDED.m2, stddev = EXCLUDED.stddev, duration_start = EXCLUDED.duration_start,
  duration_end = EXCLUDED.duration_end, duration = EXCLUDED.duration, sketch = EXCLUDED.sketch, updated_at = now()`;

function v1Columns(rows: readonly StatsRow[]): unknown[][] {
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

const SAVE_POSITION = `INSERT INTO streamstats_positions (group_id, topic, partition, next_offset, watermark_ms, applied_end)
VALUES ('bench', 'metrics', 0, $1, 0, $1) ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset`;

async function inTransaction(client: pg.ClientBase, position: number, body: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  await body();
  await client.query(SAVE_POSITION, [position]);
  await client.query('COMMIT');
}

async function main(): Promise<void> {
  const [baseUrl, path, batchText, sketchText] = process.argv.slice(2) as [string, WritePath, string, string];
  const n = Number(batchText);
  if (!baseUrl || !PATHS.includes(path) || !(n >= 1)) {
    process.stderr.write(`usage: pg-write.js BASE_URL ${PATHS.join('|')} BATCHES SKETCH(0|1)\n`);
    process.exit(2);
  }
  const schema = `ss_bench_${randomBytes(5).toString('hex')}`;
  const appName = `${schema}_w`;
  const url = withAppName(`${baseUrl}?options=${encodeURIComponent(`-c search_path=${schema}`)}`, appName);
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let sink: PostgresSink | null = null;
  try {
    if (path === 'v1-unnest') {
      await client.query(MIGRATIONS[0]!);
    } else {
      await migrate(client);
    }
    const data = batches(n, sketchText === '1');
    const refs = new SeriesRefs();
    const prepared = (b: RowBatch): PreparedRow[] => b.rows.map((row, index) => ({ index, row, series: refs.of(row.name, row.groupby, row.unit) }));
    const markStored = (rows: readonly PreparedRow[]): void => {
      for (const r of rows) r.series.stored = true;
    };
    if (path === 'sink' || path === 'sink-replay') sink = await PostgresSink.open(url, { groupId: 'bench', logger: pino({ level: 'silent' }) });
    const commit = (i: number) => ({ topic: 'metrics', partition: 0, point: { position: i, watermarkMs: 0, appliedEnd: i } });
    if (path === 'sink-replay') for (let i = 0; i < data.length; i++) await sink!.write(data[i]!, commit(i));
    if (path !== 'v1-unnest') await ensureStaging(client);
    if (path === 'copy-heap' || path === 'copy-pk') await client.query('ALTER TABLE streamstats_windows DISABLE TRIGGER USER');
    if (path === 'copy-heap') await client.query('ALTER TABLE streamstats_windows DROP CONSTRAINT streamstats_windows_pkey');
    const probe = await PgCostProbe.start(baseUrl, appName);
    const t0 = performance.now();
    for (let i = 0; i < data.length; i++) {
      const b = data[i]!;
      switch (path) {
        case 'v1-unnest':
          await inTransaction(client, i, async () => void (await client.query(V1_UPSERT, v1Columns(b.rows))));
          break;
        case 'v2-unnest':
        case 'v2-copy-upsert-text':
        case 'v2-copy-upsert':
        case 'v2-copy-insert-text':
        case 'v2-copy-insert':
        case 'copy-heap':
        case 'copy-pk': {
          const rows = prepared(b);
          const format = path.endsWith('-text') ? 'text' : 'binary';
          const write = path === 'v2-unnest' ? upsertUnnest : path.startsWith('v2-copy-upsert') ? upsertCopy : insertCopy;
          await inTransaction(client, i, async () => {
            await insertSeries(client, rows);
            await write(client, rows, format);
          });
          markStored(rows);
          break;
        }
        default:
          await sink!.write(b, commit(i));
      }
    }
    const seconds = (performance.now() - t0) / 1000;
    const cost = await probe.stop();
    const rows = n * NAMES * HOSTS;
    const size = await client.query<{ b: string; n: string }>(
      `SELECT (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r') AS b,
              (SELECT count(*) FROM streamstats_statistics) AS n`,
      [schema],
    );
    if (Number(size.rows[0]!.n) !== rows) throw new Error(`${path}: ${size.rows[0]!.n} rows stored, ${rows} expected`);
    const bytes = Number(size.rows[0]!.b);
    const relationBytesPerRow = Object.fromEntries((await relationSizes(url, schema)).map((r) => [r.relation, r.bytes / rows]));
    const out: PgWriteResult = {
      path, rows, seconds, rowsPerSecond: rows / seconds, bytes, bytesPerRow: bytes / rows,
      ...pgCostPerRow(cost, rows),
      relationBytesPerRow,
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
  } finally {
    await sink?.close();
    await client.end();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
