// The Kafka dead-letter output against the real broker when the dead-letter topic's max.message.bytes
// is lowered after the output read it: the broker refuses the batch (MESSAGE_TOO_LARGE), the limit is
// read again and the dead letters are cut to it and written; none is refused for its size.
import { pino } from 'pino';
import t from 'tap';
import { KafkaDeadLetter, DLQ_HEADERS } from '../../src/sinks/dead-letter-kafka.js';
import type { DeadLetterEntry } from '../../src/sinks/types.js';
import { readTopic } from '../fixtures/faults.js';
import { brokers, client, createTopic } from '../fixtures/kafka.js';

const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

function entry(offset: string, value: string): DeadLetterEntry {
  return { time: '2024-05-01T10:00:00.000Z', reason: 'malformed_json', detail: 'unexpected end', source: 'kafka:metrics', partition: 0, offset, batch_seq: 0, message_index: 0, element: -1, value, value_encoding: 'utf8' };
}

t.test('the dead-letter topic\'s limit lowered after it was read: the dead letters are cut to the new limit, not refused', async (t) => {
  const dlq = await createTopic(t, 1, { 'max.message.bytes': '200000' });
  const d = new KafkaDeadLetter({ kafka: client(), topic: dlq, logger });
  t.teardown(() => d.close());
  await d.write([entry('1', '{"x"')]); // reads the limit: 200,000

  const admin = client().admin();
  await admin.connect();
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: dlq, configEntries: [{ name: 'max.message.bytes', value: '4000' }] }] });
  await admin.disconnect();
  // The broker applies a topic config change asynchronously.
  await new Promise((r) => setTimeout(r, 1500));

  const big = `{"metric":${'9'.repeat(9000)}`;
  await d.write([entry('2', '{"y"'), entry('3', big), entry('4', '{"z"')]);
  const got = await readTopic(brokers(), dlq, 4, { timeoutMs: 30_000, settleMs: 300 });
  t.same(got.map((m) => m.headers[DLQ_HEADERS.sourceOffset]), ['1', '2', '3', '4'], 'every dead letter, once, in order');
  const cut = got[2]!;
  t.equal(cut.headers[DLQ_HEADERS.truncated], String(Buffer.byteLength(big)), 'flagged with the original size');
  t.ok(cut.value!.length > 2000 && cut.value!.length < 4000, `cut to fit 4000 bytes (${cut.value!.length})`);
  t.ok(big.startsWith(cut.value!.toString()), 'a prefix of the original');
  t.notOk(DLQ_HEADERS.truncated in got[3]!.headers, 'the small one after it is whole');
});
