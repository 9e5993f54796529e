import t from 'tap';
import { Gate, Signal, TimeoutError, backoffMs, canRetry, retry, sleep, withTimeout } from '../../src/async/index.js';
import { StreamstatsError } from '../../src/errors.js';

t.test('Gate admits at most limit holders and wakes waiters in order', async (t) => {
  const g = new Gate(2);
  const order: number[] = [];
  let running = 0;
  let peak = 0;
  const job = (i: number) => g.run(async () => {
    running++;
    peak = Math.max(peak, running);
    await sleep(5);
    order.push(i);
    running--;
  });
  await Promise.all([0, 1, 2, 3, 4].map(job));
  t.equal(peak, 2);
  t.same(order.slice(0, 2).sort(), [0, 1]);
  t.same(order.slice(2), [2, 3, 4]);
  t.equal(g.held, 0);
  t.throws(() => g.release(), /without a held slot/);
});

t.test('Gate.idle resolves only once every slot is released; resize wakes waiters', async (t) => {
  const g = new Gate(1);
  t.ok(g.tryAcquire());
  t.notOk(g.tryAcquire());
  let second = false;
  const p = g.acquire().then(() => { second = true; });
  let idle = false;
  const i = g.idle().then(() => { idle = true; });
  g.resize(2);
  await p;
  t.ok(second, 'resize freed a slot for the waiter');
  g.release();
  await sleep(1);
  t.notOk(idle, 'one slot is still held');
  g.release();
  await i;
  t.ok(idle);
  t.throws(() => new Gate(0), /limit must be an integer >= 1/);
});

t.test('withTimeout rejects with a TimeoutError naming what timed out, and passes results through', async (t) => {
  const err = await withTimeout(new Promise(() => {}), 10, 'reading positions').catch((e: unknown) => e);
  t.ok(err instanceof TimeoutError);
  t.match((err as Error).message, /^reading positions timed out after 10 ms$/);
  t.equal(await withTimeout(Promise.resolve(7), 1000, 'x'), 7);
  await t.rejects(withTimeout(Promise.reject(new Error('own')), 1000, 'x'), /own/);
});

t.test('sleep ends early when the signal is raised', async (t) => {
  const s = new Signal();
  const t0 = Date.now();
  setTimeout(() => s.raise(), 5);
  await sleep(5000, s);
  t.ok(Date.now() - t0 < 1000);
  t.ok(s.raised);
  await s.wait();
});

t.test('retry honours the error\'s canRetry flag and the attempt limit', async (t) => {
  let n = 0;
  const out = await retry(async () => {
    n++;
    if (n < 3) throw new StreamstatsError('STREAMSTATS_SINK', 'transient', { canRetry: true });
    return 'ok';
  }, { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 });
  t.equal(out, 'ok');
  t.equal(n, 3);

  n = 0;
  await t.rejects(retry(async () => {
    n++;
    throw new StreamstatsError('STREAMSTATS_SINK', 'fatal', { canRetry: false });
  }, { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 }), /fatal/);
  t.equal(n, 1, 'a non-retriable error is thrown at once');

  n = 0;
  const seen: number[] = [];
  await t.rejects(retry(async () => {
    n++;
    throw new Error('plain');
  }, { attempts: 3, baseDelayMs: 1, maxDelayMs: 2, onRetry: (_e, a) => seen.push(a) }), /plain/);
  t.equal(n, 3);
  t.same(seen, [1, 2]);
  t.ok(canRetry(new Error('x')));
  t.notOk(canRetry(new StreamstatsError('STREAMSTATS_CONFIG', 'x')));
});

t.test('retry stops when the signal is raised during the back-off', async (t) => {
  const s = new Signal();
  let n = 0;
  const p = retry(async () => {
    n++;
    throw new Error('down');
  }, { attempts: Infinity, baseDelayMs: 10_000, maxDelayMs: 10_000, signal: s });
  setTimeout(() => s.raise(), 5);
  await t.rejects(p, /down/);
  t.equal(n, 1);
});

t.test('backoffMs grows exponentially up to the cap, jittered by 0.5..1', async (t) => {
  const o = { baseDelayMs: 100, maxDelayMs: 1000 };
  t.equal(backoffMs(1, { ...o, random: () => 1 }), 100);
  t.equal(backoffMs(3, { ...o, random: () => 1 }), 400);
  t.equal(backoffMs(10, { ...o, random: () => 1 }), 1000);
  t.equal(backoffMs(10, { ...o, random: () => 0 }), 500);
});
