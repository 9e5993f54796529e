// A KAFKA_BROKERS address that takes the connection but speaks no Kafka (another service's port, a
// TLS listener spoken to in plain text): the session's failure line says so, instead of repeating
// "Closed connection" with no clue. A refused connection (nothing listening) is an outage: no hint.
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import kafkajs from 'kafkajs';
import t from 'tap';
import { notKafkaHint } from '../../src/kafka/errors.js';
import { spawnCli } from '../fixtures/engine-process.js';

const { KafkaJSNumberOfRetriesExceeded, KafkaJSRequestTimeoutError, KafkaJSConnectionError } = kafkajs;
// kafkajs exports it at run time; its type declarations leave it out.
const { KafkaJSConnectionClosedError } = kafkajs as unknown as { KafkaJSConnectionClosedError: new (message: string, meta: { host: string; port: number }) => Error };

t.test('notKafkaHint reads the cause chain kafkajs builds', async (t) => {
  const closed = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionClosedError('Closed connection', { host: '127.0.0.1', port: 5432 }), { retryCount: 5, retryTime: 100 });
  t.match(notKafkaHint(closed, ['127.0.0.1:5432'], false), /^127\.0\.0\.1:5432 accepted a connection but closed the connection before any Kafka answer: .*KAFKA_SSL=true/);
  t.match(notKafkaHint(closed, ['h:9093'], true), /plaintext listener/, 'with TLS on, the other way round');
  const silent = new KafkaJSNumberOfRetriesExceeded(new KafkaJSRequestTimeoutError('Request ApiVersions(key: 18, version: 2) timed out', { broker: 'h:6379', clientId: 'streamstats', correlationId: 0, createdAt: 0, sentAt: 0, pendingDuration: 0 }), { retryCount: 5, retryTime: 100 });
  t.match(notKafkaHint(silent, ['h:6379'], false), /did not answer before any Kafka answer/);
  const refused = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:1', { broker: '127.0.0.1:1', code: 'ECONNREFUSED' }), { retryCount: 5, retryTime: 100 });
  t.equal(notKafkaHint(refused, ['127.0.0.1:1'], false), null, 'nothing listening: an outage, no hint');
  const reset = new KafkaJSNumberOfRetriesExceeded(new KafkaJSConnectionError('Connection error: read ECONNRESET', { broker: 'h:80', code: 'ECONNRESET' }), { retryCount: 5, retryTime: 100 });
  t.match(notKafkaHint(reset, ['h:80'], false), /closed the connection/, 'a reset after the connection was taken counts as closed');
  t.equal(notKafkaHint(new Error('something else'), ['h:1'], false), null);
});

t.test('the engine against a port that closes every connection logs the hint', async (t) => {
  // Like PostgreSQL given bytes it cannot read: the peer ends the connection.
  const server = createServer((socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const port = (server.address() as AddressInfo).port;
  let failedLine: (line: string) => void = () => {};
  const failed = new Promise<string>((resolve) => (failedLine = resolve));
  const engine = spawnCli({
    PATH: process.env['PATH'], SOURCE: 'kafka', KAFKA_TOPICS: 'metrics', KAFKA_BROKERS: `127.0.0.1:${port}`, KAFKA_RETRY_MAX_SECONDS: '1',
    METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', PROGRESS: 'off',
  }, { onLine: (l) => { if (l.includes('session failed')) failedLine(l); } });
  t.teardown(() => { engine.child.kill('SIGKILL'); });
  const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), 90_000).unref());
  const line = await Promise.race([failed, timeout]);
  t.ok(line, `a failure line within 90 s: ${engine.stderr().slice(-2000)}`);
  t.match(line, new RegExp(`hint: 127\\.0\\.0\\.1:${port} accepted a connection but closed the connection before any Kafka answer`));
  engine.child.kill('SIGTERM');
  t.equal(await engine.exited, 0, 'SIGTERM while it backs off: exit 0');
});
