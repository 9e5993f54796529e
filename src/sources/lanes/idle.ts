// Idle flush: a lane that is caught up and has received nothing for `idleFlushMs` lets its
// watermark follow the wall clock (the lane subtracts the allowed lateness), so its windows still
// close and reach the sink when the producers have gone quiet.
import type { LaneHost } from '../types.js';

export interface IdleFlushOptions {
  readonly lanes: Pick<LaneHost, 'status' | 'advanceIdle'>;
  readonly idleFlushMs: number;
}

/** Advances every lane of `caughtUp` idle for `idleFlushMs` or more; returns those it advanced. */
export async function flushIdle<L extends { readonly id: number }>(caughtUp: readonly L[], nowMs: number, o: IdleFlushOptions): Promise<L[]> {
  const flushed: L[] = [];
  for (const l of caughtUp) {
    const last = o.lanes.status(l.id)?.lastActivityMs;
    if (last === undefined || nowMs - last < o.idleFlushMs) continue;
    await o.lanes.advanceIdle(l.id, nowMs);
    flushed.push(l);
  }
  return flushed;
}
