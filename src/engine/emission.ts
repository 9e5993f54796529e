// Closed windows leave in bounded chunks (../windows/chunks.ts); between chunks the engine yields to
// the event loop.
import type { LaneIdentity } from '../commit/types.js';
import type { RowBatch, StatsRow } from '../windows/row.js';
import type { CellList } from '../windows/cells.js';

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
