// Scenario 3b, the ratio run: the default job (generator, 690,000 seed-000 points, rows to a
// file) with the worker pool, in-thread (WORKER_THREADS=0), and as the single-threaded whole-job
// baseline (baseline-job.ts), plus the same job of a base commit built side by side in this run
// (BASE_COMMIT=<rev>, default 49b6812, the engine before its CPU per record was halved; BASE_TREE=/path for a tree built
// already; BASE_COMMIT=none for no base). Every run is a fresh process under /usr/bin/time; the
// variants alternate round by round and only medians are compared. Records/s is the program's own
// (elapsed from its pipeline start); CPU is user + system of the whole process (all threads), per record.
// Alone: node dist/bench/scenarios/throughput.js [ROUNDS]   (env: BASE_COMMIT, BASE_TREE, GEN_COUNT)
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommit, givenTree, type BaseTree } from '../lib/base-tree.js';
import { scratchDir } from '../lib/child.js';
import { alternate, type Protocol, type Variant, type VariantResult } from '../lib/measure.js';
import { NODE, THREAD_CPU, threadSample, timed, timedCli } from '../lib/timed.js';
import { ROOT, variant, type Group, type Scenario } from '../lib/scenario.js';
import { fmt } from '../lib/stats.js';

const POINTS = 690_000;
/** The engine before its CPU per record was halved: the "before" of the targets below. */
export const DEFAULT_BASE_COMMIT = '49b6812';
const TARGETS = { poolVsInThread: 1.7, poolVsBaseline: 3 };

function cli(tree: string, id: string, label: string, vars: Record<string, string>, count: number, dir: string): Variant {
  return {
    id,
    label,
    config: { ...vars, GEN_COUNT: count, tree: tree === ROOT ? 'this tree' : 'base commit' },
    run: async () => {
      const { t, summary: s } = await timedCli(tree, { GEN_COUNT: String(count), ...vars }, dir, join(dir, `${id}.ndjson`));
      if (s.ok !== count) throw new Error(`${id}: ${s.ok} of ${count} records accepted`);
      return threadSample(s.records, s.recordsPerSecond, s.elapsedSeconds, t);
    },
  };
}

function baseline(count: number, dir: string): Variant {
  return {
    id: 'baseline',
    label: 'single-threaded whole-job baseline (bench/scenarios/baseline-job.ts)',
    config: { GEN_COUNT: count },
    run: async () => {
      const t = await timed([NODE, ...THREAD_CPU, join(ROOT, 'dist/bench/scenarios/baseline-job.js'), join(dir, 'baseline.ndjson'), String(count)], {});
      const j = JSON.parse(t.stdout) as { records: number; recordsPerSecond: number; elapsedSeconds: number };
      return threadSample(j.records, j.recordsPerSecond, j.elapsedSeconds, t);
    },
  };
}

function baseTree(log: (l: string) => void): BaseTree | null {
  const given = process.env['BASE_TREE'];
  if (given !== undefined && given !== '') return givenTree(given);
  const rev = process.env['BASE_COMMIT'] ?? DEFAULT_BASE_COMMIT;
  if (rev === '' || rev === 'none') return null;
  return buildCommit(rev, log);
}

const cpu = (v: VariantResult): number => v.extra['cpuUsPerRecord']?.median ?? NaN;
const ex = (v: VariantResult, k: string): string => (v.extra[k]?.median ?? NaN).toFixed(2);
const cpus = availableParallelism();
const rps = (v: VariantResult): number => v.recordsPerSecond.median;
const met = (x: number, target: number): string => `${fmt.ratio(x)} (target ${target}x: **${x >= target ? 'met' : 'not met'}**)`;

function table(results: readonly VariantResult[], base: VariantResult): string {
  const rows = results.map((r) => {
    const s = r.recordsPerSecond;
    return `| ${r.label} | ${fmt.int(s.median)} | ${fmt.int(s.min)} | ${fmt.int(s.max)} | ${fmt.ratio(s.median / rps(base))} | ${cpu(r).toFixed(2)} | ${fmt.ratio(cpu(r) / cpu(base))} | ${fmt.mib(r.peakRssBytes.max)} |`;
  });
  return [
    '| variant | median records/s | min | max | records/s vs baseline | median CPU us/record (all threads) | CPU vs baseline | peak RSS MiB |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

export interface ThroughputOutcome {
  readonly group: Group;
  readonly base: BaseTree | null;
  readonly markdown: string;
  readonly headline: string;
}

export async function runThroughput(protocol: Protocol, count: number, title: string, log: (l: string) => void): Promise<ThroughputOutcome> {
  const scratch = scratchDir('throughput');
  const base = baseTree(log);
  try {
    const variants: Variant[] = [
      cli(ROOT, 'pool', 'worker pool (WORKER_THREADS=auto)', {}, count, scratch.dir),
      cli(ROOT, 'in-thread', 'in-thread (WORKER_THREADS=0)', { WORKER_THREADS: '0' }, count, scratch.dir),
      baseline(count, scratch.dir),
    ];
    if (base !== null) {
      variants.push(cli(base.dir, 'base-pool', `base commit ${base.commit}, worker pool`, {}, count, scratch.dir));
      variants.push(cli(base.dir, 'base-in-thread', `base commit ${base.commit}, in-thread (WORKER_THREADS=0)`, { WORKER_THREADS: '0' }, count, scratch.dir));
    }
    // The load other work puts on the machine, before and after: it moves records/s (and CPU per record) a lot.
    const loadBefore = loadavg()[1]!;
    const results = await alternate('throughput', variants, protocol, log);
    const loadAfter = loadavg()[1]!;
    const group: Group = { id: 'default-job', title: 'Default job: pool, in-thread, whole-job baseline, base commit', variants: results, baseline: 'baseline' };
    const p = variant(group, 'pool');
    const t = variant(group, 'in-thread');
    const b = variant(group, 'baseline');
    const lines = [
      `## ${title}`,
      '',
      `The default job (\`npx streamstats\` with nothing set: the generator's ${fmt.int(count)} seed-000 Monasca points, one-minute windows, rows to a file) ` +
        'with the worker pool, in-thread, and as the single-threaded whole-job baseline (`bench/scenarios/baseline-job.ts`: the same messages, ' +
        'JSON.parse, name + sorted dimensions keyed by `JSON.stringify`, one accumulator per (series, window), the same rows to a file, on one thread; ' +
        'no validation, dead letters, metrics or commits).' +
        (base === null ? '' : ` The same job of base commit ${base.commit} ("${base.subject}") runs side by side: built by the scenario itself into a temporary worktree ` +
          '(`BASE_COMMIT=<rev>`, default 49b6812, the engine before its CPU per record was halved).') +
        ' CPU is user + system of the whole process (all threads, `/usr/bin/time`) per record: on a shared 2-core machine it is much steadier than records/s.',
      '',
      table(results, b),
      '',
      '**Targets** (ratios of median records/s in this run):',
      '',
      `- pool / in-thread: ${met(rps(p) / rps(t), TARGETS.poolVsInThread)}`,
      `- pool / single-threaded whole-job baseline: ${met(rps(p) / rps(b), TARGETS.poolVsBaseline)}`,
      `- CPU per record, pool / baseline: ${fmt.ratio(cpu(p) / cpu(b))}; in-thread / baseline: ${fmt.ratio(cpu(t) / cpu(b))}`,
      '',
      '**Where the CPU goes** (us per record by kind of thread, `bench/lib/thread-cpu-preload.ts`; medians): main thread, decode workers, ' +
        "V8's helper threads (concurrent and parallel GC, background compilation) and libuv's (the file writes), and the cores the run kept busy " +
        '(process CPU / wall time, start to exit).',
      '',
      '| variant | main | workers | V8 helpers | libuv | all | cores busy |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...results.map((r) => `| ${r.label} | ${ex(r, 'mainUs')} | ${ex(r, 'workerUs')} | ${ex(r, 'v8Us')} | ${ex(r, 'libuvUs')} | ${cpu(r).toFixed(2)} | ${ex(r, 'cores')} |`),
      '',
      `In-thread keeps ${ex(t, 'cores')} cores busy by itself (V8's and libuv's threads work beside its one JavaScript thread), so on ` +
        `${cpus} cores no split of the work can take the pool past ${fmt.ratio(cpus / (t.extra['cores']?.median ?? NaN))} in-thread, ` +
        'even with a free hand-off between the threads.',
    ];
    let headline = `throughput: pool ${fmt.int(rps(p))} rec/s (${cpu(p).toFixed(2)} us CPU/rec), in-thread ${fmt.int(rps(t))}, baseline ${fmt.int(rps(b))}; pool/in-thread ${fmt.ratio(rps(p) / rps(t))}, pool/baseline ${fmt.ratio(rps(p) / rps(b))}`;
    if (base !== null) {
      const bp = variant(group, 'base-pool');
      const bt = variant(group, 'base-in-thread');
      lines.push(
        '',
        `**Before and after** (base commit ${base.commit} against this tree, same run):`,
        '',
        '| | base commit records/s | this tree records/s | ratio | base CPU us/record | this tree CPU us/record | CPU ratio |',
        '|---|---:|---:|---:|---:|---:|---:|',
        `| worker pool | ${fmt.int(rps(bp))} | ${fmt.int(rps(p))} | ${fmt.ratio(rps(p) / rps(bp))} | ${cpu(bp).toFixed(2)} | ${cpu(p).toFixed(2)} | ${fmt.ratio(cpu(p) / cpu(bp))} |`,
        `| in-thread | ${fmt.int(rps(bt))} | ${fmt.int(rps(t))} | ${fmt.ratio(rps(t) / rps(bt))} | ${cpu(bt).toFixed(2)} | ${cpu(t).toFixed(2)} | ${fmt.ratio(cpu(t) / cpu(bt))} |`,
      );
      headline += `; vs ${base.commit}: pool ${fmt.ratio(rps(p) / rps(bp))} rec/s at ${fmt.ratio(cpu(p) / cpu(bp))} CPU/rec`;
    }
    lines.push(
      '',
      `${protocol.warmup} warm-up + ${protocol.runs} measured rounds, every variant once per round in the order of the table, medians. ` +
        `Load average (5 min) ${loadBefore.toFixed(1)} before and ${loadAfter.toFixed(1)} after the run (2 CPUs: above 2, other work competed with every run).`,
      '',
    );
    return { group, base, markdown: lines.join('\n'), headline };
  } finally {
    base?.remove();
    scratch.remove();
  }
}

export const throughputScenario: Scenario = {
  id: 'throughput',
  order: 3.5,
  title: 'Scenario 3b: default job, pool against in-thread, the whole-job baseline and a base commit',
  async run(ctx) {
    // Quick: 3 measured rounds of 5 variants (about 2 minutes); full: the runner's protocol.
    const protocol: Protocol = ctx.mode === 'quick' ? { warmup: 1, runs: 3 } : ctx.protocol;
    const count = Number(process.env['GEN_COUNT'] ?? POINTS);
    const r = await runThroughput(protocol, count, this.title, ctx.log);
    return {
      config: { GEN_COUNT: count, baseCommit: r.base === null ? 'none' : r.base.commit, 'protocol.warmup': protocol.warmup, 'protocol.runs': protocol.runs },
      groups: [r.group],
      markdown: r.markdown,
      headline: [r.headline],
    };
  },
};

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const runs = Number(process.argv[2] ?? 5);
  const count = Number(process.env['GEN_COUNT'] ?? POINTS);
  const r = await runThroughput({ warmup: 1, runs }, count, 'Default job ratio run', (l) => process.stderr.write(`${l}\n`));
  process.stdout.write(`${r.markdown}\n`);
}
