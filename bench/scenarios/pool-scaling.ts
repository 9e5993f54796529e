// Scenario 2: WORKER_THREADS x BATCH_SIZE on the generator workload, each thread count alternated with
// the in-thread baseline (WORKER_THREADS=0) at the same batch size, in two configurations:
//   decode-bound: WINDOW_SECONDS=86400, so only 4,000 rows are written and the run is source + decode + merge;
//   default:      WINDOW_SECONDS=60 (the default), about one row per two points, rows written to a file.
import { runCli, scratchDir } from '../lib/child.js';
import { alternate, ratio, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { lineChart } from '../lib/svg.js';
import type { Group, Mode, Scenario, ScenarioResult } from '../lib/scenario.js';

interface Plan {
  readonly configId: 'decode-bound' | 'default';
  readonly window: number;
  readonly threads: readonly number[];
  readonly batches: readonly number[];
  readonly count: (batch: number) => number;
}

function plans(mode: Mode): Plan[] {
  const full = mode === 'full';
  const count = (batch: number): number => (full ? (batch === 1 ? 50_000 : batch === 10 ? 200_000 : 690_000) : batch === 1 ? 10_000 : batch === 10 ? 50_000 : 100_000);
  return [
    { configId: 'decode-bound', window: 86400, threads: full ? [0, 1, 2, 3] : [0, 1, 2], batches: full ? [1, 10, 100, 1000, 10000] : [1, 100, 1000], count },
    { configId: 'default', window: 60, threads: full ? [0, 1, 2, 3] : [0, 1, 2], batches: full ? [1, 10, 100, 1000, 10000] : [1000], count: (b) => (full ? count(b) : 200_000) },
  ];
}

export const COMMAND_QUICK = 'npm run bench -- --only pool';

function cell(g: Group, threads: number): VariantResult | undefined {
  return g.variants.find((v) => v.config.WORKER_THREADS === threads);
}

/** threads x batch-size table of median records/s with the ratio to WORKER_THREADS=0 at the same batch size. */
export function poolTable(r: Pick<ScenarioResult, 'groups'>, configId: string): string {
  const groups = r.groups.filter((g) => g.id.startsWith(`${configId}/`));
  if (groups.length === 0) return '';
  const threads = [...new Set(groups.flatMap((g) => g.variants.map((v) => Number(v.config.WORKER_THREADS))))].sort((a, b) => a - b);
  const head = `| BATCH_SIZE | points | ${threads.map((t) => `WORKER_THREADS=${t}`).join(' | ')} |`;
  const sep = `|---:|---:|${threads.map(() => '---:|').join('')}`;
  const rows = groups.map((g) => {
    const base = cell(g, 0);
    const cells = threads.map((t) => {
      const v = cell(g, t);
      if (v === undefined) return '';
      const rel = base === undefined || v === base ? '' : ` (${fmt.ratio(ratio(v, base))})`;
      return `${fmt.int(v.recordsPerSecond.median)}${rel}`;
    });
    const first = g.variants[0]!;
    return `| ${first.config.BATCH_SIZE} | ${fmt.int(Number(first.config.GEN_COUNT))} | ${cells.join(' | ')} |`;
  });
  return [head, sep, ...rows].join('\n');
}

export const poolScenario: Scenario = {
  id: 'pool-scaling',
  order: 2,
  title: 'Scenario 2: worker pool scaling (WORKER_THREADS x BATCH_SIZE)',
  async run(ctx) {
    const scratch = scratchDir('pool');
    const groups: Group[] = [];
    try {
      for (const plan of plans(ctx.mode)) {
        for (const batch of plan.batches) {
          const variants: Variant[] = plan.threads.map((t) => {
            const vars = {
              WORKER_THREADS: String(t),
              BATCH_SIZE: String(batch),
              GEN_COUNT: String(plan.count(batch)),
              WINDOW_SECONDS: String(plan.window),
            };
            return {
              id: `threads-${t}`,
              label: t === 0 ? 'WORKER_THREADS=0 (in-thread)' : `WORKER_THREADS=${t}`,
              config: { ...vars, WORKER_THREADS: t, BATCH_SIZE: batch, GEN_COUNT: plan.count(batch), WINDOW_SECONDS: plan.window },
              run: async () => {
                const r = await runCli(vars, scratch.dir);
                return { recordsPerSecond: r.summary.recordsPerSecond, elapsedSeconds: r.summary.elapsedSeconds, peakRssBytes: r.maxRssBytes, extra: { rows: r.summary.rows, decodeSeconds: r.summary.decodeSeconds } };
              },
            };
          });
          const results = await alternate(`pool ${plan.configId} BATCH_SIZE=${batch}`, variants, ctx.protocol, ctx.log);
          groups.push({ id: `${plan.configId}/batch-${batch}`, title: `${plan.configId}, BATCH_SIZE=${batch}`, variants: results, baseline: 'threads-0' });
        }
      }
    } finally {
      scratch.remove();
    }
    const db = groups.filter((g) => g.id.startsWith('decode-bound/'));
    const threads = [...new Set(db.flatMap((g) => g.variants.map((v) => Number(v.config.WORKER_THREADS))))].sort((a, b) => a - b);
    const charts = {
      'pool-vs-batch.svg': lineChart({
        title: 'Decode-bound generator workload: records/s vs BATCH_SIZE',
        xLabel: 'BATCH_SIZE',
        yLabel: 'median records/s',
        x: db.map((g) => String(g.variants[0]!.config.BATCH_SIZE)),
        series: threads.map((t) => ({ name: `WORKER_THREADS=${t}`, values: db.map((g) => cell(g, t)?.recordsPerSecond.median ?? null) })),
      }),
      'pool-vs-threads.svg': lineChart({
        title: 'Decode-bound generator workload: records/s vs WORKER_THREADS',
        xLabel: 'WORKER_THREADS (0 = in-thread)',
        yLabel: 'median records/s',
        x: threads.map(String),
        series: db.map((g) => ({ name: `BATCH_SIZE=${g.variants[0]!.config.BATCH_SIZE}`, values: threads.map((t) => cell(g, t)?.recordsPerSecond.median ?? null) })),
      }),
    };
    const best = (configId: string): string => {
      const gs = groups.filter((g) => g.id.startsWith(`${configId}/`));
      const all = gs.flatMap((g) => g.variants.map((v) => ({ v, g })));
      const top = all.reduce((a, b) => (b.v.recordsPerSecond.median > a.v.recordsPerSecond.median ? b : a));
      const base = cell(top.g, 0)!;
      return `${configId}: best ${fmt.int(top.v.recordsPerSecond.median)} records/s at WORKER_THREADS=${top.v.config.WORKER_THREADS}, BATCH_SIZE=${top.v.config.BATCH_SIZE} (${fmt.ratio(ratio(top.v, base))} of in-thread at that batch size)`;
    };
    const markdown = [
      `## ${this.title}`,
      '',
      'The generator workload (seed 000 shape: 1000 names x 4 hosts), statistics rows and dead letters to files in a temp directory. ' +
        'Each cell is the median records/s of the measured runs; in brackets the ratio of medians to WORKER_THREADS=0 at the same batch size, ' +
        'measured alternately with it. Small batch sizes use fewer points so that a run stays short (the points column); compare along a row, not down a column.',
      '',
      '**Decode-bound configuration** (`WINDOW_SECONDS=86400`: one window, 4,000 rows at the end, so the run is the source, decode and merge):',
      '',
      poolTable({ groups }, 'decode-bound'),
      '',
      '**Default configuration** (`WINDOW_SECONDS=60`: about one statistics row per two points, written to a file, the way `npx streamstats > stats.ndjson` runs):',
      '',
      poolTable({ groups }, 'default'),
      '',
      '![records/s vs BATCH_SIZE](../bench/results/pool-vs-batch.svg)',
      '',
      '![records/s vs WORKER_THREADS](../bench/results/pool-vs-threads.svg)',
      '',
    ].join('\n');
    return {
      config: { SOURCE: 'generator', GEN_METRICS: 1000, GEN_HOSTS: 4, sink: 'file in a temp dir', configs: 'decode-bound WINDOW_SECONDS=86400; default WINDOW_SECONDS=60' },
      groups,
      markdown,
      charts,
      headline: [best('decode-bound'), best('default')],
    };
  },
};
