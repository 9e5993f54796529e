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

t.test('routine kafkajs lines are debug: a coordinator starting, pause/resume of busy partitions, the idempotent retry limit, a transaction still completing, offsets still pending', async (t) => {
  const { log, lines } = capture();
  const completing = 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing';
  log(entry('Connection', logLevel.ERROR, 'Response AddOffsetsToTxn(key: 25, version: 1)', { error: completing }));
  // The same answer to a first send's AddPartitionsToTxn is kafkajs's to retry, after 300 ms: still a warning.
  log(entry('Connection', logLevel.ERROR, 'Response AddPartitionsToTxn(key: 24, version: 1)', { error: completing }));
  log(entry('Connection', logLevel.ERROR, 'Response GroupCoordinator(key: 10, version: 2)', { error: 'The group coordinator is not available' }));
  log(entry('Connection', logLevel.ERROR, 'Response JoinGroup(key: 11, version: 5)', { error: "The coordinator is loading and hence can't process requests for this group" }));
  log(entry('ConsumerGroup', logLevel.INFO, 'Pausing fetching from 2 topics', { topicPartitions: [] }));
  log(entry('ConsumerGroup', logLevel.INFO, 'Resuming fetching from 2 topics', { topicPartitions: [] }));
  log(entry('Producer', logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees'));
  log(entry('Connection', logLevel.ERROR, 'Response Produce(key: 0, version: 7)', { error: 'The request included message batch larger than the configured segment size on the server' }));
  // A stable read meeting a transaction's pending offsets (retried by the restore); the same answer to a Produce would be news.
  log(entry('Connection', logLevel.ERROR, 'Response OffsetFetch(key: 9, version: 7)', { error: 'There are unstable offsets that need to be cleared' }));
  log(entry('Connection', logLevel.ERROR, 'Response Produce(key: 0, version: 7)', { error: 'There are unstable offsets that need to be cleared' }));
  t.same(lines.map((l) => l.level), [20, 40, 20, 20, 20, 20, 20, 40, 20, 40], 'debug, except AddPartitionsToTxn\'s wait and a broker error of another kind (warnings)');
});
