// Closed windows leave in bounded chunks: a close over a million open series formatted and written in
// one piece held the event loop for seconds (/metrics, /readyz and heartbeats starved) and built one
// NDJSON string that can pass V8's string limit. Pure: the engine cuts its emissions with it, and so
// does the worker that owns a lane (LANE_STATE=worker).
import { cellHasSketch, cellKey, cellStart, sliceCells, type CellList, type ClosedCell } from './cells.js';

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
  return rowBytes(c.key, c.sketch !== undefined);
}

function rowBytes(key: string, sketch: boolean): number {
  return 6 * key.length + 512 + (sketch ? 8192 : 0);
}

/** Splits cells into runs of at most `rows` rows and about `bytes` bytes (always at least one row). */
export function splitCells<T extends CellList>(cells: T, limits: ChunkLimits): T[] {
  const out: T[] = [];
  const n = cells.length;
  let start = 0;
  while (start < n) {
    let end = start;
    let bytes = 0;
    while (end < n && end - start < limits.rows) {
      const b = rowBytes(cellKey(cells, end), cellHasSketch(cells, end));
      if (end > start && bytes + b > limits.bytes) break;
      bytes += b;
      end++;
    }
    out.push(sliceCells(cells, start, end));
    start = end;
  }
  return out;
}

export function windowCount(cells: CellList): number {
  // A close hands out windows oldest first, each window's cells together: then the windows are the
  // runs of equal starts (a Set of the starts boxed every one of these doubles). Any other order: the Set.
  let runs = cells.length > 0 ? 1 : 0;
  for (let i = 1; i < cells.length; i++) {
    const a = cellStart(cells, i - 1);
    const b = cellStart(cells, i);
    if (b < a) return distinctStarts(cells);
    if (b !== a) runs++;
  }
  return runs;
}

function distinctStarts(cells: CellList): number {
  const seen = new Set<number>();
  for (let i = 0; i < cells.length; i++) seen.add(cellStart(cells, i));
  return seen.size;
}

/**
 * Windows a chunk completes: those it holds, minus its last when the next chunk continues that window
 * (a window split over chunks counts in the chunk that ends it).
 */
export function windowsEnded(part: CellList, next: CellList | undefined): number {
  const continued = next !== undefined && next.length > 0 && part.length > 0 && cellStart(part, part.length - 1) === cellStart(next, 0);
  return windowCount(part) - (continued ? 1 : 0);
}
