// REDIS_URL with an ACL user and password: the source authenticates, and the password never shows
// in the logs, neither when it works nor when the server refuses it.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { until } from '../fixtures/engine-process.js';
import { spawnEngine } from '../fixtures/faults.js';
import { freshStream, statements, xadd } from '../fixtures/redis.js';
import { XAPI_JSON_MAPPING } from '../../src/sources/redis/xapi.js';

t.test('an ACL user consumes; its password is never logged', async (t) => {
  const { stream, group, redis } = await freshStream(t);
  const user = `ss-test-${randomBytes(4).toString('hex')}`;
  const password = `pw-${randomBytes(12).toString('hex')}`;
  await redis.sendCommand(['ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all']);
  t.teardown(() => redis.sendCommand(['ACL', 'DELUSER', user]).then(() => {}, () => {}));
  await xadd(redis, stream, statements({ count: 500 }).map((s) => s.json));
  const env = (pw: string) => ({
    SOURCE: 'redis', REDIS_URL: `redis://${user}:${pw}@127.0.0.1:6379`, REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: 'acl',
    IDLE_FLUSH_SECONDS: '1', COMMIT_INTERVAL_SECONDS: '0.3', LAG_INTERVAL_SECONDS: '0.3', WORKER_THREADS: '1', SINK: 'stdout', DEAD_LETTER: 'stderr', LOG_LEVEL: 'debug', ...XAPI_JSON_MAPPING,
  });
  const ok = await spawnEngine(t, env(password));
  await until(async () => ((await ok.metrics())?.get('streamstats_records_total{result="ok"}') ?? 0) >= 500, 'the ACL user consumed the stream', 60_000);
  ok.child.kill('SIGTERM');
  t.equal(await ok.exited, 0, 'exits 0 on SIGTERM');
  t.notMatch(ok.stderr(), password, 'the password is not in the logs');
  t.match(ok.stderr(), `redis://${user}:`, 'the user name is (the URL is logged redacted)');

  const wrong = `wrong-${randomBytes(8).toString('hex')}`;
  const bad = await spawnEngine(t, { ...env(wrong), REDIS_CONSUMER: 'acl-bad' });
  const code = await Promise.race([bad.exited, new Promise<string>((r) => setTimeout(() => r('still running'), 30_000).unref())]);
  t.ok(typeof code === 'number' && code !== 0, `a refused password stops the engine, non-zero (exit ${String(code)})`);
  t.match(bad.stderr(), /refused the credentials of REDIS_URL \((WRONGPASS|invalid username-password)/, 'and says why');
  t.notMatch(bad.stderr(), wrong, 'without the password');
  if (code === 'still running') bad.child.kill('SIGKILL');
});
