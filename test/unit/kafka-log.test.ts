import t from 'tap';
import kafkajs from 'kafkajs';
import pino from 'pino';
import { kafkaLogCreator } from '../../src/kafka/client.js';

const { logLevel } = kafkajs;

function capture() {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => { lines.push(JSON.parse(l) as { level: number; msg: string }); } });
  return { log: kafkaLogCreator(logger)(), lines };
}

const entry = (namespace: string, level: number, message: string, extra: Record<string, unknown> = {}) => ({
  namespace, level, label: '', log: { timestamp: '', logger: 'kafkajs', message, ...extra },
});

t.test('a broker error response is a warning (kafkajs logs retriable answers too); other errors stay errors', async (t) => {
  const { log, lines } = capture();
  log(entry('Connection', logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', { error: 'This server does not host this topic-partition' }));
  log(entry('Consumer', logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded'));
  log(entry('Connection', logLevel.ERROR, 'Connection error: connect ECONNREFUSED'));
  log(entry('Producer', logLevel.WARN, 'Limiting retries'));
  log(entry('Connection', logLevel.INFO, 'Connected'));
  t.same(lines.map((l) => [l.level, l.msg]), [
    [40, 'kafka: Response Metadata(key: 3, version: 6)'],
    [50, 'kafka: Crash: KafkaJSNumberOfRetriesExceeded'],
    [50, 'kafka: Connection error: connect ECONNREFUSED'],
    [40, 'kafka: Limiting retries'],
    [30, 'kafka: Connected'],
  ]);
  t.equal((lines[0] as unknown as { error: string }).error, 'This server does not host this topic-partition', 'the broker\'s answer is kept');
});
