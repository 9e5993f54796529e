// Seed 001 query part: times queryStatistics (src/api/statistics.ts) on a filled store, in one process
// with one pg pool as the API server holds it. The query kinds run alternately (A B C D A B C D ...)
// after a warm-up round, so that a busy neighbour hits every kind alike.
// Usage: node dist/bench/child/query.js URL METER WARMUP RUNS   -> one JSON line on stdout.
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { queryStatistics, type StatisticsParams } from '../../src/api/index.js';

export interface QueryKind {
  readonly id: string;
  readonly label: string;
  readonly params: Omit<StatisticsParams, 'meter'>;
}

const P95 = { func: 'percentile', param: '95' };

export const QUERY_KINDS: readonly QueryKind[] = [
  { id: 'whole', label: 'whole range, no period', params: {} },
  { id: 'period', label: 'period=3600', params: { period: 3600 } },
  { id: 'groupby', label: 'groupby=resource_id', params: { groupby: ['resource_id'] } },
  { id: 'stddev', label: 'aggregate.func=stddev', params: { aggregate: [{ func: 'stddev' }] } },
  { id: 'period-groupby', label: 'period=3600 + groupby=resource_id', params: { period: 3600, groupby: ['resource_id'] } },
  { id: 'pct', label: 'percentile/95, whole range', params: { aggregate: [P95] } },
  { id: 'pct-period', label: 'period=3600 + percentile/95', params: { period: 3600, aggregate: [P95] } },
  { id: 'pct-groupby', label: 'groupby=resource_id + percentile/95', params: { groupby: ['resource_id'], aggregate: [P95] } },
];

export interface QueryChildResult {
  readonly kinds: ReadonlyArray<{ id: string; seconds: number[]; results: number; count: number; stddev: number; p95: number }>;
}

async function main(): Promise<void> {
  const [url, meter, warmupText, runsText] = process.argv.slice(2);
  const warmup = Number(warmupText);
  const runs = Number(runsText);
  if (!url || !meter || !(warmup >= 0) || !(runs >= 1)) {
    process.stderr.write('usage: query.js URL METER WARMUP RUNS\n');
    process.exit(2);
  }
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const out = QUERY_KINDS.map((k) => ({ id: k.id, seconds: [] as number[], results: 0, count: 0, stddev: NaN, p95: NaN }));
    for (let r = 0; r < warmup + runs; r++) {
      for (let i = 0; i < QUERY_KINDS.length; i++) {
        const t0 = performance.now();
        const res = await queryStatistics(pool, { meter, ...QUERY_KINDS[i]!.params });
        const s = (performance.now() - t0) / 1000;
        const o = out[i]!;
        if (r >= warmup) o.seconds.push(s);
        o.results = res.length;
        o.count = res.reduce((a, x) => a + x.count, 0);
        // stddev is a selectable aggregate (Ceilometer): present when the query kind asks for it.
        o.stddev = res[0]?.aggregate?.['stddev'] ?? NaN;
        o.p95 = res[0]?.aggregate?.['percentile/95'] ?? NaN;
      }
    }
    const result: QueryChildResult = { kinds: out };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await pool.end();
  }
}

// The scenario imports QUERY_KINDS from here: run only when started as the child.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`query: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
