// The watermark gauge was labelled partition="metrics/0", which no query could join
// with the lag metrics' {topic, partition}. Now every watermark series has the labels of a lag series
// of the same partition, so `consumer_lag_seconds * on (topic, partition) group_left watermark_seconds`
// works; an unpartitioned source has an empty topic.
import t from 'tap';
import { createTopic, keyed, produce, startEngine, uid, waitFor, workloadPoints } from '../fixtures/kafka.js';
import { runPipeline } from '../fixtures/harness.js';

interface Series {
  labels: Record<string, string | number>;
  value: number;
}

async function series(registry: { getMetricsAsJSON(): Promise<unknown[]> }, name: string): Promise<Series[]> {
  const m = (await registry.getMetricsAsJSON()) as Array<{ name: string; values: Series[] }>;
  return m.find((x) => x.name === name)?.values ?? [];
}

const labelsOf = (s: Series) => JSON.stringify(Object.entries(s.labels).map(([k, v]) => [k, String(v)]).sort());

t.test('SOURCE=kafka: each watermark series joins a lag series on topic and partition', async (t) => {
  const w = { count: 4000, metrics: 20, hosts: 2 };
  const topic = await createTopic(t, 3);
  await produce(topic, keyed(workloadPoints(w)));
  const e = startEngine(t, { KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('g'), BATCH_SIZE: '200' });
  await waitFor([e], () => e.metric('streamstats_records_total', { result: 'ok' }) >= w.count, 'all records applied');
  let lagSeries: Series[] = [];
  for (let i = 0; i < 100 && lagSeries.length < 3; i++) {
    // The lag gauges appear at the first poll (LAG_INTERVAL_SECONDS after the assignment).
    lagSeries = await series(e.registry, 'streamstats_consumer_lag_messages');
    await new Promise((r) => setTimeout(r, 100));
  }
  const wm = await series(e.registry, 'streamstats_watermark_seconds');
  const lag = new Set(lagSeries.map(labelsOf));
  t.equal(lag.size, 3, 'a lag series per partition');
  t.same(wm.map((s) => s.labels).sort((a, b) => Number(a['partition']) - Number(b['partition'])), [0, 1, 2].map((p) => ({ topic, partition: String(p) })), 'one watermark per partition, labelled topic and partition');
  for (const s of wm) {
    t.ok(lag.has(labelsOf(s)), `watermark ${labelsOf(s)} has a lag series with the same labels`);
    t.ok(s.value > Date.parse('2020-02-11T00:00:00Z') / 1000, 'and a watermark in seconds since the epoch');
  }
  await e.stop();
});

t.test('an unpartitioned source: topic empty, partition the engine\'s id', async (t) => {
  const run = await runPipeline(t, { SOURCE: 'generator', GEN_COUNT: '2000', WORKER_THREADS: '0' });
  const wm = await series(run.registry, 'streamstats_watermark_seconds');
  t.same(wm.map((s) => s.labels), [{ topic: '', partition: '0' }]);
});
