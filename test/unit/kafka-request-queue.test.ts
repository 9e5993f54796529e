// kafkajs 2.2.4's RequestQueue re-armed a 1 ms timer forever once it had checked its queue, also with
// nothing pending (src/kafka/request-queue.ts): an idle consumer woke its event loop a thousand times a
// second per broker connection. Patched, a queue with nothing pending arms nothing, and a throttled
// request still goes out when the throttle ends. kafkajs's own class, no broker needed.
import { createRequire } from 'node:module';
import t, { type Test } from 'tap';
import { patchRequestQueue } from '../../src/kafka/request-queue.js';

const require = createRequire(import.meta.url);

interface Queue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
  sendSocketRequest(r: unknown): void;
  destroy(): void;
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

function queue(t: Test): Queue {
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => Queue;
  const q = new RequestQueue({ maxInFlightRequests: null, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'test', broker: 'b:9092', logger: silent });
  t.teardown(() => q.destroy());
  return q;
}

t.test('installed on kafkajs 2.2.4, once', async (t) => {
  t.equal(patchRequestQueue(), true, 'installed');
  t.equal(patchRequestQueue(), true, 'a second call finds it installed');
});

t.test('nothing pending: no timer after a check', async (t) => {
  patchRequestQueue();
  const q = queue(t);
  q.checkPendingRequests();
  t.equal(q.throttleCheckTimeoutId, null, 'no timer armed (unpatched: a 1 ms timer that re-arms itself)');
});

t.test('a throttled request goes out when the throttle ends, and then nothing is armed', async (t) => {
  patchRequestQueue();
  const q = queue(t);
  const sent: unknown[] = [];
  q.sendSocketRequest = (r) => sent.push(r);
  q.throttledUntil = Date.now() + 40;
  q.pending.push({ id: 1 });
  q.scheduleCheckPendingRequests();
  t.not(q.throttleCheckTimeoutId, null, 'armed for the end of the throttle');
  await new Promise((r) => setTimeout(r, 120));
  t.same(sent, [{ id: 1 }], 'sent once the throttle ended');
  t.equal(q.pending.length, 0);
  t.equal(q.throttleCheckTimeoutId, null, 'nothing left to check: no timer');
});
