// Closed windows leave in bounded chunks: a close over a million open series formatted and written in
// one piece held the event loop for seconds (/metrics, /readyz and heartbeats starved) and built one
// NDJSON string that can pass V8's string limit. Between chunks the engine yields to the event loop.
import type { LaneIdentity } from '../commit/types.js';
import type { RowBatch, RowFormatter, StatsRow } from '../windows/row.js';
import type { ClosedCell } from '../windows/store.js';

export interface ChunkLimits {
  /** Rows per chunk (EMIT_CHUNK_ROWS). */
  readonly rows: number;
  /** Estimated JSON bytes per chunk: keeps one chunk's NDJSON text far below V8's ~512 MiB string limit. */
  readonly bytes: number;
}

export const EMIT_CHUNK_DEFAULTS: ChunkLimits = Object.freeze({ rows: 10_000, bytes: 32 * 1024 * 1024 });

/**
 * Upper estimate of a row's JSON: the series key (name + dimensions) may be escaped up to 6 bytes per
 * byte (`\u0000`), plus the fixed fields; a sketch adds a few KiB at most.
 */
export function rowBytesEstimate(c: ClosedCell): number {
  return 6 * c.key.length + 512 + (c.sketch === undefined ? 0 : 8192);
}

/** Splits cells into runs of at most `rows` rows and about `bytes` bytes (always at least one row). */
export function splitCells(cells: readonly ClosedCell[], limits: ChunkLimits): ClosedCell[][] {
  const out: ClosedCell[][] = [];
  let start = 0;
  while (start < cells.length) {
    let end = start;
    let bytes = 0;
    while (end < cells.length && end - start < limits.rows) {
      const b = rowBytesEstimate(cells[end]!);
      if (end > start && bytes + b > limits.bytes) break;
      bytes += b;
      end++;
    }
    out.push(cells.slice(start, end));
    start = end;
  }
  return out;
}

export function windowCount(cells: readonly ClosedCell[]): number {
  return new Set(cells.map((c) => c.windowStart)).size;
}

/** Lets timers, sockets and HTTP handlers run between two chunks. */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * One RowBatch over rows formatted chunk by chunk, yielding between chunks: for a sink whose emission
 * must be one write (exactly-once Kafka: a transaction per chunk would be replayed as duplicates).
 * Its ndjson() joins the chunks' texts, so such a sink must not ask for it on huge emissions.
 */
export async function formatWhole(fmt: RowFormatter, chunks: readonly ClosedCell[][], ident: LaneIdentity | undefined): Promise<RowBatch> {
  const parts: RowBatch[] = [];
  for (let i = 0; i < chunks.length; i++) {
    if (i > 0) await yieldToLoop();
    parts.push(fmt.format(chunks[i]!, ident));
  }
  if (parts.length === 1) return parts[0]!;
  const rows: StatsRow[] = [];
  const partOf: number[] = [];
  const base: number[] = [];
  for (let p = 0; p < parts.length; p++) {
    base.push(rows.length);
    for (const r of parts[p]!.rows) {
      rows.push(r);
      partOf.push(p);
    }
  }
  const at = (i: number): [RowBatch, number] => [parts[partOf[i]!]!, i - base[partOf[i]!]!];
  return {
    rows,
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
