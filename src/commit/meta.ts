// The metadata stored with a committed Kafka offset (plain commits and the exactly-once sink's
// transactional ones alike): the emitted-window boundary and how far processing got.
import type { CommitPoint } from './types.js';

export interface CommitMeta {
  v: 1;
  /** Watermark (ms): every window ending at or before it was emitted. */
  wm: number;
  /** Position after the last applied batch: below it, everything was processed once. */
  hi: number;
}

export function formatCommitMeta(p: CommitPoint): string {
  const meta: CommitMeta = { v: 1, wm: Number.isFinite(p.watermarkMs) ? p.watermarkMs : 0, hi: p.appliedEnd };
  return JSON.stringify(meta);
}

/** Null for metadata written by someone else: the partition then starts without a boundary. */
export function parseCommitMeta(text: string | null | undefined): CommitMeta | null {
  if (text === null || text === undefined || text === '') return null;
  try {
    const m = JSON.parse(text) as Partial<CommitMeta>;
    if (m.v === 1 && typeof m.wm === 'number' && typeof m.hi === 'number') return { v: 1, wm: m.wm, hi: m.hi };
  } catch {
    // Not ours.
  }
  return null;
}
