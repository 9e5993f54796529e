// The metadata stored with a committed Kafka offset (plain commits and the exactly-once sink's
// transactional ones alike): the rest of the commit point, the offset being its position.
// Wire format, kept stable across versions: {"v":1,"wm":<watermark ms>,"hi":<applied end>}, and
// with LATE_RECORDS=amend "kf":<keptFromMs> after them (a reader of version 1 ignores it).
import type { CommitPoint, RestoredPoint } from './types.js';

interface CommitMetaV1 {
  v: 1;
  wm: number;
  hi: number;
  kf?: number;
}

export function formatCommitMeta(p: CommitPoint): string {
  const meta: CommitMetaV1 = { v: 1, wm: Number.isFinite(p.watermarkMs) ? p.watermarkMs : 0, hi: p.appliedEnd };
  if (p.keptFromMs !== undefined) meta.kf = p.keptFromMs;
  return JSON.stringify(meta);
}

/** Null for metadata written by someone else: the lane then starts without a boundary. */
export function parseCommitMeta(text: string | null | undefined): RestoredPoint | null {
  if (text === null || text === undefined || text === '') return null;
  try {
    const m = JSON.parse(text) as Partial<CommitMetaV1>;
    if (m.v === 1 && typeof m.wm === 'number' && typeof m.hi === 'number') {
      return typeof m.kf === 'number' ? { watermarkMs: m.wm, appliedEnd: m.hi, keptFromMs: m.kf } : { watermarkMs: m.wm, appliedEnd: m.hi };
    }
  } catch {
    // Not ours.
  }
  return null;
}
