// Hourly rollups (schema version 3): when a row starts an hour later than its series' rolled_until
// as this sink last saw it, the series is offered to streamstats_roll(), in a transaction of its own
// right after the emission's (schema.ts says why), which merges its complete hours (every window before the hour of the newest row) into
// streamstats_rollups. In the steady state that is once per series and hour: about one window read
// again per window written, and one rollup row written per 60 windows of 60 s.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { SeriesRef } from './identity.js';

export const ROLLUP_MS = 3_600_000;
/** Series rolled up per emission at most (see rollUp). */
export const ROLL_SERIES = 500;
const ROLL_WORK_MEM = '64MB';

const ROLL = 'SELECT id, rolled_ms FROM streamstats_roll($1::uuid[], $2::timestamptz[])';

/** Notes in `want` that the series reached the hour of a stored row starting at startMs, if it is one to roll up. */
export function wantRoll(want: Map<SeriesRef, number>, series: SeriesRef, startMs: number, periodSeconds: number): void {
  // Windows of an hour or more would make rollups of one window each: such series stay unrolled.
  if (series.rollFailed || !(periodSeconds < ROLLUP_MS / 1000)) return;
  const hour = Math.floor(startMs / ROLLUP_MS) * ROLLUP_MS;
  if (hour > series.rolledMs && hour > (want.get(series) ?? -Infinity)) want.set(series, hour);
}

/**
 * Rolls up the series that reached a new hour (wantRoll: from the rows just committed); returns the
 * rolled_until (ms) of each series offered, for the caller to note. A failure throws: the caller logs it, the rows
 * are stored all the same. A data error on stored windows
 * (a sketch a script stored with a key that is not a bucket number, a float8 sum that overflows) must
 * not fail the emission: the offer is rolled back to its savepoint and bisected, the series it comes
 * from are not offered again, and their windows stay readable as they are (the API reads a series'
 * windows from its rolled_until on). Anything else (a deadlock, the connection) fails the write.
 */
export async function rollUp(client: pg.ClientBase, want: ReadonlyMap<SeriesRef, number>, logger?: Logger): Promise<Array<[SeriesRef, number]>> {
  if (want.size === 0) return [];
  // At most ROLL_SERIES at once, the longest unrolled first: when every series reaches a new hour
  // together, the work (and the time writers wait for the rollup lock) spreads over the next few
  // emissions instead of stalling one. In id order, as the function reads them.
  const picked = want.size <= ROLL_SERIES ? [...want] : [...want].sort((a, b) => a[0].rolledMs - b[0].rolledMs).slice(0, ROLL_SERIES);
  const offer = picked.sort((a, b) => (a[0].id < b[0].id ? -1 : a[0].id > b[0].id ? 1 : 0));
  const out: Array<[SeriesRef, number]> = [];
  await client.query('BEGIN');
  try {
    // Sorts and hash tables of the roll in memory (an hour of 500 series' windows sorts in ~30 MB).
    await client.query(`SET LOCAL work_mem = '${ROLL_WORK_MEM}'`);
    await rollPart(client, offer, out, logger);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
  return out;
}

async function rollPart(client: pg.ClientBase, offer: ReadonlyArray<[SeriesRef, number]>, out: Array<[SeriesRef, number]>, logger?: Logger): Promise<void> {
  if (offer.length === 0) return;
  await client.query('SAVEPOINT streamstats_roll');
  try {
    const ids = offer.map(([s]) => s.id);
    const upto = offer.map(([, ms]) => new Date(ms).toISOString());
    const res = await client.query<{ id: string; rolled_ms: number }>({ name: 'streamstats_roll', text: ROLL, values: [ids, upto] });
    await client.query('RELEASE SAVEPOINT streamstats_roll');
    const byId = new Map(res.rows.map((r) => [r.id.replace(/-/g, ''), Number(r.rolled_ms)]));
    for (const [s] of offer) {
      const ms = byId.get(s.id);
      if (ms !== undefined) out.push([s, ms]);
    }
    return;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code !== 'string' || !(code.startsWith('22') || code.startsWith('54'))) throw err;
    await client.query('ROLLBACK TO SAVEPOINT streamstats_roll');
    await client.query('RELEASE SAVEPOINT streamstats_roll');
    if (offer.length === 1) {
      offer[0]![0].rollFailed = true;
      logger?.warn({ series: offer[0]![0].id, name: offer[0]![0].name, code, err: (err as Error).message }, 'postgres: cannot roll up the stored windows of a series; its windows stay unrolled');
      return;
    }
  }
  const half = offer.length >>> 1;
  await rollPart(client, offer.slice(0, half), out, logger);
  await rollPart(client, offer.slice(half), out, logger);
}
