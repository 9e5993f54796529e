// The Kafka Streams peer of the kafka-e2e benchmark (bench/kstreams) computes what streamstats
// computes. On a small seed-000 topic (20,000 points, 4 partitions), streamstats (SINK=kafka) and the
// peer (at_least_once and exactly_once_v2) each write one row per (series, 60 s window) to an output
// topic; the rows must match: same message keys, equal count/min/max, timestamps and identity, and
// sum/avg/stddev within floating tolerance (streamstats merges Welford moments, the peer keeps sums
// of squares).
//
// Closing the last windows: Kafka Streams' suppress emits a window only once stream time passes its
// end + grace, and streamstats' watermark closes windows the same way, so after the workload every
// partition gets one "flush" point an hour later in event time. It closes every workload window in
// both engines; the flush points' own windows stay open and are not compared (streamstats runs with a
// long IDLE_FLUSH_SECONDS so that it does not close them on the wall clock either). The comparison is
// strict on what it covers, and it covers every (series, window) of the workload: their number is
// computed from the generator and each output must hold exactly that many workload rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import t from 'tap';
import { buildPeer, internalTopics, startPeer, type PeerGuarantee, type PeerProcess } from '../../bench/lib/kstreams.js';
import type { StatsRow } from '../../src/windows/row.js';
import { startEngineProcess } from '../fixtures/engine-process.js';
import { brokers, client, createTopic, GEN_START_MS, keyed, produce, uid, workloadPoints } from '../fixtures/kafka.js';
import { WINDOW_STORE_DEFAULTS } from '../../src/windows/store.js';

const POINTS = 20_000;
const PARTITIONS = 4;
const WINDOW_MS = 60_000;
const FLUSH_NAME = 'streamstats.test.flush';

t.setTimeout(300_000);

interface Output {
  rows: Map<string, StatsRow>;
  duplicates: number;
  flushRows: number;
}

/** Reads a topic read_committed from the beginning until `rows` workload rows arrived, then 1.5 s more. */
async function readRows(topic: string, rows: number, timeoutMs = 120_000): Promise<Output> {
  const consumer = client().consumer({ groupId: uid('ss-test-reader'), maxWaitTimeInMs: 100 });
  const out: Output = { rows: new Map(), duplicates: 0, flushRows: 0 };
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    let reached: () => void = () => {};
    const enough = new Promise<void>((resolve) => (reached = resolve));
    await consumer.run({
      eachMessage: async ({ message }) => {
        const row = JSON.parse(message.value!.toString('utf8')) as StatsRow;
        if (row.name === FLUSH_NAME) out.flushRows++;
        else if (out.rows.has(message.key!.toString('utf8'))) out.duplicates++;
        else out.rows.set(message.key!.toString('utf8'), row);
        if (out.rows.size >= rows) reached();
      },
    });
    await Promise.race([enough, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    await new Promise((r) => setTimeout(r, 1500));
  } finally {
    await consumer.disconnect();
  }
  return out;
}

const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

t.test('the Kafka Streams peer writes the rows streamstats writes (20,000 seed-000 points, 4 partitions)', async (t) => {
  buildPeer();
  const input = await createTopic(t, PARTITIONS);
  const points = workloadPoints({ count: POINTS, metrics: 1000, hosts: 4 });
  await produce(input, keyed(points));
  const cells = new Set(points.map((p) => `${p.name}|${p.host}|${Math.floor(p.timestamp / WINDOW_MS)}`));
  // Flush points per partition, an hour after the workload in event time: as many as streamstats'
  // watermark needs to confirm a jump (WATERMARK_CONFIRM_RECORDS), all in one window of their own.
  const flushMs = GEN_START_MS + 3_600_000;
  const confirm = WINDOW_STORE_DEFAULTS.confirmRecords;
  const producer = client().producer({ createPartitioner: kafkajs.Partitioners.DefaultPartitioner });
  await producer.connect();
  await producer.send({
    topic: input,
    acks: -1,
    messages: Array.from({ length: PARTITIONS * confirm }, (_, i) => ({
      partition: i % PARTITIONS,
      key: `flush|${i % PARTITIONS}`,
      value: JSON.stringify({ metric: { name: FLUSH_NAME, dimensions: { hostname: `flush_${i % PARTITIONS}` }, timestamp: flushMs + Math.floor(i / PARTITIONS), value: 0 }, meta: { tenantId: 'flush', region: 'RegionOne' } }),
    })),
  });
  await producer.disconnect();

  const ssOut = await createTopic(t, PARTITIONS);
  const dir = t.testdir();
  const engine = await startEngineProcess(t, {
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: input,
    KAFKA_GROUP_ID: uid('ss-test-g'),
    SINK: 'kafka',
    OUTPUT_TOPIC: ssOut,
    DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`,
    IDLE_FLUSH_SECONDS: '3600',
    LOG_LEVEL: 'warn',
  });

  const peers: Array<{ guarantee: PeerGuarantee; out: string; peer: PeerProcess }> = [];
  for (const guarantee of ['at_least_once', 'exactly_once_v2'] as const) {
    const out = await createTopic(t, PARTITIONS);
    const applicationId = uid('ss-test-ks');
    const stateDir = mkdtempSync(join(tmpdir(), 'kstreams-peer-test-'));
    const peer = startPeer({ brokers: brokers().join(','), inputTopic: input, outputTopic: out, applicationId, guarantee, stateDir });
    t.teardown(async () => {
      peer.kill();
      await peer.exited;
      rmSync(stateDir, { recursive: true, force: true });
      const admin = client().admin();
      await admin.connect();
      const mine = internalTopics(await admin.listTopics(), applicationId);
      if (mine.length > 0) await admin.deleteTopics({ topics: mine }).catch(() => {});
      await admin.disconnect();
    });
    peers.push({ guarantee, out, peer });
  }

  const [ss, ...fromPeers] = await Promise.all([readRows(ssOut, cells.size), ...peers.map((p) => readRows(p.out, cells.size))]);
  engine.child.kill('SIGTERM');
  t.equal(await engine.exited, 0, 'streamstats exits 0 on SIGTERM');
  t.equal(ss!.rows.size, cells.size, `streamstats wrote one row per workload (series, window): ${cells.size}`);
  t.equal(ss!.duplicates, 0, 'streamstats wrote no row twice');

  for (let i = 0; i < peers.length; i++) {
    const { guarantee, peer } = peers[i]!;
    const got = fromPeers[i]!;
    const stop = await peer.stop();
    t.equal(stop.code, 0, `peer ${guarantee} exits 0 on SIGTERM`);
    t.match(stop.stopped, { closed: true, parsed: POINTS + PARTITIONS * WINDOW_STORE_DEFAULTS.confirmRecords, rejected: 0, droppedRecords: 0 }, `peer ${guarantee} read every record, dropped none`);
    t.equal(got.rows.size, cells.size, `peer ${guarantee} wrote one row per workload (series, window)`);
    t.equal(got.duplicates, 0, `peer ${guarantee} wrote no row twice`);
    t.equal(got.flushRows, 0, `peer ${guarantee} left the flush windows open`);

    const missing = [...ss!.rows.keys()].filter((k) => !got.rows.has(k));
    t.same(missing.slice(0, 3), [], `peer ${guarantee}: every streamstats row key is there (${missing.length} missing)`);
    let exact = 0;
    let maxSumDiff = 0;
    let maxAvgDiff = 0;
    let maxStddevDiff = 0;
    const bad: string[] = [];
    for (const [key, a] of ss!.rows) {
      const b = got.rows.get(key);
      if (b === undefined) continue;
      const same =
        a.name === b.name && a.unit === b.unit && JSON.stringify(Object.entries(a.groupby).sort()) === JSON.stringify(Object.entries(b.groupby).sort()) &&
        a.count === b.count && a.min === b.min && a.max === b.max &&
        a.duration_start === b.duration_start && a.duration_end === b.duration_end && a.duration === b.duration &&
        a.period === b.period && a.period_start === b.period_start && a.period_end === b.period_end &&
        a.topic === b.topic && a.partition === b.partition &&
        close(a.sum, b.sum) && close(a.avg, b.avg) && close(a.stddev, b.stddev);
      if (same) exact++;
      else if (bad.length < 3) bad.push(`${key}\n  streamstats ${JSON.stringify(a)}\n  peer        ${JSON.stringify(b)}`);
      maxSumDiff = Math.max(maxSumDiff, Math.abs(a.sum - b.sum));
      maxAvgDiff = Math.max(maxAvgDiff, Math.abs(a.avg - b.avg));
      maxStddevDiff = Math.max(maxStddevDiff, Math.abs(a.stddev - b.stddev));
    }
    t.equal(exact, cells.size, `peer ${guarantee}: all ${cells.size} rows equal${bad.length > 0 ? `; first differences:\n${bad.join('\n')}` : ''}`);
    t.comment(`peer ${guarantee}: ${exact} rows compared; max |diff| sum ${maxSumDiff}, avg ${maxAvgDiff}, stddev ${maxStddevDiff}`);
  }
});
