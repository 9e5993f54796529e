// Idle flush: a partition that is caught up and has received nothing for `idleFlushMs` lets its
// watermark follow the wall clock (the engine subtracts the allowed lateness), so its windows still
// close and reach the sink when the producers have gone quiet.
import type { Engine } from '../../engine/index.js';
import type { Held } from './assignment.js';

export interface IdleFlushOptions {
  readonly engine: Pick<Engine, 'lastActivityMs' | 'advanceIdle'>;
  readonly idleFlushMs: number;
}

/** Advances every partition of `caughtUp` idle for `idleFlushMs` or more; returns those it advanced. */
export async function flushIdle(caughtUp: readonly Held[], nowMs: number, o: IdleFlushOptions): Promise<Held[]> {
  const flushed: Held[] = [];
  for (const h of caughtUp) {
    const last = o.engine.lastActivityMs(h.id);
    if (last === null || nowMs - last < o.idleFlushMs) continue;
    await o.engine.advanceIdle(h.id, nowMs);
    flushed.push(h);
  }
  return flushed;
}
