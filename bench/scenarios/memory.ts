// Scenario 7: memory per open series at 1e5 and 1e6 series.
// (a) Heap retained per series, in-process (bench/child/series-heap.ts): the window store and the row
//     formatter's per-series cache (the main thread's state, the 300-byte target), and apart from them
//     the decoder's interner (the worker's, in the pool) and the main thread's copy of the worker's keys.
// (b) The whole process: peak RSS of the CLI on a file where every series has one sample in one long
//     window, minus a baseline run with the same number of samples in 100 series. This is an upper
//     bound: it includes the burst of formatting every row at the final close.
import { runChild, runCli, scratchDir } from '../lib/child.js';
import { ensureCeilometerFile } from '../lib/ceilometer-data.js';
import { alternate, type Variant } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import { variant, type Group, type Scenario } from '../lib/scenario.js';
import type { HeapShape, SeriesHeapResult } from '../child/series-heap.js';

const TARGET_BYTES = 300;

export const memoryScenario: Scenario = {
  id: 'memory-per-series',
  order: 7,
  title: 'Scenario 7: memory per open series',
  async run(ctx) {
    const full = ctx.mode === 'full';
    // The 1e6-series CLI run takes about 25 s and the 1e6 Monasca heap run about 30 s: --full only.
    const rssSizes = full ? [100_000, 1_000_000] : [100_000];
    const heapCases: Array<{ shape: HeapShape; n: number; path: 'pool' | 'in-thread' }> = [
      { shape: 'ceilometer', n: 100_000, path: 'pool' },
      { shape: 'ceilometer', n: 1_000_000, path: 'pool' },
      { shape: 'monasca', n: 100_000, path: 'pool' },
      ...(full ? [{ shape: 'monasca' as const, n: 1_000_000, path: 'pool' as const }] : []),
      { shape: 'monasca', n: 100_000, path: 'in-thread' },
    ];
    const heapVariants: Variant[] = heapCases.map((c) => ({
      id: `heap-${c.shape}-${c.n}-${c.path}`,
      label: `${c.shape}, ${fmt.int(c.n)} series, ${c.path}`,
      config: { shape: c.shape, series: c.n, path: c.path },
      run: async () => {
        const r = await runChild<SeriesHeapResult>('series-heap', [c.shape, String(c.n), c.path], ['--expose-gc']);
        if (r.openSeries !== c.n) throw new Error(`series-heap: ${r.openSeries} open series, expected ${c.n}`);
        return {
          recordsPerSecond: c.n / r.seconds,
          elapsedSeconds: r.seconds,
          peakRssBytes: r.maxRssBytes,
          extra: {
            storeBytesPerSeries: r.storeBytesPerSeries,
            rowCacheBytesPerSeries: r.rowCacheBytesPerSeries,
            internerBytesPerSeries: r.internerBytesPerSeries,
            dictionaryBytesPerSeries: r.dictionaryBytesPerSeries,
            takeAllSeconds: r.takeAllSeconds,
          },
        };
      },
    }));
    const heapResults = await alternate('memory heap', heapVariants, ctx.protocol, ctx.log);
    const heapGroup: Group = { id: 'heap', title: 'heap per series', variants: heapResults, baseline: null };

    const baselineSeries = 100;
    const files = new Map<number, { series: string; base: string; bytes: number }>();
    for (const n of rssSizes) {
      ctx.log(`  memory: preparing ${fmt.int(n)}-sample files in bench/.cache/`);
      const series = await ensureCeilometerFile({ samples: n, meters: 1, resources: n, intervalSeconds: 0, seed: 7 });
      const base = await ensureCeilometerFile({ samples: n, meters: 1, resources: baselineSeries, intervalSeconds: 0, seed: 7 });
      files.set(n, { series: series.path, base: base.path, bytes: series.bytes });
    }
    const scratch = scratchDir('memory');
    const rssVariants: Variant[] = [];
    for (const n of rssSizes) {
      for (const kind of ['base', 'series'] as const) {
        const f = files.get(n)!;
        const vars = { FORMAT: 'ceilometer', SOURCE: `file:${kind === 'base' ? f.base : f.series}`, GROUP_BY: 'resource_id', WINDOW_SECONDS: '86400', MAX_SERIES: String(2 * n), MAX_STATE_MB: '1048576', MAX_FUTURE_SECONDS: '0' };
        rssVariants.push({
          id: `rss-${kind}-${n}`,
          label: kind === 'base' ? `${fmt.int(n)} samples in ${baselineSeries} series (baseline)` : `${fmt.int(n)} samples in ${fmt.int(n)} series`,
          config: { ...vars, SOURCE: 'file:bench/.cache/…', samples: n },
          run: async () => {
            const r = await runCli(vars, scratch.dir);
            if (r.summary.ok !== n) throw new Error(`memory: ${r.summary.ok} of ${n} accepted`);
            return { recordsPerSecond: r.summary.recordsPerSecond, elapsedSeconds: r.summary.elapsedSeconds, peakRssBytes: r.maxRssBytes, extra: { rows: r.summary.rows } };
          },
        });
      }
    }
    let rssResults;
    try {
      rssResults = await alternate('memory rss', rssVariants, ctx.protocol, ctx.log);
    } finally {
      scratch.remove();
    }
    const rssGroup: Group = { id: 'rss', title: 'peak RSS minus baseline', variants: rssResults, baseline: null };

    const heapRows = heapResults.map((r) => {
      const store = r.extra.storeBytesPerSeries!.median;
      const cache = r.extra.rowCacheBytesPerSeries!.median;
      const interner = r.extra.internerBytesPerSeries!.median;
      const dict = r.extra.dictionaryBytesPerSeries!.median;
      const take = r.extra.takeAllSeconds!.median;
      return `| ${r.config.shape} | ${fmt.int(Number(r.config.series))} | ${r.config.path} | ${fmt.int(store)} | ${fmt.int(cache)} | ${fmt.int(store + cache)} | ${store + cache <= TARGET_BYTES ? 'yes' : 'no'} | ${fmt.int(interner)} | ${r.config.path === 'pool' ? fmt.int(dict) : '-'} | ${take.toFixed(2)} |`;
    });
    const rssPer = (n: number): number => (variant(rssGroup, `rss-series-${n}`).peakRssBytes.median - variant(rssGroup, `rss-base-${n}`).peakRssBytes.median) / n;
    const rssRows = rssSizes.map((n) => {
      const s = variant(rssGroup, `rss-series-${n}`);
      const b = variant(rssGroup, `rss-base-${n}`);
      return `| ${fmt.int(n)} | ${fmt.mib(b.peakRssBytes.median)} | ${fmt.mib(s.peakRssBytes.median)} | ${fmt.int(rssPer(n))} |`;
    });
    const mainBytes = (id: string): number => {
      const v = variant(heapGroup, id);
      return v.extra.storeBytesPerSeries!.median + v.extra.rowCacheBytesPerSeries!.median;
    };
    const ceil1m = mainBytes('heap-ceilometer-1000000-pool');
    const monLargest = heapResults.filter((r) => r.config.shape === 'monasca' && r.config.path === 'pool').reduce((a, b) => (Number(b.config.series) > Number(a.config.series) ? b : a));
    const monN = Number(monLargest.config.series);
    const mon1m = monLargest.extra.storeBytesPerSeries!.median + monLargest.extra.rowCacheBytesPerSeries!.median;
    const monInterner = variant(heapGroup, 'heap-monasca-100000-in-thread').extra.internerBytesPerSeries!.median;
    const monDict = variant(heapGroup, 'heap-monasca-100000-pool').extra.dictionaryBytesPerSeries!.median;
    const markdown = [
      `## ${this.title}`,
      '',
      '**(a) Heap retained per open series** (`bench/child/series-heap.ts`, `node --expose-gc`): N series with one record each are decoded and merged into a `WindowStore` ' +
        '(one 86,400 s window), the window is closed and its rows formatted (`ndjsonBytes()`, the file sink\'s path), and the parts are dropped one by one, with `gc()` and ' +
        '`heapUsed + arrayBuffers` after each. Store: the open-series state (the key map entry, the typed-array cell, the series\' columns; the key string itself belongs to ' +
        'the interner or the dictionary, which outlive the store). Row cache: the `RowFormatter`\'s serialised prefix per series, kept across windows (bounded by `MAX_SERIES`); a series key in JSON form (ASCII, no dimension named like an array index: `src/core/series.ts`) is its row\'s prefix itself, so only other series have one. ' +
        'Store + row cache is the main thread\'s state and what the 300-byte target is about. Interner: the decoder\'s series table, which lives in the worker in the pool ' +
        '(on the main thread in-thread). Dictionary: the main thread\'s copy of the worker\'s keys (`src/pool/dictionary.ts`, pool only). take: seconds to close the one window. ' +
        '`pool` decodes with `decodeBatchCompact`, passes the result through `structuredClone` and the main thread\'s dictionary, as the engine does; `in-thread` uses `decodeBatch` results as `WORKER_THREADS=0` does. Ceilometer keys are ' +
        'meter + unit + `resource_id` (`GROUP_BY=resource_id`); Monasca keys are the seed-000 point with all 12 dimensions (the default `GROUP_BY`). Medians of the measured runs.',
      '',
      '| shape | series | path | store B/series | row cache B/series | store + row cache | <= 300 B | interner B/series | dictionary B/series | take s |',
      '|---|---:|---|---:|---:|---:|---|---:|---:|---:|',
      ...heapRows,
      '',
      `**(b) Whole process, peak RSS** (getrusage of the CLI child): \`FORMAT=ceilometer GROUP_BY=resource_id WINDOW_SECONDS=86400 MAX_SERIES=2N\` on a file where each of N resources has one sample, ` +
        `minus a run over the same number of samples in ${baselineSeries} series. This is an upper bound, not open-series state alone: it includes the final close, which formats ` +
        'a row for every series at once, and the worker\'s own heap.',
      '',
      '| samples | baseline peak RSS MiB | N-series peak RSS MiB | (difference) / N, bytes |',
      '|---:|---:|---:|---:|',
      ...rssRows,
      '',
      ...(full ? [] : ['`--quick` measures the whole-process RSS at 1e5 series only (the 1e6 run takes about 25 s a run); `npm run bench:full` adds 1e6 and the 1e6-series Monasca heap case.', '']),
      `**Target <= ${TARGET_BYTES} bytes per open series, store and row cache together: ${ceil1m <= TARGET_BYTES ? 'reached' : 'not reached'} for Ceilometer** ` +
        `(${fmt.int(ceil1m)} B at 1e6 series), **${mon1m <= TARGET_BYTES ? 'reached' : 'not reached'} for the 12-dimension Monasca key** (${fmt.int(mon1m)} B at ${fmt.int(monN)} series: ` +
        'its serialised prefix alone is about 400 characters). ' +
        `Not counted in it: the worker's interner (in-thread it is on the main thread: ${fmt.int(monInterner)} B per Monasca series) and, in the pool, ` +
        `the main thread's copy of the worker's keys (${fmt.int(monDict)} B per Monasca series).`,
      '',
    ].join('\n');
    return {
      config: { heap: 'bench/child/series-heap.ts', rss: 'FORMAT=ceilometer GROUP_BY=resource_id WINDOW_SECONDS=86400', rssSizes: rssSizes.join(','), note: full ? '' : 'quick: 1e6 series only in the heap measurement (Ceilometer); --full adds the 1e6 CLI RSS run and Monasca at 1e6' },
      groups: [heapGroup, rssGroup],
      markdown,
      headline: [
        `memory: store + row cache ${fmt.int(ceil1m)} B/series (ceilometer, 1e6), ${fmt.int(mon1m)} B/series (monasca, ${fmt.int(monN)}); RSS upper bound ${fmt.int(rssPer(rssSizes[rssSizes.length - 1]!))} B/series at ${fmt.int(rssSizes[rssSizes.length - 1]!)}`,
      ],
    };
  },
};
