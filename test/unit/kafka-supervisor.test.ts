// Group-membership supervision without a broker: a session is any function that resolves when
// stopped and rejects when it failed.
import t from 'tap';
import { Signal, sleep } from '../../src/async/index.js';
import { Supervisor } from '../../src/sources/kafka/supervisor.js';

function setup(script: Array<'fail' | 'join-then-fail'>, o: { baseDelayMs: number; maxDelayMs: number }) {
  const stop = new Signal();
  const delays: number[] = [];
  const failures: string[] = [];
  let n = 0;
  const sup: Supervisor = new Supervisor({
    ...o,
    stop,
    random: () => 1,
    session: async () => {
      const step = script[n++];
      if (step === undefined) {
        stop.raise();
        return;
      }
      if (step === 'join-then-fail') sup.joined();
      throw new Error(`session ${n} failed`);
    },
    onFailure: (err) => failures.push((err as Error).message),
    onBackoff: (_attempt, delayMs) => delays.push(delayMs),
  });
  return { sup, stop, delays, failures, sessions: () => n };
}

t.test('back-off doubles per failed session up to the cap, and resets after a successful join', async (t) => {
  const s = setup(['fail', 'fail', 'fail', 'fail', 'join-then-fail', 'fail'], { baseDelayMs: 2, maxDelayMs: 8 });
  await s.sup.run();
  t.same(s.delays, [2, 4, 8, 8, 2, 4]);
  t.equal(s.failures.length, 6, 'every failure is reported');
  t.equal(s.sessions(), 7, 'a new session after each back-off, until stopped');
});

t.test('stop() during a back-off ends run() at once, without another session', async (t) => {
  const s = setup(['fail', 'fail'], { baseDelayMs: 60_000, maxDelayMs: 60_000 });
  const started = Date.now();
  const run = s.sup.run();
  await sleep(20);
  t.equal(s.delays.length, 1, 'backing off after the first failure');
  s.stop.raise();
  await run;
  t.ok(Date.now() - started < 5000, 'did not wait out the 60 s back-off');
  t.equal(s.sessions(), 1);
});

t.test('a failure after stop() is not reported as one to reconnect from', async (t) => {
  const stop = new Signal();
  const failures: unknown[] = [];
  const sup = new Supervisor({
    stop, baseDelayMs: 1, maxDelayMs: 1, onBackoff: () => t.fail('no back-off after stop'),
    session: async () => {
      stop.raise();
      throw new Error('disconnected while stopping');
    },
    onFailure: (err) => failures.push(err),
  });
  await sup.run();
  t.same(failures, []);
  t.throws(() => new Supervisor({ stop, baseDelayMs: 10, maxDelayMs: 5, session: async () => {}, onFailure: () => {}, onBackoff: () => {} }), /baseDelayMs \(10\) <= maxDelayMs \(5\)/);
});

t.test('a back-off ends once the probe answers after it did not; a broker answering from the start does not cut it short', async (t) => {
  const run = async (answers: (call: number) => boolean) => {
    const stop = new Signal();
    let sessions = 0;
    let probes = 0;
    const started = performance.now();
    const ended: number[] = [];
    const sup = new Supervisor({
      baseDelayMs: 2000,
      maxDelayMs: 2000,
      stop,
      random: () => 1,
      probeIntervalMs: 20,
      probe: async () => answers(probes++),
      session: async () => {
        ended.push(performance.now() - started);
        if (++sessions === 2) {
          stop.raise();
          return;
        }
        throw new Error('brokers unreachable');
      },
      onFailure: () => {},
      onBackoff: () => {},
    });
    await sup.run();
    return { second: ended[1]!, probes };
  };
  const back = await run((call) => call >= 5);
  t.ok(back.second < 1000, `reconnected within a few probe intervals of the broker answering (${back.second.toFixed(0)} ms, back-off 2000 ms)`);
  const always = await run(() => true);
  t.ok(always.second >= 1900, `the broker answered all along: the whole back-off (${always.second.toFixed(0)} ms)`);
});
