// Scenario 4c: the PostgreSQL sink. (1) Write paths side by side, each run a child process on a fresh
// schema (bench/child/pg-write.ts): version 1's unnest upsert against version 2's unnest upsert, COPY
// into staging + one upsert, COPY straight into the table, and PostgresSink.write itself, new rows and
// a replay; with bytes per row of each store. (2) The default workload end to end, SINK=postgres
// against a file sink, alternated.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { runChild, runCli, scratchDir } from '../lib/child.js';
import { alternate, ratio, variantTable, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Scenario } from '../lib/scenario.js';
import type { PgWriteResult, WritePath } from '../child/pg-write.js';

const BASE_URL = process.env.STREAMSTATS_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const POINTS = 690_000;

const LABELS: Readonly<Record<WritePath, string>> = {
  'v1-unnest': 'version 1: unnest upsert, wide rows (baseline)',
  'v2-unnest': 'version 2: unnest upsert',
  'v2-copy-upsert-text': 'version 2: COPY text to staging + upsert',
  'v2-copy-upsert': 'version 2: COPY binary to staging + upsert',
  'v2-copy-insert-text': 'version 2: COPY text into the table',
  'v2-copy-insert': 'version 2: COPY binary into the table',
  sink: 'PostgresSink.write (COPY, upsert on a replay)',
  'sink-replay': 'PostgresSink.write, replay (every row exists)',
};

function pathVariant(path: WritePath, batches: number, sketch: boolean): Variant {
  return {
    id: path,
    label: LABELS[path],
    config: { path, batches, rowsPerBatch: 4000, sketch: sketch ? 'yes' : 'no' },
    run: async () => {
      const r = await runChild<PgWriteResult>('pg-write', [BASE_URL, path, String(batches), sketch ? '1' : '0']);
      return { recordsPerSecond: r.rowsPerSecond, elapsedSeconds: r.seconds, peakRssBytes: r.maxRssBytes, extra: { bytesPerRow: r.bytesPerRow } };
    },
  };
}

function bytesTable(results: readonly VariantResult[]): string {
  return ['| variant | bytes per row (tables + indexes) |', '|---|---:|', ...results.map((r) => `| ${r.label} | ${fmt.int(r.extra['bytesPerRow']?.median ?? NaN)} |`)].join('\n');
}

async function withSchema<T>(body: (url: string) => Promise<T>): Promise<T> {
  const schema = `ss_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA ${schema}`);
    return await body(`${BASE_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`);
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

export const pgSinkScenario: Scenario = {
  id: 'pg-sink',
  order: 4.7,
  title: 'Scenario 4c: PostgreSQL sink write paths and the default workload into PostgreSQL',
  async run(ctx) {
    const batches = ctx.mode === 'quick' ? 30 : 87;
    const paths: WritePath[] = ['v1-unnest', 'v2-unnest', 'v2-copy-upsert-text', 'v2-copy-upsert', 'v2-copy-insert-text', 'v2-copy-insert', 'sink', 'sink-replay'];
    const plain = await alternate('pg-sink paths', paths.map((p) => pathVariant(p, batches, false)), ctx.protocol, ctx.log);
    const sketched = await alternate('pg-sink paths, sketches', (['v1-unnest', 'sink'] as const).map((p) => pathVariant(p, batches, true)), ctx.protocol, ctx.log);
    const scratch = scratchDir('pg-sink');
    let e2e: VariantResult[];
    try {
      const mk = (id: string, label: string, pgSink: boolean): Variant => ({
        id,
        label,
        config: { GEN_COUNT: POINTS, SINK: pgSink ? 'postgres://… (fresh schema)' : 'file' },
        run: async () => {
          const go = (vars: Record<string, string>) => runCli({ GEN_COUNT: String(POINTS), ...vars }, scratch.dir);
          const r = pgSink ? await withSchema((url) => go({ SINK: url })) : await go({});
          return { recordsPerSecond: r.summary.recordsPerSecond, elapsedSeconds: r.summary.elapsedSeconds, peakRssBytes: r.maxRssBytes, extra: { rows: r.summary.rows } };
        },
      });
      e2e = await alternate('pg-sink e2e', [mk('postgres', 'SINK=postgres', true), mk('file', 'SINK=file', false)], ctx.protocol, ctx.log);
    } finally {
      scratch.remove();
    }
    const groups = [
      { id: 'paths', title: 'write paths, no sketches', variants: plain, baseline: 'v1-unnest' },
      { id: 'paths-sketch', title: 'write paths, with sketches', variants: sketched, baseline: 'v1-unnest' },
      { id: 'e2e', title: 'default workload end to end', variants: e2e, baseline: 'file' },
    ];
    const v1 = variant(groups[0]!, 'v1-unnest');
    const sink = variant(groups[0]!, 'sink');
    const pgRun = variant(groups[2]!, 'postgres');
    const fileRun = variant(groups[2]!, 'file');
    const markdown = [
      `## ${this.title}`,
      '',
      `${batches} emissions of 4,000 rows in the default workload's shape (1000 names x 4 hosts, 12 Monasca dimensions, one window of every series per emission), ` +
        'each in one transaction with a commit point, one child process and a fresh schema per run (`bench/child/pg-write.ts`). Records/s here are rows/s.',
      '',
      variantTable(plain, v1),
      '',
      bytesTable(plain),
      '',
      'The same with a two-bucket quantile sketch in every row (what `PERCENTILES` stores on the default workload):',
      '',
      variantTable(sketched, variant(groups[1]!, 'v1-unnest')),
      '',
      bytesTable(sketched),
      '',
      `The default workload (${fmt.int(POINTS)} points, ${fmt.int(pgRun.extra['rows']?.median ?? NaN)} rows) end to end, SINK=postgres (a fresh schema per run) against a file sink, alternated:`,
      '',
      variantTable(e2e, fileRun),
      '',
    ].join('\n');
    return {
      config: { rowsPerBatch: 4000, batches, GEN_COUNT: POINTS },
      groups,
      markdown,
      headline: [
        `pg-sink: PostgresSink.write ${fmt.int(sink.recordsPerSecond.median)} rows/s vs version 1 ${fmt.int(v1.recordsPerSecond.median)} rows/s (${fmt.ratio(ratio(sink, v1))}); ` +
          `${fmt.int(sink.extra['bytesPerRow']?.median ?? NaN)} vs ${fmt.int(v1.extra['bytesPerRow']?.median ?? NaN)} bytes/row; ` +
          `default workload ${fmt.secs(pgRun.elapsedSeconds.median)} s into PostgreSQL vs ${fmt.secs(fileRun.elapsedSeconds.median)} s to a file (${fmt.ratio(ratio(pgRun, fileRun))})`,
      ],
    };
  },
};
