// streamstats-produce against the real broker, run as a user runs it (node dist/src/tools/produce.js):
// a batch far over the topic's max.message.bytes goes out in sends that fit (regression: a
// PRODUCE_BATCH of 100000 was refused with MESSAGE_TOO_LARGE), every message lands in the partition
// Java's partitioner picks for its key, and every compression of the one table is accepted.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { producibleCompressions } from '../../src/kafka/compression.js';
import { partitionForKey } from '../../src/kafka/partitioner.js';
import { brokers, client, createTopic, keyed, workloadPoints } from '../fixtures/kafka.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const PRODUCE = join(ROOT, 'dist/src/tools/produce.js');

function produce(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Killed after 2 minutes: a send the broker keeps refusing would otherwise retry on and on.
    const child = spawn(process.execPath, [PRODUCE], { cwd: ROOT, timeout: 120_000, env: { ...process.env, KAFKA_BROKERS: brokers().join(','), LOG_LEVEL: 'warn', ...env } });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Messages per partition, from the partitions' end offsets (the topic is new: it starts at 0). */
async function perPartition(topic: string): Promise<number[]> {
  const admin = client().admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
  } finally {
    await admin.disconnect();
  }
}

t.test('a batch over the topic\'s max.message.bytes is cut into sends that fit; keys land where Java puts them', async (t) => {
  const topic = await createTopic(t, 3, { 'max.message.bytes': '50000' });
  // 20,000 messages of ~300 bytes in one batch: ~6 MB, over 100 times the topic's limit.
  const w = { count: 20_000, metrics: 50, hosts: 8, seed: 3 };
  const r = await produce({ KAFKA_TOPICS: topic, GEN_COUNT: String(w.count), GEN_METRICS: String(w.metrics), GEN_HOSTS: String(w.hosts), GEN_SEED: String(w.seed), PRODUCE_BATCH: '20000' });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /20,000 messages to /);
  const want = [0, 0, 0];
  for (const { key } of keyed(workloadPoints(w))) want[partitionForKey(key, 3)]!++;
  t.ok(want.every((n) => n > 0), `the workload spreads over the partitions (${want.join(', ')})`);
  t.same(await perPartition(topic), want, 'every message arrived, each in the partition Java picks for its key');
});

t.test('every compression this runtime can produce is accepted, and an unknown one is refused naming the list', async (t) => {
  const topic = await createTopic(t, 1);
  for (const c of producibleCompressions()) {
    const r = await produce({ KAFKA_TOPICS: topic, GEN_COUNT: '50', PRODUCE_COMPRESSION: c });
    t.equal(r.code, 0, `${c}: ${r.stderr}`);
    t.match(r.stderr, new RegExp(`50 messages to .* compression ${c}`));
  }
  const bad = await produce({ KAFKA_TOPICS: topic, GEN_COUNT: '50', PRODUCE_COMPRESSION: 'brotli' });
  t.equal(bad.code, 2);
  t.match(bad.stderr, /PRODUCE_COMPRESSION.*brotli.*one of none, gzip, snappy, lz4/);
});
