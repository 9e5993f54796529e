// docs/tuning.md's reset recipe runs Kafka's own kafka-consumer-groups through `scripts/kafka.sh tool`
// (the kafka-tools jars, fetched once from Maven Central): the group's offsets it describes are the
// ones committed, and a reset it executes is what the group reads back.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { brokers, client, createTopic, uid } from '../fixtures/kafka.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function tool(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(ROOT, 'scripts/kafka.sh'), 'tool', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

t.test('kafka.sh tool kafka-consumer-groups describes a group and resets its offsets, as docs/tuning.md says', async (t) => {
  const topic = await createTopic(t, 2);
  const group = uid('ss-tools');
  const kafka = client();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: 20 }, (_, i) => ({ value: `m${i}`, partition: i % 2 })) });
  await producer.disconnect();
  const admin = kafka.admin();
  await admin.connect();
  t.teardown(async () => {
    await admin.deleteGroups([group]).catch(() => {});
    await admin.disconnect();
  });
  await admin.setOffsets({ groupId: group, topic, partitions: [{ partition: 0, offset: '7' }, { partition: 1, offset: '3' }] });

  const described = await tool(['kafka-consumer-groups', '--bootstrap-server', brokers()[0]!, '--describe', '--group', group]);
  t.equal(described.code, 0, described.stderr.slice(-2000));
  const rows = described.stdout.split('\n').filter((l) => l.includes(topic)).map((l) => l.trim().split(/\s+/));
  // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
  const current = Object.fromEntries(rows.map((r) => [r[2], [Number(r[3]), Number(r[4]), Number(r[5])]]));
  t.same(current, { 0: [7, 10, 3], 1: [3, 10, 7] }, 'current offset, log end and lag per partition');

  const reset = await tool(['kafka-consumer-groups', '--bootstrap-server', brokers()[0]!, '--group', group, '--topic', `${topic}:0`, '--reset-offsets', '--to-offset', '2', '--execute']);
  t.equal(reset.code, 0, reset.stderr.slice(-2000));
  const after = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const parts = Object.fromEntries(after[0]!.partitions.map((p) => [p.partition, Number(p.offset)]));
  t.same(parts, { 0: 2, 1: 3 }, 'partition 0 reset to 2, partition 1 untouched');

  const unknown = await tool(['kafka-no-such-tool']);
  t.equal(unknown.code, 1, 'an unknown tool: exit 1');
  t.match(unknown.stderr, /unknown tool "kafka-no-such-tool": kafka-consumer-groups, kafka-console-consumer, kafka-topics and kafka-get-offsets are allowed/);
});
