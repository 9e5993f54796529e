// Exact mapping between Redis entry ids (ms-seq) and the engine's numeric positions.
//
// The engine's lanes need positions that are JS numbers, exact, and ordered like the entries. An id
// `ms-seq` maps to ms * 2^12 + seq, exact below 2^53 while ms < 2^41 (until 2039-09-07) and
// seq < 4096 (entries added by XADD * within one millisecond, or one MULTI/Lua script since Redis 7
// freezes the clock there). The mapping is its own inverse, so a stored position (the sink's
// table, or our commit hash) names an entry id without a lookup table. Ids out of that range are
// refused with an error that says so; they are never rounded (a rounded position could skip or
// repeat entries on restart).
import { StreamstatsError } from '../../errors.js';

export const SEQ_BITS = 12;
const SEQ_SPAN = 2 ** SEQ_BITS;
export const MAX_MS = 2 ** (53 - SEQ_BITS) - 1;

export function idToPosition(id: string): number {
  const dash = id.indexOf('-');
  const ms = Number(id.slice(0, dash));
  const seq = Number(id.slice(dash + 1));
  if (dash <= 0 || !Number.isSafeInteger(ms) || !Number.isSafeInteger(seq) || ms > MAX_MS || seq >= SEQ_SPAN || ms < 0 || seq < 0) {
    throw new StreamstatsError(
      'STREAMSTATS_SOURCE',
      `redis: entry id ${JSON.stringify(id)} cannot be a position: SOURCE=redis needs ids ms-seq with ms <= ${MAX_MS} and seq < ${SEQ_SPAN} (auto ids from XADD * fit unless one millisecond, MULTI or script adds more than ${SEQ_SPAN} entries)`,
      { canRetry: false },
    );
  }
  return ms * SEQ_SPAN + seq;
}

export function positionToId(position: number): string {
  if (!Number.isSafeInteger(position) || position < 0) throw new RangeError(`redis: position ${position} is not a non-negative safe integer`);
  return `${Math.floor(position / SEQ_SPAN)}-${position % SEQ_SPAN}`;
}

/** Milliseconds of the entry at a position (entry ids carry their append time): lag in seconds. */
export function positionMs(position: number): number {
  return Math.floor(position / SEQ_SPAN);
}
