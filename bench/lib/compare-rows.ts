// Our statistics rows against a peer's (DuckDB's GROUP BY of the same samples): matched by (name, unit,
// resource_id, period_start); counts and duration bounds must be equal, the floating statistics within a
// relative tolerance (the peer sums in another order).
import { readFileSync } from 'node:fs';

export interface PeerRow {
  readonly name: string;
  readonly unit: string;
  readonly resource_id: string;
  readonly period_start: string;
  readonly count: number;
  readonly sum: number;
  readonly min: number;
  readonly max: number;
  readonly avg: number;
  readonly stddev: number;
  readonly duration_start: string;
  readonly duration_end: string;
}

export interface RowComparison {
  readonly ours: number;
  readonly theirs: number;
  readonly matched: number;
  /** Rows on one side only, or whose count or duration bounds differ, or a statistic beyond the tolerance. */
  readonly mismatched: number;
  readonly worstRelative: number;
  readonly firstMismatch: string | null;
}

const FLOATS = ['sum', 'min', 'max', 'avg', 'stddev'] as const;

function ndjson(path: string): unknown[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as unknown);
}

const keyOf = (r: { name: string; unit: string; resource_id: string; period_start: string }): string => `${r.name}\u0000${r.unit}\u0000${r.resource_id}\u0000${r.period_start}`;

export function compareWithPeer(oursPath: string, peerPath: string, tolerance = 1e-9): RowComparison {
  const theirs = new Map<string, PeerRow>();
  for (const r of ndjson(peerPath) as PeerRow[]) theirs.set(keyOf(r), r);
  const theirCount = theirs.size;
  let matched = 0;
  let mismatched = 0;
  let worst = 0;
  let first: string | null = null;
  const miss = (why: string): void => {
    mismatched++;
    first ??= why;
  };
  const ours = ndjson(oursPath) as Array<Omit<PeerRow, 'resource_id'> & { groupby: { resource_id: string } }>;
  for (const o of ours) {
    const k = keyOf({ ...o, resource_id: o.groupby.resource_id });
    const t = theirs.get(k);
    if (t === undefined) {
      miss(`only ours: ${k.replace(/\u0000/g, ' ')}`);
      continue;
    }
    theirs.delete(k);
    if (t.count !== o.count || t.duration_start !== o.duration_start || t.duration_end !== o.duration_end) {
      miss(`${k.replace(/\u0000/g, ' ')}: count/duration ${o.count} ${o.duration_start} ${o.duration_end} vs ${t.count} ${t.duration_start} ${t.duration_end}`);
      continue;
    }
    let ok = true;
    for (const f of FLOATS) {
      const a = o[f];
      const b = t[f];
      const rel = a === b ? 0 : Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b));
      worst = Math.max(worst, rel);
      if (!(rel <= tolerance)) ok = false;
    }
    if (ok) matched++;
    else miss(`${k.replace(/\u0000/g, ' ')}: a statistic beyond ${tolerance} relative`);
  }
  for (const k of theirs.keys()) miss(`only the peer's: ${k.replace(/\u0000/g, ' ')}`);
  return { ours: ours.length, theirs: theirCount, matched, mismatched, worstRelative: worst, firstMismatch: first };
}
