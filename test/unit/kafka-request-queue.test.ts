// kafkajs 2.2.4's RequestQueue re-armed a 1 ms timer forever once it had checked its queue, also with
// nothing pending (src/kafka/request-queue.ts): an idle consumer woke its event loop a thousand times a
// second per broker connection. Patched, a queue with nothing pending arms nothing, and a throttled
// request still goes out when the throttle ends. kafkajs's own class, no broker needed.
import { execFileSync } from 'node:child_process';
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

// The tests' and benchmarks' own kafkajs clients (test/fixtures/topics.ts) printed
// "TimeoutNegativeWarning: -<Date.now()> is a negative number" from every connection: they were made
// without the fix. A fresh process, so that nothing else installed it first.
t.test('a client from the test fixtures gets the fix: no TimeoutNegativeWarning', async (t) => {
  const fixtures = new URL('../fixtures/topics.js', import.meta.url).href;
  const script = `
    import { createRequire } from 'node:module';
    import { kafkaClient } from ${JSON.stringify(fixtures)};
    const warnings = [];
    process.on('warning', (w) => warnings.push(w.name));
    kafkaClient(['127.0.0.1:1']);
    const RequestQueue = createRequire(${JSON.stringify(fixtures)})('kafkajs/src/network/requestQueue/index.js');
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    const q = new RequestQueue({ maxInFlightRequests: null, requestTimeout: 30000, enforceRequestTimeout: false, clientId: 'test', broker: 'b:9092', logger: silent });
    q.checkPendingRequests();
    setTimeout(() => { q.destroy(); process.stdout.write(JSON.stringify(warnings)); }, 50);
  `;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  t.same(JSON.parse(out), [], 'no warning (unpatched: TimeoutNegativeWarning)');
});
