// The documented demo: load the workload with the shipped producer, let the engine go idle (its
// watermark then follows the wall clock), load it again. The second load must become rows, not late
// dead letters; a load that would end beyond MAX_FUTURE_SECONDS is refused before anything is sent.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runToExit } from '../fixtures/engine-process.js';
import { brokers, createTopic, startEngine, uid, waitFor } from '../fixtures/kafka.js';
import { freshStream, REDIS_URL, startRedisEngine } from '../fixtures/redis.js';

const TOOLS = fileURLToPath(new URL('../../src/tools/', import.meta.url));

function tool(name: string, env: Record<string, string>) {
  return runToExit([join(TOOLS, name)], { ...process.env, LOG_LEVEL: 'warn', ...env }, { timeoutMs: 60_000 });
}

t.test('Kafka: a second demo load into an idle engine becomes rows, not late dead letters', async (t) => {
  const topic = await createTopic(t, 2);
  // 2,000 points: 10 rounds of 200, 5 s apart (a 45 s timeline), into 10 s windows.
  const load = { KAFKA_BROKERS: brokers().join(','), KAFKA_TOPICS: topic, GEN_COUNT: '2000', GEN_METRICS: '50', GEN_HOSTS: '4', GEN_INTERVAL_SECONDS: '5' };
  // IDLE_FLUSH_SECONDS: long enough that a pause inside one load (a loaded machine) is not idleness.
  const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), WINDOW_SECONDS: '10', IDLE_FLUSH_SECONDS: '5' });
  await waitFor([e], () => e.metric('streamstats_assigned_partitions') === 2, 'joined');

  const first = await tool('produce.js', load);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stderr, /ends now/, 'into an empty topic the timeline ends now');
  // Idle: every window closed by the wall clock, the watermark near now.
  await waitFor([e], () => e.sum('streamstats_records_total') === 2000 && e.metric('streamstats_open_series') === 0, 'first load applied and flushed by the idle clock');
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }), 2000, 'the first load: every point counted');
  const rowsBefore = e.rows().length;

  const sentAt = Date.now();
  const second = await tool('produce.js', load);
  const took = Date.now() - sentAt;
  t.equal(second.code, 0, second.stderr);
  t.match(second.stderr, /starts now/, 'into a used topic it starts now');
  // Into a used topic the tool first reads the newest point, bounded by 15 s: the bound's timer kept
  // the process alive that long after the load had gone out.
  t.ok(took < 12_000, `it exits once the load is out (${took} ms), not at the newest-point read's bound of 15 s`);
  const secondStart = Date.parse(/event times (\S+) /.exec(second.stderr)?.[1] ?? '');
  t.ok(secondStart >= Date.now() - 60_000, 'its first point is recent');
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) === 4000, 'second load applied');
  await waitFor([e], () => e.rows().some((r) => Date.parse(String(r.period_start)) >= secondStart), 'rows of the second load', 30_000);
  t.equal(e.metric('streamstats_records_total', { result: 'late' }), 0, 'not one record late');
  t.ok(e.rows().length > rowsBefore, `rows from the second load (${e.rows().length - rowsBefore})`);

  const third = await tool('produce.js', load);
  t.equal(third.code, 0, third.stderr);
  t.match(third.stderr, /starts after the newest point/, 'right after a load that runs into the future, the next starts after it');
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) === 6000, 'third load applied');
  t.equal(e.metric('streamstats_records_total', { result: 'late' }), 0, 'still not one record late');

  const tooFar = await tool('produce.js', { ...load, GEN_COUNT: '200000000' });
  t.equal(tooFar.code, 2, 'a load past MAX_FUTURE_SECONDS is refused');
  t.match(tooFar.stderr, /GEN_COUNT="200000000" is not valid: .*MAX_FUTURE_SECONDS=86400/);
  await e.stop();
});

t.test('Redis: a second xAPI load into an idle engine becomes rows, not late dead letters', async (t) => {
  const { stream, group } = await freshStream(t);
  const load = { REDIS_URL, REDIS_STREAMS: stream, GEN_COUNT: '300', PRODUCE_STEP_MS: '100' };
  const e = startRedisEngine(t, { REDIS_STREAMS: stream, REDIS_GROUP_ID: group, WINDOW_SECONDS: '10', IDLE_FLUSH_SECONDS: '5' });
  const first = await tool('produce-redis.js', load);
  t.equal(first.code, 0, first.stderr);
  await waitFor([e], () => e.sum('streamstats_records_total') >= 300 && e.metric('streamstats_open_series') === 0, 'first load applied and flushed by the idle clock');
  // Only the second load is judged here: what the first load into a fresh stream does is the Redis
  // source's own business.
  const ok = e.metric('streamstats_records_total', { result: 'ok' });
  t.ok(ok > 0, 'the first load made records');
  const late = e.metric('streamstats_records_total', { result: 'late' });
  const second = await tool('produce-redis.js', load);
  t.equal(second.code, 0, second.stderr);
  await waitFor([e], () => e.sum('streamstats_records_total') >= 600, 'second load applied');
  t.equal(e.metric('streamstats_records_total', { result: 'late' }) - late, 0, 'not one statement of the second load late');
  t.equal(e.metric('streamstats_records_total', { result: 'ok' }) - ok, 300, 'every statement of the second load counted');
  await e.stop();
});
