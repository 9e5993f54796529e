// On the real broker: a decompression bomb (gzip-compressed runs of zeros: a few KB
// on the broker, 16 MiB each decompressed) is refused before it is allocated, its records become
// too_large dead letters that say why, the good records around it are applied, and the engine's
// peak RSS stays bounded.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import t from 'tap';
import { startEngineProcess, until } from '../fixtures/engine-process.js';
import { client, createTopic, uid } from '../fixtures/kafka.js';
import { readNdjson } from '../fixtures/harness.js';
import type { DeadLetterEntry } from '../../src/sinks/dead-letter.js';

const { CompressionTypes, Partitioners } = kafkajs;
const MiB = 1024 * 1024;
const good = (i: number): string => JSON.stringify({ metric: { name: 'cpu', dimensions: { host: 'a' }, timestamp: 1_700_000_000_000 + i * 1000, value: i } });

function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]) / 1024;
}

t.test('regression: gzip bomb batches are refused as too_large dead letters, good records applied, RSS bounded', async (t) => {
  const topic = await createTopic(t, 1);
  const producer = client().producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: Array.from({ length: 10 }, (_, i) => ({ value: good(i) })) });
  const bomb = Buffer.alloc(16 * MiB, 0x30);
  let compressed = 0;
  for (let i = 0; i < 6; i++) {
    // One record batch per send: each decompresses to 16 MiB, over the 4 MiB bound below.
    await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: [{ value: bomb }] });
    compressed++;
  }
  // Under the bound, over MAX_MESSAGE_BYTES: an ordinary too_large, its dead letter cut to 1 MiB.
  await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: [{ value: Buffer.alloc(2 * MiB, 0x30) }] });
  await producer.send({ topic, acks: -1, messages: Array.from({ length: 10 }, (_, i) => ({ value: good(10 + i) })) });
  await producer.disconnect();

  const dir = t.testdir();
  const e = await startEngineProcess(t, {
    SOURCE: 'kafka',
    KAFKA_BROKERS: process.env['KAFKA_BROKERS'] ?? '',
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('ss-bomb'),
    KAFKA_INTAKE_MAX_BYTES: String(4 * MiB),
    SINK: `file:${join(dir, 'rows.ndjson')}`,
    DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`,
    WORKER_THREADS: '1',
    IDLE_FLUSH_SECONDS: '1',
  });
  await until(async () => {
    const m = await e.metrics();
    return m !== null && (m.get('streamstats_records_total{result="ok"}') ?? 0) === 20 && (m.get('streamstats_records_total{result="too_large"}') ?? 0) === compressed + 1;
  }, `20 ok records and ${compressed + 1} too_large (stderr: ${e.stderr().slice(-2000)})`, 120_000);
  const rss = peakRssMb(e.child.pid!);
  t.ok(rss < 250, `peak RSS ${rss.toFixed(0)} MiB stays under 250 MiB (6 x 16 MiB bombs refused; 423 MiB before the bound)`);
  t.comment(`engine peak RSS (VmHWM): ${rss.toFixed(0)} MiB`);
  e.child.kill('SIGTERM');
  await e.exited;
  const dl = readNdjson<DeadLetterEntry>(join(dir, 'dlq.ndjson'));
  const refused = dl.filter((d) => /gzip-compressed record batch of \d+ bytes decompresses to more than 4194304 bytes/.test(d.detail));
  t.equal(refused.length, compressed, 'every record of a refused batch is a too_large dead letter saying why');
  t.ok(refused.every((d) => d.reason === 'too_large' && d.value_truncated === true && d.offset !== undefined), 'with its offset, flagged as not holding the value');
  const cut = dl.filter((d) => d.value_bytes === 2 * MiB);
  t.equal(cut.length, 1, 'the 2 MiB record is too_large with its size');
  t.equal(Buffer.byteLength(cut[0]?.value ?? ''), MiB, 'and keeps its first MAX_MESSAGE_BYTES');
  t.equal(dl.length, compressed + 1, 'nothing else is dead-lettered');
});
