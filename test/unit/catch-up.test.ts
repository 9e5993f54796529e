// The catch-up estimate: lag / (consume rate - produce rate) from the lag's own slope, with the
// three states the alert and the dashboard read.
import t from 'tap';
import { Registry } from 'prom-client';
import { CatchUp, CatchUpSeries } from '../../src/sources/catch-up.js';
import { createMetrics } from '../../src/metrics/index.js';

t.test('a lag that falls steadily: catching up, in lag / rate seconds', async (t) => {
  const s = new CatchUpSeries();
  // 1,000,000 behind, consuming 12,000/s while 2,000/s are produced: falls 10,000 a second.
  let e = null;
  for (let sec = 0; sec <= 30; sec++) e = s.observe(sec * 1000, 1_000_000 - sec * 10_000, 600);
  t.equal(e?.state, 'catching_up');
  t.ok(Math.abs(e!.ratePerSecond - 10_000) < 1e-6, `rate ${e?.ratePerSecond}`);
  t.ok(Math.abs(e!.seconds - 700_000 / 10_000) < 1e-6, `70 s left (${e?.seconds})`);
});

t.test('no estimate until the samples span the minimum; a growing or flat lag is falling behind', async (t) => {
  const s = new CatchUpSeries();
  t.equal(s.observe(0, 5_000, 60), null, 'one sample: nothing to say');
  t.equal(s.observe(5_000, 6_000, 65), null, 'five seconds: still nothing');
  const e = s.observe(10_000, 7_000, 70);
  t.equal(e?.state, 'falling_behind');
  t.equal(e?.seconds, Infinity, 'never, at this rate');
  t.ok(e!.ratePerSecond < 0, 'the lag grows');

  const flat = new CatchUpSeries();
  for (let sec = 0; sec <= 20; sec++) flat.observe(sec * 1000, 4_200, 100 + sec);
  t.equal(flat.observe(21_000, 4_200, 121)?.state, 'falling_behind', 'a consumer that stopped (or a phantom lag that never moves) does not catch up');
});

t.test('keeping up: nothing behind, or the oldest unprocessed record is only seconds old', async (t) => {
  const s = new CatchUpSeries();
  t.same(s.observe(0, 0, 0), { state: 'keeping_up', seconds: 0, ratePerSecond: 0 }, 'no lag: keeping up from the first sample');
  t.equal(s.observe(1_000, 3_000, 2)?.state, 'keeping_up', 'a few batches in hand under a steady load');
  t.equal(s.observe(2_000, 3_000, null), null, 'behind, with an unknown age and too short a span: no estimate');
});

t.test('fetch-sized steps do not read as a sprint: the slope is fitted, not two samples', async (t) => {
  const s = new CatchUpSeries();
  // A consumer that applies 10,000 every 5 s while the producer adds 1,000 a second: net -1,000/s.
  let lag = 200_000;
  let e = null;
  for (let sec = 0; sec <= 60; sec++) {
    lag += 1_000;
    if (sec % 5 === 4) lag -= 10_000;
    e = s.observe(sec * 1000, lag, 300);
  }
  t.equal(e?.state, 'catching_up');
  t.ok(e!.ratePerSecond > 800 && e!.ratePerSecond < 1_200, `about 1,000 a second (${e?.ratePerSecond.toFixed(0)}), not the 9,000 of the last step`);
});

t.test('the window is bounded: only the last minute counts, samples closer than a second merge', async (t) => {
  const s = new CatchUpSeries();
  // A minute of growth, then a minute of steady decline: the estimate follows the decline alone.
  let e = null;
  for (let sec = 0; sec <= 60; sec++) e = s.observe(sec * 1000, 100_000 + sec * 1_000, 200);
  t.equal(e?.state, 'falling_behind');
  for (let sec = 61; sec <= 125; sec++) e = s.observe(sec * 1000, 160_000 - (sec - 60) * 2_000, 200);
  t.equal(e?.state, 'catching_up');
  t.ok(Math.abs(e!.ratePerSecond - 2_000) < 1e-6, `the last minute's rate (${e?.ratePerSecond})`);
  // Scrapes many times a second add no samples beyond one a second.
  const dense = new CatchUpSeries();
  for (let ms = 0; ms <= 30_000; ms += 10) e = dense.observe(ms, 500_000 - ms * 5, 100);
  t.equal(e?.state, 'catching_up');
  t.ok(Math.abs(e!.ratePerSecond - 5_000) < 1e-3, `rate ${e?.ratePerSecond}`);
  t.ok(Math.abs(e!.seconds - (500_000 - 150_000) / 5_000) < 1e-3, `seconds ${e?.seconds}`);
  t.equal(s.observe(10_000, 50_000, 100), null, 'a clock that steps back starts the window again');
});

t.test('CatchUp sets one state to 1 and the others to 0, per lane, and removes them with the lane', async (t) => {
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const c = new CatchUp(metrics);
  const a = { topic: 't', partition: '0' };
  const b = { stream: 'events' };
  for (let sec = 0; sec <= 15; sec++) {
    c.observe(a, sec * 1000, 50_000 - sec * 1_000, 300);
    c.observe(b, sec * 1000, 0, 0);
  }
  const read = async (name: string) => (await registry.getSingleMetric(name)!.get()).values;
  const states = await read('streamstats_lag_state');
  const of = (labels: Record<string, string>) => Object.fromEntries(states.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).map((v) => [v.labels['state'], v.value]));
  t.same(of(a), { keeping_up: 0, catching_up: 1, falling_behind: 0 }, 'the partition catches up');
  t.same(of(b), { keeping_up: 1, catching_up: 0, falling_behind: 0 }, 'the stream keeps up');
  const secs = await read('streamstats_catch_up_seconds');
  t.equal(secs.find((v) => v.labels['partition'] === '0')?.value, 35, '35,000 behind at 1,000 a second');
  t.equal(secs.find((v) => v.labels['stream'] === 'events')?.value, 0);
  c.remove(a);
  t.notOk((await read('streamstats_lag_state')).some((v) => v.labels['partition'] === '0'), 'a revoked partition leaves no state behind');
  t.notOk((await read('streamstats_catch_up_seconds')).some((v) => v.labels['partition'] === '0'));
});
