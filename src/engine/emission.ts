// Closed windows leave in bounded chunks (../windows/chunks.ts); between chunks the engine yields to
// the event loop.
import type { LaneIdentity } from '../commit/types.js';
import type { RowBatch, StatsRow } from '../windows/row.js';
import type { CellList } from '../windows/cells.js';
import type { Metrics } from '../metrics/index.js';

export { EMIT_CHUNK_DEFAULTS, rowBytesEstimate, splitCells, windowCount, windowsEnded, type ChunkLimits } from '../windows/chunks.js';

/** Lets timers, sockets and HTTP handlers run between two chunks. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * One RowBatch over rows formatted chunk by chunk, yielding between chunks: for a sink whose emission
 * must be one write (exactly-once Kafka: a transaction per chunk would be replayed as duplicates).
 * Its ndjson() joins the chunks' texts, so such a sink must not ask for it on huge emissions.
 */
export async function formatWhole(format: (cells: CellList) => RowBatch | Promise<RowBatch>, chunks: readonly CellList[], ident: LaneIdentity | undefined): Promise<RowBatch> {
  const parts: RowBatch[] = [];
  for (let i = 0; i < chunks.length; i++) {
    if (i > 0) await yieldToLoop();
    parts.push(await format(chunks[i]!));
  }
  if (parts.length === 1) return parts[0]!;
  const partOf: number[] = [];
  const base: number[] = [];
  for (let p = 0; p < parts.length; p++) {
    base.push(partOf.length);
    for (let j = 0; j < chunks[p]!.length; j++) partOf.push(p);
  }
  const at = (i: number): [RowBatch, number] => [parts[partOf[i]!]!, i - base[partOf[i]!]!];
  let rows: StatsRow[] | null = null;
  return {
    where: ident,
    get rows(): readonly StatsRow[] {
      rows ??= parts.flatMap((p) => p.rows);
      return rows;
    },
    ndjson: () => parts.map((p) => p.ndjson()).join(''),
    ndjsonBytes: () => Buffer.concat(parts.map((p) => p.ndjsonBytes?.() ?? Buffer.from(p.ndjson()))),
    json: (i) => {
      const [p, j] = at(i);
      return p.json?.(j) ?? JSON.stringify(p.rows[j]);
    },
    identityKey: (i) => {
      const [p, j] = at(i);
      return p.identityKey!(j);
    },
  };
}

/** What a lane reports for the state gauges: the Lane itself (main engine) or its owner's last figures. */
export interface LaneCounts {
  readonly openSeries: number;
  readonly openWindows: number;
  readonly keptWindows: number;
  readonly keptBytes: number;
  readonly evictedWindows: number;
}

/** What the engine keeps beside a lane for the gauges: rows handed to the sink and not yet written, evictions counted. */
export interface GaugedLane {
  readonly unwrittenCells: number;
  readonly unwrittenWindows: number;
  evictedSeen: number;
}

/**
 * Sets the open-state gauges over every lane (rows on their way to the sink still count as open) and,
 * with amendment, the kept-window gauges and the evictions since the last call. Shared by both engines.
 */
export function setStateGauges<L extends GaugedLane>(metrics: Metrics, lanes: Iterable<L>, counts: (lane: L) => LaneCounts, stateBytes: number, amend: boolean): void {
  let series = 0;
  let windows = 0;
  let keptBytes = 0;
  let kept = 0;
  for (const s of lanes) {
    const c = counts(s);
    series += c.openSeries + s.unwrittenCells;
    windows += c.openWindows + s.unwrittenWindows;
    if (!amend) continue;
    keptBytes += c.keptBytes;
    kept += c.keptWindows;
    if (c.evictedWindows > s.evictedSeen) {
      metrics.amendEvictedWindows.inc(c.evictedWindows - s.evictedSeen);
      s.evictedSeen = c.evictedWindows;
    }
  }
  metrics.openSeries.set(series);
  metrics.openWindows.set(windows);
  metrics.stateBytes.set(stateBytes);
  if (amend) {
    metrics.amendStateBytes.set(keptBytes);
    metrics.amendKeptWindows.set(kept);
  }
}
