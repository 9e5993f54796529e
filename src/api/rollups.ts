// The rows a statistics query merges: stored windows, or, where whole hours of a series are rolled up
// (schema version 3, src/sinks/postgres/schema.ts), one rollup row per hour instead of its windows.
//
// A rollup is the exact merge of the windows it covers (the triggers remove it when one of them
// changes), and merging is associative, so a result merged from rollups and windows equals the one
// merged from the windows alone: counts, min, max and sketch bucket counts exactly (integers summed in
// float8), sum and m2 up to float8 rounding of a different summation order. Percentiles are read from
// the same merged bucket counts, so they are the same values with the same relative accuracy.
//
// A rollup stands for its windows in a query when:
// - the period is absent or a multiple of an hour (each hour then lies in one result bucket); other
//   periods read the windows;
// - every one of its windows passes the timestamp filters, which its first_start (min period_start)
//   and last_end (max period_end) decide exactly (ge/gt T: first_start; lt/le T: last_end <= T). The
//   filters on topic, partition and dimensions hold for all of its windows or none (they are in its
//   key or its series). A rollup that fails the timestamp filters but may hold a window that passes
//   them (an hour at the edge of the range) is replaced by its windows, filtered one by one.
// Windows from the series' rolled_until on (its newest hour, and hours a late write has reopened) are
// read as they are.
import type { CheckedFilter } from './params.js';
import { TABLES } from '../sinks/postgres/schema.js';

export const ROLLUP_SECONDS = 3600;

/** Binds of sql.ts (not imported: sql.ts imports this file). */
interface Binds {
  add(v: unknown, cast?: string): string;
}

/**
 * The columns every source row has (those of the streamstats_statistics view the queries use, and the
 * sketch parts: sketch, the JSON whose buckets SQL sums, only where there is no binary sk_packed).
 */
const WINDOW_COLS = `s.name, s.groupby, w.topic, w.partition, w.period_start, w.period_start + make_interval(secs => w.period) AS period_end,
  w.period::double precision AS period, w.unit, w.count, w.sum, w.min, w.max, w.sum / w.count AS avg, w.m2, w.duration_start, w.duration_end,
  (w.sketch IS NULL)::integer AS sk_none, (w.sketch ->> 'a')::float8 AS sk_a_lo, (w.sketch ->> 'a')::float8 AS sk_a_hi,
  (w.sketch ->> 'zero')::float8 AS sk_zero, CASE WHEN w.sketch_bin IS NULL THEN w.sketch END AS sketch, w.sketch_bin AS sk_packed`;

const ROLLUP_COLS = `s.name, s.groupby, r.topic, r.partition, r.first_start AS period_start, r.last_end AS period_end,
  r.period::double precision AS period, r.unit, r.count, r.sum, r.min, r.max, r.sum / r.count AS avg, r.m2, r.duration_start, r.duration_end,
  r.no_sketch AS sk_none, r.sk_a_lo, r.sk_a_hi, r.sk_zero, NULL::jsonb AS sketch, r.sketch AS sk_packed`;

const VIEW_COLS = `name, groupby, topic, partition, period_start, period_end, period, unit, count, sum, min, max, avg, m2, duration_start, duration_end,
  (sketch IS NULL)::integer AS sk_none, (sketch ->> 'a')::float8 AS sk_a_lo, (sketch ->> 'a')::float8 AS sk_a_hi,
  (sketch ->> 'zero')::float8 AS sk_zero, sketch, NULL::bytea AS sk_packed`;

/** Whether rollups can stand for windows in a query of this period (seconds; undefined = none). */
export function rollupsServe(period: number | undefined): boolean {
  return period === undefined || period % ROLLUP_SECONDS === 0;
}

/**
 * The source of a query's rows as a parenthesised subquery with the view's columns, `where` (built by
 * whereSql over those columns) applied to each part.
 */
export function rowSource(period: number | undefined, filters: readonly CheckedFilter[], where: string, b: Binds): string {
  if (!rollupsServe(period)) return `(SELECT ${VIEW_COLS} FROM ${TABLES.statistics} ${where}) src`;
  // Each part reads per series through the primary key or the rollups' index (LATERAL ... OFFSET 0:
  // the planner would otherwise scan the whole table and hash-join, as it cannot tell how few rows
  // lie past rolled_until), bounded by the timestamp filters; `where` then decides exactly.
  const wBounds: string[] = [];
  const rBounds: string[] = [];
  const whole: string[] = [];
  const may: string[] = [];
  for (const f of filters) {
    if (f.field !== 'timestamp') continue;
    const t = b.add(new Date(f.value as number).toISOString(), '::timestamptz');
    if (f.op === 'ge' || f.op === 'gt') {
      const op = f.op === 'ge' ? '>=' : '>';
      wBounds.push(`w.period_start ${op} ${t}`);
      rBounds.push(`r.bucket_start > ${t} - interval '${ROLLUP_SECONDS} seconds'`);
      whole.push(`r.first_start ${op} ${t}`);
    } else {
      wBounds.push(`w.period_start < ${t}`);
      rBounds.push(`r.bucket_start < ${t}`);
      whole.push(`r.last_end <= ${t}`);
      may.push(`r.first_start + make_interval(secs => r.period) <= ${t}`);
    }
  }
  const and = (xs: readonly string[]): string => xs.map((x) => ` AND ${x}`).join('');
  const rollups = (extra: string): string => `CROSS JOIN LATERAL (SELECT * FROM ${TABLES.rollups} r WHERE r.series = s.id${and(rBounds)}${extra} OFFSET 0) r`;
  const parts = [
    `SELECT * FROM (SELECT ${WINDOW_COLS} FROM ${TABLES.series} s CROSS JOIN LATERAL (SELECT * FROM ${TABLES.windows} w
      WHERE w.series = s.id AND w.period_start >= s.rolled_until${and(wBounds)} OFFSET 0) w) fresh ${where}`,
    `SELECT * FROM (SELECT ${ROLLUP_COLS} FROM ${TABLES.series} s ${rollups('')}) rolled ${where}`,
  ];
  if (whole.length > 0) {
    // The hours at the edges: rollups not wholly within the range (that may hold a window within it), read as their windows.
    parts.push(
      `SELECT * FROM (SELECT ${WINDOW_COLS} FROM ${TABLES.series} s ${rollups(` AND NOT (${whole.join(' AND ')})${and(may)}`)}
        CROSS JOIN LATERAL (SELECT * FROM ${TABLES.windows} w WHERE w.series = r.series AND w.period_start >= r.bucket_start
          AND w.period_start < r.bucket_start + interval '${ROLLUP_SECONDS} seconds' AND w.partition = r.partition AND w.topic = r.topic
          AND w.period = r.period AND w.unit IS NOT DISTINCT FROM r.unit OFFSET 0) w) edge ${where}`,
    );
  }
  return `(${parts.join('\nUNION ALL\n')}) src`;
}
