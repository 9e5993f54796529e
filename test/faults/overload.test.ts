// Overload: a producer at about twice the engine's throughput for OVERLOAD_SECONDS (default 30).
// The engine is a child process whose one decode thread is deliberately slow (the slow-worker fixture:
// SLOW_WORKER_MS per batch of BATCH_SIZE), so its capacity is known: BATCH_SIZE / SLOW_WORKER_MS.
// While overloaded it must stay within its memory bound (backpressure pauses the partitions instead of
// buffering), keep its group membership (no rebalance: heartbeats keep flowing), report a growing lag,
// and drain to lag 0 once the producer stops, with every record accounted for.
//
// Memory bound: RSS (VmRSS from /proc/<pid>/status, read every 500 ms) stays under 600 MiB. That is
// the engine's own baseline (Node + one piscina worker + kafkajs, ~150-250 MiB here) plus the bounded
// intake (POOL_QUEUE batches, one fetch of up to KAFKA_MAX_BYTES_PER_PARTITION per partition) with a
// wide margin; unbounded buffering of the ~60 MB the producer writes during the run would break it.
import t from 'tap';
import { until } from '../fixtures/engine-process.js';
import { brokers, createTopic, uid } from '../fixtures/kafka.js';
import { keyedMessages, points, produceTo, rssBytes, sleep, spawnEngine } from '../fixtures/faults.js';

// 30 s at 8,000/s: the same 240,000 records (~60 MB) as 60 s at 4,000/s, so the memory bound is as
// strict, in half the time (and half the busy-waiting CPU of the slowed worker).
const SECONDS = Number(process.env['OVERLOAD_SECONDS'] ?? '30');
const RSS_BOUND_MIB = 600;
const BATCH_SIZE = 100;
const SLOW_WORKER_MS = 25;
/** Records per second the engine can decode at most: one thread, BATCH_SIZE per SLOW_WORKER_MS. */
const CAPACITY = (BATCH_SIZE / SLOW_WORKER_MS) * 1000;
const RATE = 2 * CAPACITY;

t.test(`overload: ${RATE}/s for ${SECONDS} s into an engine of at most ${CAPACITY}/s: bounded memory, no rebalance, lag grows then drains`, async (t) => {
  const topic = await createTopic(t, 4);
  const count = RATE * SECONDS;
  // Event time follows the wall clock, as live telemetry would (windows close as the stream goes).
  const ps = points({ count, metrics: 200, hosts: 4, seed: 51 }, Date.now() - 3600_000);
  const e = await spawnEngine(t, {
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    SINK: 'stdout',
    DEAD_LETTER: 'stderr',
    LOG_LEVEL: 'warn',
    KAFKA_SESSION_TIMEOUT_MS: '10000',
    KAFKA_HEARTBEAT_INTERVAL_MS: '1000',
    LAG_INTERVAL_SECONDS: '1',
    IDLE_FLUSH_SECONDS: '2',
    COMMIT_INTERVAL_SECONDS: '1',
    BATCH_SIZE: String(BATCH_SIZE),
    WORKER_THREADS: '1',
    SLOW_WORKER_MS: String(SLOW_WORKER_MS),
  }, { slow: true });
  await until(() => e.ready(), 'engine joined the group', 60_000);
  const pid = e.child.pid!;

  let maxRss = 0;
  const rssTimer = setInterval(() => {
    const r = rssBytes(pid);
    if (r !== null) maxRss = Math.max(maxRss, r);
  }, 500);
  t.teardown(() => clearInterval(rssTimer));

  const lagSamples: Array<{ s: number; lag: number; ok: number }> = [];
  let sampling = true;
  const started = Date.now();
  const sampler = (async () => {
    while (sampling) {
      const m = await e.metrics();
      if (m !== null) lagSamples.push({ s: (Date.now() - started) / 1000, lag: e.sum(m, 'streamstats_consumer_lag_messages'), ok: m.get('streamstats_records_total{result="ok"}') ?? 0 });
      await sleep(1000);
    }
  })();

  const sent = await produceTo(brokers(), topic, keyedMessages(ps), { ratePerSecond: RATE, chunk: Math.max(1, Math.round(RATE / 10)) });
  const producedFor = (Date.now() - started) / 1000;
  const atEnd = await e.metrics();
  const consumedWhileProducing = atEnd?.get('streamstats_records_total{result="ok"}') ?? 0;
  const lagAtEnd = atEnd === null ? 0 : e.sum(atEnd, 'streamstats_consumer_lag_messages');
  t.equal(sent, count, `produced ${count} records in ${producedFor.toFixed(1)} s`);
  const engineRate = consumedWhileProducing / producedFor;
  t.comment(`producer ${(sent / producedFor).toFixed(0)}/s, engine ${engineRate.toFixed(0)}/s while overloaded (nominal capacity ${CAPACITY}/s)`);
  t.ok(sent / producedFor >= 1.6 * engineRate, 'the producer ran at about twice (or more) the engine throughput');

  // Lag grows while producing: the later third's samples sit well above the first third's.
  const during = lagSamples.filter((x) => x.s <= producedFor);
  const third = Math.floor(during.length / 3);
  const early = Math.max(...during.slice(0, third).map((x) => x.lag));
  const late = Math.max(...during.slice(-third).map((x) => x.lag));
  t.comment(`lag samples (s:lag): ${during.filter((_, i) => i % 5 === 0).map((x) => `${x.s.toFixed(0)}:${x.lag}`).join(' ')}`);
  t.ok(late > early && lagAtEnd > RATE * SECONDS * 0.25, `lag grew while producing (first third max ${early}, last third max ${late}, at the end ${lagAtEnd})`);

  await until(async () => {
    const m = await e.metrics();
    return m !== null && e.sum(m, 'streamstats_consumer_lag_messages') === 0 && (m.get('streamstats_records_total{result="ok"}') ?? 0) >= count;
  }, 'the lag drained to 0', (SECONDS * 2 + 60) * 1000);
  sampling = false;
  await sampler;
  clearInterval(rssTimer);
  const m = (await e.metrics())!;
  t.comment(`drained ${((Date.now() - started) / 1000 - producedFor).toFixed(1)} s after the producer stopped; peak RSS ${(maxRss / 1048576).toFixed(0)} MiB`);
  t.equal(e.sum(m, 'streamstats_consumer_lag_messages'), 0, 'lag drained to 0');
  t.equal(m.get('streamstats_records_total{result="ok"}'), count, 'every record decoded once');
  t.equal(e.sum(m, 'streamstats_records_total') - count, 0, 'nothing rejected, nothing counted twice');
  t.equal(m.get('streamstats_rebalances_total'), 1, 'no rebalance: the first join is the only one');
  t.ok((m.get('streamstats_paused_partitions') ?? 0) === 0, 'no partition left paused');
  t.ok(maxRss > 0 && maxRss < RSS_BOUND_MIB * 1048576, `peak RSS ${(maxRss / 1048576).toFixed(0)} MiB < ${RSS_BOUND_MIB} MiB`);
  e.child.kill('SIGTERM');
  t.equal(await e.exited, 0, 'exits 0 on SIGTERM');
});
