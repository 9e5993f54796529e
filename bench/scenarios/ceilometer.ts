// Scenario 4: seed 001, ingest part. Ceilometer samples from an NDJSON file, statistics per meter and
// resource (GROUP_BY=resource_id; the series key always holds the meter name and unit), hourly windows.
import { join } from 'node:path';
import { ensureCeilometerFile } from '../lib/ceilometer-data.js';
import { scratchDir } from '../lib/child.js';
import { compareWithPeer, type RowComparison } from '../lib/compare-rows.js';
import { alternate, ratio, variantTable, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { ROOT, variant, type Scenario } from '../lib/scenario.js';
import { NODE, THREAD_CPU, timed, timedCli } from '../lib/timed.js';

const TARGET = { samples: 15_000_000, seconds: 10, rssBytes: 512 * 1048576 };
const DUCKDB_THREADS = 2;

const cpuOf = (v: VariantResult): string => (v.extra['cpuUsPerRecord']?.median ?? NaN).toFixed(2);

function peerLines(duck: VariantResult, best: VariantResult, eq: RowComparison): string {
  return `**Against DuckDB** (the same file, \`bench/child/duckdb-ceilometer.ts\`: one \`GROUP BY counter_name, counter_unit, resource_id, hour\`, rows written as NDJSON, ` +
    `alternated with ours): ${fmt.secs(duck.elapsedSeconds.median)} s and ${cpuOf(duck)} us of CPU a sample, peak RSS ${fmt.mib(duck.peakRssBytes.max)} MiB, ` +
    `against our best (${best.label}) ${fmt.secs(best.elapsedSeconds.median)} s and ${cpuOf(best)} us: ours takes ${fmt.ratio(best.elapsedSeconds.median / duck.elapsedSeconds.median)} DuckDB's time. ` +
    `Rows: ${fmt.int(eq.matched)} of our ${fmt.int(eq.ours)} equal to DuckDB's ${fmt.int(eq.theirs)} (counts and duration bounds exact, statistics within 1e-9 relative; worst ${eq.worstRelative.toExponential(1)}).`;
}

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
      const ours = join(scratch.dir, 'ours.ndjson');
      const peer = join(scratch.dir, 'duckdb.ndjson');
      const mk = (threads: string, id: string, label: string, more: Readonly<Record<string, string>> = {}): Variant => ({
        id,
        label,
        config: { ...common, WORKER_THREADS: threads, ...more },
        run: async () => {
          const { t, summary } = await timedCli(ROOT, { ...common, WORKER_THREADS: threads, ...more }, scratch.dir, ours);
          if (threads === 'auto' && more['LANE_STATE'] === undefined) autoThreads = summary.threads;
          if (summary.ok !== samples) throw new Error(`ceilometer: ${summary.ok} of ${samples} samples accepted`);
          return { recordsPerSecond: summary.recordsPerSecond, elapsedSeconds: summary.elapsedSeconds, peakRssBytes: t.maxRssBytes, extra: { rows: summary.rows, cpuUsPerRecord: (t.cpuSeconds * 1e6) / samples, mainUs: ((t.threads['MAIN'] ?? 0) * 1e6) / samples } };
        },
      });
      // The peer: DuckDB's GROUP BY of the same file, its own threads set to the cores we use.
      const duckdb: Variant = {
        id: 'duckdb',
        label: `DuckDB (@duckdb/node-api, threads=${DUCKDB_THREADS}), one GROUP BY`,
        config: { peer: 'duckdb', threads: DUCKDB_THREADS },
        run: async () => {
          const t = await timed([NODE, ...THREAD_CPU, join(ROOT, 'dist/bench/child/duckdb-ceilometer.js'), file.path, peer, String(DUCKDB_THREADS)], {});
          const r = JSON.parse(t.stdout.trim().split('\n').pop()!) as { rows: number; seconds: number };
          return { recordsPerSecond: samples / r.seconds, elapsedSeconds: r.seconds, peakRssBytes: t.maxRssBytes, extra: { rows: r.rows, cpuUsPerRecord: (t.cpuSeconds * 1e6) / samples } };
        },
      };
      // The file is one lane: LANE_STATE=auto keeps it on the main thread with the decode pool; the
      // lane in one owner worker (LANE_STATE=worker) is measured beside it.
      const results = await alternate('ceilometer', [
        mk('auto', 'pool', 'worker pool (WORKER_THREADS=auto)'),
        mk('0', 'in-thread', 'in-thread (WORKER_THREADS=0)'),
        mk('auto', 'owned', 'the lane in its owner worker (LANE_STATE=worker, WORKER_THREADS=auto)', { LANE_STATE: 'worker' }),
        duckdb,
      ], ctx.protocol, ctx.log);
      // The files of the last round: the in-thread run wrote `ours` after the pool's (same rows), DuckDB `peer`.
      const equal = compareWithPeer(ours, peer);
      if (equal.mismatched > 0) throw new Error(`ceilometer: ${equal.mismatched} rows differ from DuckDB's (first: ${equal.firstMismatch})`);
      const group = { id: 'ceilometer', title: 'Ceilometer ingest', variants: results, baseline: 'in-thread' };
      const pool = variant(group, 'pool');
      const inThread = variant(group, 'in-thread');
      const duck = variant(group, 'duckdb');
      const owned = variant(group, 'owned');
      const best = [pool, inThread, owned].reduce((a, b) => (b.recordsPerSecond.median > a.recordsPerSecond.median ? b : a));
      const projected = TARGET.samples / best.recordsPerSecond.median;
      const measuredFull = samples === TARGET.samples;
      const timeOk = measuredFull ? best.elapsedSeconds.median <= TARGET.seconds : projected <= TARGET.seconds;
      const rssOk = best.peakRssBytes.max <= TARGET.rssBytes;
      const rows = best.extra.rows?.median ?? NaN;
      const verdict = measuredFull
        ? `**Target (15 M samples in <= ${TARGET.seconds} s at <= 512 MiB RSS): ${timeOk && rssOk ? 'reached' : 'not reached'}.** ` +
          `Best variant (${best.label}): median ${fmt.secs(best.elapsedSeconds.median)} s, peak RSS ${fmt.mib(best.peakRssBytes.max)} MiB.`
        : `**Target (15 M samples in <= ${TARGET.seconds} s at <= 512 MiB RSS): not measured by --quick.** At the quick run's best median rate (${best.label}, ` +
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
        peerLines(duck, best, equal),
        '',
        'The statistics-query part of seed 001 (Ceilometer needed 128 s with the MongoDB aggregation pipeline and about 1500 s with map-reduce for 15 M samples) ' +
          'is the statistics-query scenario below, over the PostgreSQL store.',
        '',
      ].join('\n');
      return {
        config: { ...common, SOURCE: 'file:bench/.cache/…', samples, fileBytes: file.bytes, meters: 10, resources: 1000 },
        groups: [group],
        markdown,
        headline: [
          `ceilometer ${fmt.int(samples)}: pool ${fmt.secs(pool.elapsedSeconds.median)} s / ${fmt.int(pool.recordsPerSecond.median)} rec/s / ${fmt.mib(pool.peakRssBytes.max)} MiB; in-thread ${fmt.secs(inThread.elapsedSeconds.median)} s / ${fmt.int(inThread.recordsPerSecond.median)} rec/s / ${fmt.mib(inThread.peakRssBytes.max)} MiB (pool ${fmt.ratio(ratio(pool, inThread))})`,
          `ceilometer ${fmt.int(samples)}: DuckDB ${fmt.secs(duck.elapsedSeconds.median)} s / ${cpuOf(duck)} us CPU a sample; ours ${fmt.ratio(best.elapsedSeconds.median / duck.elapsedSeconds.median)} its time at ${cpuOf(best)} us; ${fmt.int(equal.matched)} of ${fmt.int(equal.ours)} rows equal`,
        ],
      };
    } finally {
      scratch.remove();
    }
  },
};
