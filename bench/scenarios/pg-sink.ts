// Scenario 4c: the PostgreSQL sink. (1) Write paths side by side, each run a child process on a fresh
// schema (bench/child/pg-write.ts): version 1's unnest upsert against version 2's unnest upsert, COPY
// into staging + one upsert, COPY straight into the table (also without its triggers, and without its
// primary key: what the heap alone costs), and PostgresSink.write itself, new rows and a replay; with
// client CPU, server CPU and WAL per row and the bytes per row of each table and index. (2) The default
// workload end to end, SINK=postgres against a file sink, alternated. (3) Kafka -> PostgreSQL against
// Kafka -> /dev/null on a topic of seed-000 points (kafka-e2e's (h) and (c)), with the same costs per row.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { runChild, runCli, scratchDir } from '../lib/child.js';
import { alternate, ratio, variantTable, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Scenario } from '../lib/scenario.js';
import type { PgWriteResult, WritePath } from '../child/pg-write.js';
import { PG_URL } from '../lib/outputs.js';
import { PgCostProbe, pgCostPerRow } from '../lib/pg-cost.js';
import { createTopic, deleteTopic, loadWorkload, requireBroker, runEngine, runEngineToPostgres, uid, type Workload } from './kafka-e2e.js';

const BASE_URL = process.env.STREAMSTATS_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
const POINTS = 690_000;

const LABELS: Readonly<Record<WritePath, string>> = {
  'v1-unnest': 'version 1: unnest upsert, wide rows (baseline)',
  'v2-unnest': 'version 2: unnest upsert',
  'v2-copy-upsert-text': 'version 2: COPY text to staging + upsert',
  'v2-copy-upsert': 'version 2: COPY binary to staging + upsert',
  'v2-copy-insert-text': 'version 2: COPY text into the table',
  'v2-copy-insert': 'version 2: COPY binary into the table',
  'copy-pk': 'COPY binary into the table, its triggers off (no rollup upkeep)',
  'copy-heap': 'COPY binary into the table, triggers off, no primary key (the heap alone)',
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
      const relations = Object.fromEntries(Object.entries(r.relationBytesPerRow).map(([k, v]) => [`rel:${k}`, v]));
      return {
        recordsPerSecond: r.rowsPerSecond, elapsedSeconds: r.seconds, peakRssBytes: r.maxRssBytes,
        extra: { bytesPerRow: r.bytesPerRow, clientCpuUsPerRow: r.clientCpuUsPerRow, clientMainCpuUsPerRow: r.clientMainCpuUsPerRow, serverCpuUsPerRow: r.serverCpuUsPerRow, walBytesPerRow: r.walBytesPerRow, ...relations },
      };
    },
  };
}

const med = (r: VariantResult, k: string): number => r.extra[k]?.median ?? NaN;
const us = (x: number): string => x.toFixed(1);

/** Both sides of each write path per row, and what a stored row takes. */
function costTable(results: readonly VariantResult[]): string {
  return [
    '| variant | client CPU us/row (main thread) | server backend CPU us/row | WAL bytes/row | bytes per stored row (tables + indexes) |',
    '|---|---:|---:|---:|---:|',
    ...results.map((r) => `| ${r.label} | ${us(med(r, 'clientCpuUsPerRow'))} | ${us(med(r, 'serverCpuUsPerRow'))} | ${fmt.int(med(r, 'walBytesPerRow'))} | ${fmt.int(med(r, 'bytesPerRow'))} |`),
  ].join('\n');
}

/** Bytes per stored row of each table (heap + TOAST) and index of one variant's store. */
function relationTable(r: VariantResult): string {
  const rels = Object.keys(r.extra).filter((k) => k.startsWith('rel:') && med(r, k) >= 0.5);
  return ['| relation | bytes per stored row |', '|---|---:|', ...rels.map((k) => `| \`${k.slice(4)}\` | ${med(r, k).toFixed(1)} |`)].join('\n');
}

const KAFKA_PARTITIONS = 4;

/**
 * Records/s to the last row beside CPU per row, each variant: the engine process (every thread, start
 * to exit), its PostgreSQL backends, both; and the sink's own, (h) less (c) of the same round.
 */
function kafkaCpuTable(file: VariantResult, pgRun: VariantResult): string {
  const perRound = (k: string): number[] => pgRun.samples.map((x, i) => x.extra![k]! - file.samples[i]!.extra![k]!);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const row = (r: VariantResult): string =>
    `| ${r.label} | ${fmt.int(r.recordsPerSecond.median)} | ${fmt.int(r.recordsPerSecond.min)}-${fmt.int(r.recordsPerSecond.max)} | ${us(med(r, 'cpuUsPerRow'))} | ${us(med(r, 'serverCpuUsPerRow'))} | ${us(med(r, 'cpuUsPerRow') + med(r, 'serverCpuUsPerRow'))} |`;
  const own = perRound('cpuUsPerRow');
  return [
    '| variant | records/s to the last row (median) | range | engine CPU us/row (all threads) | PostgreSQL backends CPU us/row | both |',
    '|---|---:|---:|---:|---:|---:|',
    row(file),
    row(pgRun),
    `| the PostgreSQL sink's own: (h) less (c), median of rounds | | | ${us(median(own))} (${us(Math.min(...own))}-${us(Math.max(...own))}) | | |`,
  ].join('\n');
}

/** (3): one topic, loaded once; (c) Kafka -> /dev/null and (h) Kafka -> PostgreSQL alternated, with their costs per row. */
async function kafkaGroup(n: number, protocol: { warmup: number; runs: number }, log: (l: string) => void, dir: string): Promise<{ results: VariantResult[]; workload: Workload }> {
  await requireBroker();
  const topic = uid('ss-bench-pg');
  await createTopic(topic, KAFKA_PARTITIONS);
  try {
    log(`  pg-sink: loading ${fmt.int(n)} messages into ${topic}`);
    // Flush points on time close every window by the watermark in both variants: the last rows are
    // committed then, not IDLE_FLUSH_SECONDS after the last record.
    const workload = await loadWorkload(topic, n, KAFKA_PARTITIONS);
    log(`  pg-sink: event times from ${new Date(workload.startMs).toISOString()}, flush points at ${new Date(workload.flushMs).toISOString()}; ${fmt.int(workload.rows)} rows a run`);
    const toFile: Variant = {
      id: 'kafka-file',
      label: '(c) SOURCE=kafka SINK=file:/dev/null',
      config: { SOURCE: 'kafka', SINK: 'file:/dev/null', messages: n },
      run: async () => {
        const probe = await PgCostProbe.start(PG_URL, 'none', { clientParent: process.pid });
        const r = await runEngine(topic, n, dir, {}, workload);
        const cost = pgCostPerRow(await probe.stop(), r.rows);
        return {
          recordsPerSecond: n / r.firstToRows, elapsedSeconds: r.firstToRows, peakRssBytes: r.maxRssBytes,
          extra: { firstToRowsSeconds: r.firstToRows, recordsAppliedSeconds: r.firstToLast, storedRows: r.rows, cpuSeconds: r.cpuSeconds, cpuUsPerRow: (r.cpuSeconds * 1e6) / r.rows, ...cost },
        };
      },
    };
    const toPg: Variant = {
      id: 'kafka-postgres',
      label: '(h) SOURCE=kafka SINK=postgres://... (fresh schema)',
      config: { SOURCE: 'kafka', SINK: 'postgres://… (fresh schema)', messages: n },
      run: () => runEngineToPostgres(topic, n, dir, workload),
    };
    return { results: await alternate('pg-sink kafka', [toFile, toPg], protocol, log), workload };
  } finally {
    await deleteTopic(topic);
  }
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
    const paths: WritePath[] = ['v1-unnest', 'v2-unnest', 'v2-copy-upsert-text', 'v2-copy-upsert', 'v2-copy-insert-text', 'v2-copy-insert', 'copy-pk', 'copy-heap', 'sink', 'sink-replay'];
    const plain = await alternate('pg-sink paths', paths.map((p) => pathVariant(p, batches, false)), ctx.protocol, ctx.log);
    const sketched = await alternate('pg-sink paths, sketches', (['v1-unnest', 'sink'] as const).map((p) => pathVariant(p, batches, true)), ctx.protocol, ctx.log);
    const scratch = scratchDir('pg-sink');
    let e2e: VariantResult[];
    let kafka: VariantResult[];
    let workload: Workload;
    // 1,000,000 in both modes, kafka-e2e's topic. Quick mode: 1 warm-up + 3 rounds.
    const kafkaMessages = Number(process.env.STREAMSTATS_BENCH_PG_KAFKA_MESSAGES ?? 1_000_000);
    const kafkaProtocol = ctx.mode === 'quick' ? { warmup: 1, runs: Math.min(3, ctx.protocol.runs) } : ctx.protocol;
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
      ({ results: kafka, workload } = await kafkaGroup(kafkaMessages, kafkaProtocol, ctx.log, scratch.dir));
    } finally {
      scratch.remove();
    }
    const groups = [
      { id: 'paths', title: 'write paths, no sketches', variants: plain, baseline: 'v1-unnest' },
      { id: 'paths-sketch', title: 'write paths, with sketches', variants: sketched, baseline: 'v1-unnest' },
      { id: 'e2e', title: 'default workload end to end', variants: e2e, baseline: 'file' },
      { id: 'kafka', title: 'Kafka -> PostgreSQL against Kafka -> /dev/null', variants: kafka, baseline: 'kafka-file' },
    ];
    const v1 = variant(groups[0]!, 'v1-unnest');
    const sink = variant(groups[0]!, 'sink');
    const pgRun = variant(groups[2]!, 'postgres');
    const fileRun = variant(groups[2]!, 'file');
    const kFile = variant(groups[3]!, 'kafka-file');
    const kPg = variant(groups[3]!, 'kafka-postgres');
    const kRatio = ratio(kPg, kFile);
    const sinkPath = sink;
    const markdown = [
      `## ${this.title}`,
      '',
      `${batches} emissions of 4,000 rows in the default workload's shape (1000 names x 4 hosts, 12 Monasca dimensions, one window of every series per emission), ` +
        'each in one transaction with a commit point, one child process and a fresh schema per run (`bench/child/pg-write.ts`). Records/s here are rows/s.',
      '',
      variantTable(plain, v1),
      '',
      'Each side per row (medians; `bench/lib/pg-cost.ts`): the client is the child process (its main thread runs the driver and builds the COPY data), ' +
        "the server is the CPU of the backend(s) serving its connections (`/proc/<pid>/stat`, found by application_name), WAL is the difference of `pg_current_wal_lsn()` over the timed part (the whole server's). " +
        'The paths without triggers or without the primary key split the server side: heap, index upkeep, the statement triggers that keep rollups exact, and (`PostgresSink.write`) the series, the position and the hourly rollups.',
      '',
      costTable(plain),
      '',
      `What a stored row takes, table by table and index by index (${LABELS.sink}):`,
      '',
      relationTable(sinkPath),
      '',
      'The same with a two-bucket quantile sketch in every row (what `PERCENTILES` stores on the default workload):',
      '',
      variantTable(sketched, variant(groups[1]!, 'v1-unnest')),
      '',
      costTable(sketched),
      '',
      `The default workload (${fmt.int(POINTS)} points, ${fmt.int(pgRun.extra['rows']?.median ?? NaN)} rows) end to end, SINK=postgres (a fresh schema per run) against a file sink, alternated:`,
      '',
      variantTable(e2e, fileRun),
      '',
      `Kafka in, statistics out: ${fmt.int(kafkaMessages)} seed-000 points on ${KAFKA_PARTITIONS} partitions (event times from ${new Date(workload.startMs).toISOString()}), ` +
        `then ${workload.flushPoints} flush points an hour later in event time (as kafka-e2e: on time, so the watermark closes every workload window and no row waits for the idle flush), ` +
        `each run a fresh engine and consumer group, both variants timed alike from the first message to the last of the ${fmt.int(workload.rows)} rows out ` +
        '(`streamstats_windows_emitted_total`, counted after the sink\'s write resolved: for PostgreSQL, after its transaction committed); kafka-e2e\'s (c) and (h). ' +
        'A run fails unless the engine applied every record and flush point with none late or refused.',
      '',
      variantTable(kafka, kFile),
      '',
      kafkaCpuTable(kFile, kPg),
      '',
      costTable(kafka),
      '',
      `Kafka -> PostgreSQL / Kafka -> /dev/null: **${fmt.ratio(kRatio)}** (records/s, ratio of medians; target >= 0.5x: ${kRatio >= 0.5 ? 'met' : 'not met'}).`,
      '',
    ].join('\n');
    return {
      config: { rowsPerBatch: 4000, batches, GEN_COUNT: POINTS, kafkaMessages },
      groups,
      markdown,
      headline: [
        `pg-sink: PostgresSink.write ${fmt.int(sink.recordsPerSecond.median)} rows/s vs version 1 ${fmt.int(v1.recordsPerSecond.median)} rows/s (${fmt.ratio(ratio(sink, v1))}); ` +
          `${fmt.int(sink.extra['bytesPerRow']?.median ?? NaN)} vs ${fmt.int(v1.extra['bytesPerRow']?.median ?? NaN)} bytes/row; ` +
          `default workload ${fmt.secs(pgRun.elapsedSeconds.median)} s into PostgreSQL vs ${fmt.secs(fileRun.elapsedSeconds.median)} s to a file (${fmt.ratio(ratio(pgRun, fileRun))})`,
        `pg-sink Kafka ${fmt.int(kafkaMessages)}: -> PostgreSQL ${fmt.int(kPg.recordsPerSecond.median)} vs -> /dev/null ${fmt.int(kFile.recordsPerSecond.median)} rec/s (${fmt.ratio(kRatio)}); ` +
          `per row: engine ${us(med(kPg, 'clientCpuUsPerRow'))} vs ${us(med(kFile, 'clientCpuUsPerRow'))} us CPU, PostgreSQL backends ${us(med(kPg, 'serverCpuUsPerRow'))} us CPU, WAL ${fmt.int(med(kPg, 'walBytesPerRow'))} B, ${fmt.int(med(kPg, 'bytesPerRow'))} B stored`,
      ],
    };
  },
};
