// kafkajs 2.2.4's RequestQueue re-arms a timer of (throttledUntil - Date.now()) ms after every check of
// its pending requests, also when nothing is pending and nothing is throttled: throttledUntil is then
// -1, the delay about minus the epoch, which Node runs after 1 ms (Node 24 warns: TimeoutNegativeWarning),
// and that check arms the next. So every broker connection woke the event loop about a thousand times
// a second for its whole life (kafkajs#1751, #1768, not released upstream). With nothing pending there
// is nothing to check later: a request that cannot go out at once is queued by push(), which arms the
// timer itself, so skipping it here loses nothing.
import { kafkajsInternals } from './internals.js';

const PATCHED = Symbol.for('streamstats.requestQueuePatched');

interface RequestQueueProto {
  pending: unknown[];
  scheduleCheckPendingRequests(this: RequestQueueProto): void;
  [PATCHED]?: true;
}

/** Installs the fix on kafkajs 2.2.4 (idempotent); false for another release or layout (left as it is). */
export function patchRequestQueue(): boolean {
  const proto = kafkajsInternals((r) => (r('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueProto }).prototype);
  if (proto === null) return false;
  if (proto[PATCHED] === true) return true;
  const original = proto.scheduleCheckPendingRequests;
  if (typeof original !== 'function') return false;
  proto.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueueProto): void {
    if (this.pending.length === 0) return;
    original.call(this);
  };
  proto[PATCHED] = true;
  return true;
}
