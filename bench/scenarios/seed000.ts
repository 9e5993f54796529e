// Scenario 3: the seed-000 workload end to end (690,000 Monasca points, 1000 names x 4 hosts, the
// default configuration), worker pool at its default thread count against in-thread decoding.
import { defaultOf } from '../../src/config/options.js';
import { runCli, scratchDir } from '../lib/child.js';
import { alternate, ratio, variantTable, type Variant } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Scenario } from '../lib/scenario.js';

const POINTS = 690_000;
/** Seed 000 (Monasca meeting, 2020-02-11): the Python persister took 1:51 to 2:22 for 690,000 points. */
const PYTHON = { fastestSeconds: 111, slowestSeconds: 142 };

export const seed000Scenario: Scenario = {
  id: 'seed-000',
  order: 3,
  title: 'Scenario 3: seed 000, 690,000 Monasca points',
  async run(ctx) {
    const scratch = scratchDir('seed000');
    let autoThreads = NaN;
    try {
      const mk = (threads: string, id: string, label: string): Variant => ({
        id,
        label,
        config: { WORKER_THREADS: threads, GEN_COUNT: POINTS },
        run: async () => {
          const r = await runCli({ WORKER_THREADS: threads, GEN_COUNT: String(POINTS) }, scratch.dir);
          if (threads === 'auto') autoThreads = r.summary.threads;
          if (r.summary.ok !== POINTS) throw new Error(`seed 000: ${r.summary.ok} of ${POINTS} points accepted`);
          return { recordsPerSecond: r.summary.recordsPerSecond, elapsedSeconds: r.summary.elapsedSeconds, peakRssBytes: r.maxRssBytes, extra: { rows: r.summary.rows } };
        },
      });
      const results = await alternate('seed-000', [mk('auto', 'pool', 'worker pool (WORKER_THREADS=auto)'), mk('0', 'in-thread', 'in-thread (WORKER_THREADS=0)')], ctx.protocol, ctx.log);
      const group = { id: 'seed-000', title: 'seed 000', variants: results, baseline: 'in-thread' };
      const pool = variant(group, 'pool');
      const inThread = variant(group, 'in-thread');
      const pyFast = POINTS / PYTHON.fastestSeconds;
      const pySlow = POINTS / PYTHON.slowestSeconds;
      const markdown = [
        `## ${this.title}`,
        '',
        `\`GEN_COUNT=${POINTS}\` with every other variable at its default (1000 names x 4 hosts, \`WINDOW_SECONDS=${defaultOf('WINDOW_SECONDS')}\`, \`BATCH_SIZE=${defaultOf('BATCH_SIZE')}\`), rows to a file. ` +
          `\`WORKER_THREADS=auto\` chose ${autoThreads} worker thread${autoThreads === 1 ? '' : 's'} on this machine. Pool and in-thread runs alternated.`,
        '',
        variantTable(results, inThread),
        '',
        `Median time for the 690,000 points: **${fmt.secs(pool.elapsedSeconds.median)} s with the pool, ${fmt.secs(inThread.elapsedSeconds.median)} s in-thread** ` +
          `(pool/in-thread records/s ratio ${fmt.ratio(ratio(pool, inThread))}).`,
        '',
        `*Context only, a different machine, era and job:* in seed 000 the Monasca Python persister (devstack, 2020) needed ${PYTHON.fastestSeconds}-${PYTHON.slowestSeconds} s ` +
          `for the same 690,000 points (ujson to json), that is ${fmt.int(pySlow)}-${fmt.int(pyFast)} points/s, and it also wrote them to InfluxDB, which streamstats does not do. ` +
          'It is the order of magnitude the seed asks about, not a like-for-like comparison.',
        '',
      ].join('\n');
      return {
        config: { GEN_COUNT: POINTS, defaults: 'all other variables', sink: 'file in a temp dir' },
        groups: [group],
        markdown,
        headline: [
          `seed 000: ${fmt.secs(pool.elapsedSeconds.median)} s / ${fmt.int(pool.recordsPerSecond.median)} rec/s with ${autoThreads} worker thread(s) vs ${fmt.secs(inThread.elapsedSeconds.median)} s / ${fmt.int(inThread.recordsPerSecond.median)} rec/s in-thread (${fmt.ratio(ratio(pool, inThread))})`,
        ],
      };
    } finally {
      scratch.remove();
    }
  },
};
