// Scenario 4: seed 001, ingest part. Ceilometer samples from an NDJSON file, statistics per meter and
// resource (GROUP_BY=resource_id; the series key always holds the meter name and unit), hourly windows.
import { runCli, scratchDir } from '../lib/child.js';
import { ensureCeilometerFile } from '../lib/ceilometer-data.js';
import { alternate, ratio, variantTable, type Variant } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Scenario } from '../lib/scenario.js';

const TARGET = { samples: 15_000_000, seconds: 30, rssBytes: 512 * 1048576 };

export const ceilometerScenario: Scenario = {
  id: 'ceilometer-ingest',
  order: 4,
  title: 'Scenario 4: seed 001, Ceilometer ingest (statistics per meter and resource)',
  async run(ctx) {
    const samples = ctx.mode === 'full' ? 15_000_000 : 1_000_000;
    const spec = { samples, meters: 10, resources: 1000, intervalSeconds: 60, seed: 1 };
    ctx.log(`  ceilometer: preparing ${fmt.int(samples)} samples in bench/.cache/ (generated once)`);
    const file = await ensureCeilometerFile(spec);
    const scratch = scratchDir('ceilometer');
    let autoThreads = NaN;
    const common = { FORMAT: 'ceilometer', SOURCE: `file:${file.path}`, GROUP_BY: 'resource_id', WINDOW_SECONDS: '3600' };
    try {
      const mk = (threads: string, id: string, label: string): Variant => ({
        id,
        label,
        config: { ...common, WORKER_THREADS: threads },
        run: async () => {
          const r = await runCli({ ...common, WORKER_THREADS: threads }, scratch.dir);
          if (threads === 'auto') autoThreads = r.summary.threads;
          if (r.summary.ok !== samples) throw new Error(`ceilometer: ${r.summary.ok} of ${samples} samples accepted`);
          return { recordsPerSecond: r.summary.recordsPerSecond, elapsedSeconds: r.summary.elapsedSeconds, peakRssBytes: r.maxRssBytes, extra: { rows: r.summary.rows } };
        },
      });
      const results = await alternate('ceilometer', [mk('auto', 'pool', 'worker pool (WORKER_THREADS=auto)'), mk('0', 'in-thread', 'in-thread (WORKER_THREADS=0)')], ctx.protocol, ctx.log);
      const group = { id: 'ceilometer', title: 'Ceilometer ingest', variants: results, baseline: 'in-thread' };
      const pool = variant(group, 'pool');
      const inThread = variant(group, 'in-thread');
      const best = pool.recordsPerSecond.median >= inThread.recordsPerSecond.median ? pool : inThread;
      const projected = TARGET.samples / best.recordsPerSecond.median;
      const measuredFull = samples === TARGET.samples;
      const timeOk = measuredFull ? best.elapsedSeconds.median <= TARGET.seconds : projected <= TARGET.seconds;
      const rssOk = best.peakRssBytes.max <= TARGET.rssBytes;
      const rows = best.extra.rows?.median ?? NaN;
      const verdict = measuredFull
        ? `**Target (15 M samples in <= 30 s at <= 512 MiB RSS): ${timeOk && rssOk ? 'reached' : 'not reached'}.** ` +
          `Best variant (${best.label}): median ${fmt.secs(best.elapsedSeconds.median)} s, peak RSS ${fmt.mib(best.peakRssBytes.max)} MiB.`
        : `**Target (15 M samples in <= 30 s at <= 512 MiB RSS): not measured by --quick.** At the quick run's best median rate (${best.label}, ` +
          `${fmt.int(best.recordsPerSecond.median)} records/s) 15 M samples would take about ${fmt.int(projected)} s, so the time target is ` +
          `${timeOk ? 'within reach' : 'not reached'} at this rate; peak RSS at 1 M samples was ${fmt.mib(best.peakRssBytes.max)} MiB. ` +
          'Memory does not grow with the file (state is 10,000 series x open windows), so the RSS figure should carry over; `npm run bench:full` measures the 15 M file itself.';
      const markdown = [
        `## ${this.title}`,
        '',
        `Input: ${fmt.int(samples)} Ceilometer samples, NDJSON, ${fmt.int(file.bytes / 1e6)} MB (${fmt.int(file.bytes / samples)} bytes a sample), ` +
          `generated deterministically by \`bench/lib/ceilometer-data.ts\` into \`bench/.cache/\`: 10 meters x 1,000 resources, one sample per (meter, resource) a minute, ` +
          'ISO 8601 timestamps with microseconds and no offset as Ceilometer writes them, a small `resource_metadata`. ' +
          `Configuration: \`FORMAT=ceilometer SOURCE=file:PATH GROUP_BY=resource_id WINDOW_SECONDS=3600\`, rows to a file (${fmt.int(rows)} statistics rows a run: 10,000 series x hourly windows). ` +
          `\`WORKER_THREADS=auto\` chose ${autoThreads} worker thread${autoThreads === 1 ? '' : 's'} here.`,
        '',
        variantTable(results, inThread),
        '',
        verdict,
        '',
        'The statistics-query part of seed 001 (Ceilometer needed 128 s with the MongoDB aggregation pipeline and about 1500 s with map-reduce for 15 M samples) ' +
          'is **pending**: it comes with the PostgreSQL sink, when there is a store to query.',
        '',
      ].join('\n');
      return {
        config: { ...common, SOURCE: 'file:bench/.cache/…', samples, fileBytes: file.bytes, meters: 10, resources: 1000 },
        groups: [group],
        markdown,
        headline: [
          `ceilometer ${fmt.int(samples)}: pool ${fmt.secs(pool.elapsedSeconds.median)} s / ${fmt.int(pool.recordsPerSecond.median)} rec/s / ${fmt.mib(pool.peakRssBytes.max)} MiB; in-thread ${fmt.secs(inThread.elapsedSeconds.median)} s / ${fmt.int(inThread.recordsPerSecond.median)} rec/s / ${fmt.mib(inThread.peakRssBytes.max)} MiB (pool ${fmt.ratio(ratio(pool, inThread))})`,
        ],
      };
    } finally {
      scratch.remove();
    }
  },
};
