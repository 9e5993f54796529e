// Scenario 3c: scaling by thread count, on any machine unchanged. WORKER_THREADS from 1 to the usable
// cores (the cgroup quota counts, as WORKER_THREADS=auto reads it) against in-thread, on the default
// job and on the Ceilometer file job, with each kind of thread's CPU per record. The main thread's
// work per record is what no number of workers can share, so total CPU per record / main-thread CPU
// per record is the most the pool could ever give over one thread: the ceiling a machine with more
// cores would show. Start-up is measured by a one-record run of the same variant in the same rounds
// and subtracted, so the per-record figures are the stream's, not the process's.
// Both lane states run: LANE_STATE=main (workers decode, the main thread holds the windows) at 0 (in
// thread) to the usable cores, and LANE_STATE=worker (each lane owned by a worker, the default job's
// points generated there; the main thread moves bytes) at 1 to the usable cores, whose ceiling is the
// one the issue's targets are about.
// Alone: node dist/bench/scenarios/scaling.js [ROUNDS]   (env: GEN_COUNT, SCALING_MAX_THREADS)
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { detectCpus } from '../../src/config/cpus.js';
import { ensureCeilometerFile } from '../lib/ceilometer-data.js';
import { scratchDir } from '../lib/child.js';
import { alternate, type Protocol, type Sample, type Variant, type VariantResult } from '../lib/measure.js';
import { ROOT, type Group, type Scenario, type ScenarioOutput } from '../lib/scenario.js';
import { THREAD_KINDS } from '../lib/proc-threads.js';
import { fmt } from '../lib/stats.js';
import { timedCli, type Timed } from '../lib/timed.js';


interface Job {
  readonly id: string;
  readonly title: string;
  readonly records: number;
  /** The job's variables; `tiny` the same job on one record, for its start-up. */
  readonly vars: Record<string, string>;
  readonly tiny: Record<string, string>;
}

function sampleOf(t: Timed, records: number, recordsPerSecond: number, elapsedSeconds: number): Sample {
  const extra: Record<string, number> = { records, cpuS: t.cpuSeconds, cores: t.cpuSeconds / t.wallSeconds };
  for (const [k, name] of Object.entries(THREAD_KINDS)) extra[`${k}S`] = t.threads[name] ?? 0;
  return { recordsPerSecond, elapsedSeconds, peakRssBytes: t.maxRssBytes, extra };
}

type LaneState = 'main' | 'worker';

/** A variant's id: `job-N` / `startup-N` for LANE_STATE=main (as recorded before), `job-worker-N` / `startup-worker-N`. */
function variantId(tiny: boolean, lanes: LaneState, threads: number): string {
  return `${tiny ? 'startup' : 'job'}-${lanes === 'worker' ? 'worker-' : ''}${threads}`;
}

function variantFor(job: Job, threads: number, tiny: boolean, dir: string, lanes: LaneState = 'main'): Variant {
  const vars = { ...(tiny ? job.tiny : job.vars), WORKER_THREADS: String(threads), LANE_STATE: lanes };
  const label = `${threads === 0 ? 'in-thread (WORKER_THREADS=0)' : `WORKER_THREADS=${threads}`}${lanes === 'worker' ? ' LANE_STATE=worker' : ''}`;
  return {
    id: variantId(tiny, lanes, threads),
    label: tiny ? `${label}, one record (start-up)` : label,
    config: { ...vars, WORKER_THREADS: threads },
    run: async () => {
      const { t, summary } = await timedCli(ROOT, vars, dir);
      const expected = tiny ? 1 : job.records;
      if (summary.ok !== expected) throw new Error(`scaling ${job.id} ${label}: ${summary.ok} of ${expected} records accepted`);
      return sampleOf(t, summary.records, summary.recordsPerSecond, summary.elapsedSeconds);
    },
  };
}

const med = (v: VariantResult, k: string): number => v.extra[k]?.median ?? NaN;

export interface ScalingRow {
  readonly laneState: LaneState;
  readonly threads: number;
  readonly recordsPerSecond: number;
  readonly vsInThread: number;
  /** us of CPU per record, start-up subtracted. */
  readonly us: Readonly<Record<keyof typeof THREAD_KINDS | 'all', number>>;
  readonly cores: number;
  /** all / main: the most any number of workers could give over one thread. */
  readonly ceiling: number;
}

/** Per thread count: CPU per record by kind with the start-up run's CPU taken off. */
export function scalingRows(results: readonly VariantResult[], records: number): ScalingRow[] {
  const byId = new Map(results.map((r) => [r.id, r]));
  const inThread = byId.get('job-0');
  const rows: ScalingRow[] = [];
  for (const r of results) {
    const m = /^job-(worker-)?(\d+)$/.exec(r.id);
    if (m === null) continue;
    const laneState: LaneState = m[1] === undefined ? 'main' : 'worker';
    const threads = Number(m[2]);
    const s = byId.get(variantId(true, laneState, threads));
    const net = (k: string): number => ((med(r, k) - (s === undefined ? 0 : med(s, k))) * 1e6) / records;
    const us = { main: net('mainS'), workers: net('workersS'), v8: net('v8S'), libuv: net('libuvS'), all: net('cpuS') };
    rows.push({
      laneState,
      threads,
      recordsPerSecond: r.recordsPerSecond.median,
      vsInThread: inThread === undefined ? NaN : r.recordsPerSecond.median / inThread.recordsPerSecond.median,
      us,
      cores: med(r, 'cores'),
      ceiling: us.main > 0 ? us.all / us.main : Infinity,
    });
  }
  return rows;
}

function table(rows: readonly ScalingRow[]): string {
  const f = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');
  return [
    '| LANE_STATE | WORKER_THREADS | median records/s | vs in-thread | main us/record | workers | V8 helpers | libuv | all | cores busy | ceiling (all / main) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.laneState} | ${r.threads === 0 ? '0 (in-thread)' : r.threads} | ${fmt.int(r.recordsPerSecond)} | ${fmt.ratio(r.vsInThread)} | ${f(r.us.main)} | ${f(r.us.workers)} | ${f(r.us.v8)} | ${f(r.us.libuv)} | ${f(r.us.all)} | ${f(r.cores)} | ${Number.isFinite(r.ceiling) ? `${r.ceiling.toFixed(1)}x` : '-'} |`),
  ].join('\n');
}

export async function runScaling(protocol: Protocol, title: string, log: (l: string) => void, quick: boolean): Promise<ScenarioOutput> {
  const cpus = detectCpus();
  const max = Number(process.env['SCALING_MAX_THREADS'] ?? cpus.usable);
  const threadCounts = [0, ...Array.from({ length: Math.max(1, max) }, (_, i) => i + 1)];
  const genCount = Number(process.env['GEN_COUNT'] ?? (quick ? 200_000 : 690_000));
  const ceilSamples = quick ? 1_000_000 : 3_000_000;
  const file = await ensureCeilometerFile({ samples: ceilSamples, meters: 10, resources: 1000, intervalSeconds: 60, seed: 1 });
  const scratch = scratchDir('scaling');
  const tinyFile = join(scratch.dir, 'one.ndjson');
  writeFileSync(tinyFile, `${JSON.stringify({ counter_name: 'cpu_util', counter_type: 'gauge', counter_unit: '%', counter_volume: 1, timestamp: '2024-01-01T00:00:00.000000', resource_id: 'r', project_id: 'p', user_id: 'u' })}\n`);
  const ceil = { FORMAT: 'ceilometer', GROUP_BY: 'resource_id', WINDOW_SECONDS: '3600' };
  const jobs: Job[] = [
    { id: 'default-job', title: `default job (generator, ${fmt.int(genCount)} seed-000 points, rows to a file)`, records: genCount, vars: { GEN_COUNT: String(genCount) }, tiny: { GEN_COUNT: '1' } },
    { id: 'ceilometer-file', title: `Ceilometer file job (${fmt.int(ceilSamples)} samples, GROUP_BY=resource_id WINDOW_SECONDS=3600)`, records: ceilSamples, vars: { ...ceil, SOURCE: `file:${file.path}` }, tiny: { ...ceil, SOURCE: `file:${tinyFile}` } },
  ];
  const groups: Group[] = [];
  const sections: string[] = [];
  const headline: string[] = [];
  try {
    for (const job of jobs) {
      const variants = [
        ...threadCounts.flatMap((n) => [variantFor(job, n, false, scratch.dir), variantFor(job, n, true, scratch.dir)]),
        // Lanes owned by workers need one at least.
        ...threadCounts.filter((n) => n >= 1).flatMap((n) => [variantFor(job, n, false, scratch.dir, 'worker'), variantFor(job, n, true, scratch.dir, 'worker')]),
      ];
      const results = await alternate(`scaling ${job.id}`, variants, protocol, log);
      groups.push({ id: job.id, title: job.title, variants: results, baseline: 'job-0' });
      const rows = scalingRows(results, job.records);
      sections.push(`**${job.title}**`, '', table(rows), '');
      for (const lanes of ['main', 'worker'] as const) {
        const mine = rows.filter((r) => r.laneState === lanes);
        const one = mine.find((r) => r.threads === 1);
        const best = mine.reduce((a, b) => (b.recordsPerSecond > a.recordsPerSecond ? b : a));
        headline.push(`scaling ${job.id} LANE_STATE=${lanes}: best ${fmt.int(best.recordsPerSecond)} rec/s at WORKER_THREADS=${best.threads} (${fmt.ratio(best.vsInThread)} in-thread); main ${one?.us.main.toFixed(2)} us/rec of ${one?.us.all.toFixed(2)} with one worker, ceiling ${one?.ceiling.toFixed(1)}x`);
      }
    }
  } finally {
    scratch.remove();
  }
  const markdown = [
    `## ${title}`,
    '',
    `Thread counts from in-thread to the usable cores (${cpus.usable} here: ${cpus.source}; \`SCALING_MAX_THREADS\` overrides), alternated round by round, ` +
      'with the lanes\' state on the main thread (`LANE_STATE=main`, from in-thread) and in the workers that own them (`LANE_STATE=worker`, from one worker; the default job\'s points are generated there). ' +
      'CPU is user + system per record by kind of thread (`bench/lib/thread-cpu-preload.ts`), with the CPU of a one-record run of the same variant ' +
      '(start-up, measured in the same rounds) subtracted. The **ceiling** is all CPU per record over the main thread\'s: whatever the cores, the main ' +
      'thread does that share of the work alone, so the pool can never be faster than that multiple of one thread. On a larger machine the same ' +
      'command shows the measured scaling beside it.',
    '',
    ...sections,
    `${protocol.warmup} warm-up + ${protocol.runs} measured rounds, medians.`,
    '',
  ].join('\n');
  return {
    config: { usableCpus: cpus.usable, cpuSource: cpus.source, threads: threadCounts.join(','), GEN_COUNT: genCount, ceilometerSamples: ceilSamples, 'protocol.warmup': protocol.warmup, 'protocol.runs': protocol.runs },
    groups,
    markdown,
    headline,
  };
}

export const scalingScenario: Scenario = {
  id: 'scaling',
  order: 3.6,
  title: 'Scenario 3c: scaling by WORKER_THREADS, CPU per record by thread, and the ceiling',
  async run(ctx) {
    const protocol: Protocol = ctx.mode === 'quick' ? { warmup: 1, runs: 3 } : ctx.protocol;
    return runScaling(protocol, this.title, ctx.log, ctx.mode === 'quick');
  },
};

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const runs = Number(process.argv[2] ?? 3);
  const r = await runScaling({ warmup: 1, runs }, 'Scaling', (l) => process.stderr.write(`${l}\n`), true);
  process.stdout.write(`${r.markdown}\n`);
}
