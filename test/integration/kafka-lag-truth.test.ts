// Against a real Kafka broker: the lag an operator scrapes is never lower than the truth. The truth is
// the broker's own log end (admin.fetchTopicOffsets, asked just before each scrape) minus what the
// engine has applied (records_total: one record per message, every partition from offset 0).
// The engine runs with a slowed worker (every batch 120 ms longer): at full speed it applies each of the
// producer's chunks within milliseconds, so a scrape would rarely find it behind, and a lower bound
// that is never tested against a real backlog proves nothing.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startEngineProcess, until } from '../fixtures/engine-process.js';
import { brokers, createTopic, keyed, uid, workloadPoints } from '../fixtures/kafka.js';
import { kafkaClient, produceTo } from '../fixtures/topics.js';

t.test('consumer lag is never below the log end minus what was applied, under a steady producer', async (t) => {
  const topic = await createTopic(t, 4);
  const e = await startEngineProcess(t, {
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    SINK: `file:${t.testdir()}/rows.ndjson`,
    DEAD_LETTER: `file:${t.testdir()}/dlq.ndjson`,
    WORKER_THREADS: '1',
    // The default: high watermarks polled every 5 s, as an operator runs it.
    LAG_INTERVAL_SECONDS: '5',
    SLOW_WORKER_MS: '120',
  }, { entry: fileURLToPath(new URL('../fixtures/slow-cli.js', import.meta.url)) });
  await until(async () => (await e.metrics())?.get('streamstats_assigned_partitions') === 4, 'joined');
  const admin = kafkaClient(brokers()).admin();
  await admin.connect();
  t.teardown(() => admin.disconnect());
  const logEnd = async () => (await admin.fetchTopicOffsets(topic)).reduce((a, o) => a + Number(o.high), 0);

  const messages = keyed(workloadPoints({ count: 100_000, metrics: 500, hosts: 4, seed: 7 }));
  const producing = produceTo(brokers(), topic, messages, { ratePerSecond: 12_000, chunk: 2_000 });
  let finished = false;
  void producing.then(() => (finished = true), () => (finished = true));
  const samples: Array<{ truth: number; gauge: number }> = [];
  while (!finished) {
    const end = await logEnd();
    const m = await e.metrics();
    if (m === null) continue;
    const applied = e.sum(m, 'streamstats_records_total');
    samples.push({ truth: end - applied, gauge: e.sum(m, 'streamstats_consumer_lag_messages') });
    await new Promise((r) => setTimeout(r, 150));
  }
  t.equal(await producing, messages.length, 'every message produced');
  const below = samples.filter((s) => s.gauge < s.truth);
  t.same(below.slice(0, 5), [], `no scrape read less lag than the log end showed (${samples.length} scrapes, ${below.length} below)`);
  const behind = samples.filter((s) => s.truth > 0).length;
  t.ok(behind > 0, `the engine was behind the log end at some scrapes (${behind} of ${samples.length}), so the comparison tested something`);
  await until(async () => {
    const m = await e.metrics();
    return m !== null && e.sum(m, 'streamstats_records_total') === messages.length && e.sum(m, 'streamstats_consumer_lag_messages') === 0;
  }, 'caught up: lag 0 once everything is applied');
  e.child.kill('SIGTERM');
  t.equal(await e.closed, 0, 'clean exit');
});
