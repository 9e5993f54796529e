// rediss:// against a real Redis that speaks only TLS and wants a password, its certificate signed by a
// CA of the test's own (openssl): the lanes' connections of their own (lane-conn.ts) verify it with
// REDIS_TLS_CA, authenticate, select the URL's database, and read every entry; without the CA the
// engine says what is wrong and exits non-zero instead of reading nothing behind a live /readyz.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createClient } from 'redis';
import { rowKey } from '../fixtures/harness.js';
import { waitFor } from '../fixtures/kafka.js';
import { drained, expectedRows, startRedisEngine, statements } from '../fixtures/redis.js';
import { spawnEngine } from '../fixtures/faults.js';
import { XAPI_JSON_MAPPING } from '../../src/sources/redis/xapi.js';

const PASSWORD = 'tls-s3cret';
const haveOpenssl = spawnSync('openssl', ['version']).status === 0;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** A TLS-only Redis with a password; its CA's certificate file. */
async function tlsRedis(t: Test): Promise<{ port: number; ca: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'ss-redis-tls-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=streamstats-test-ca');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=localhost');
  execFileSync('sh', ['-c', 'printf "subjectAltName=DNS:localhost,IP:127.0.0.1\\n" > ext'], { cwd: dir });
  ssl('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'srv.crt', '-days', '2', '-extfile', 'ext');
  const port = await freePort();
  execFileSync('redis-server', [
    '--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', f('srv.crt'), '--tls-key-file', f('srv.key'),
    '--tls-ca-cert-file', f('ca.crt'), '--tls-auth-clients', 'no', '--requirepass', PASSWORD, '--save', '', '--appendonly', 'no', '--daemonize', 'yes', '--dir', dir,
    '--pidfile', f('redis.pid'),
  ]);
  // By its pid, not a SHUTDOWN over TLS: that needs the CA file, and must not depend on teardown order.
  t.teardown(() => {
    try {
      process.kill(Number(readFileSync(f('redis.pid'), 'utf8')), 'SIGTERM');
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < 50 && !existsSync(f('redis.pid')); i++) await new Promise((r) => setTimeout(r, 50));
  return { port, ca: f('ca.crt') };
}

t.test('rediss:// with REDIS_TLS_CA, a password and a database: every entry read over TLS, rows equal the independent computation', { skip: !haveOpenssl && process.env['CI'] === undefined ? 'openssl not on PATH' : false }, async (t) => {
  const { port, ca } = await tlsRedis(t);
  const url = `rediss://:${PASSWORD}@localhost:${port}/3`;
  const redis = createClient({ url, socket: { tls: true, ca: readFileSync(ca, 'utf8') } });
  await redis.connect();
  t.teardown(() => redis.close().catch(() => {}));
  const stream = 'tls-stream';
  const sts = statements({ count: 3000, seed: 17 });
  for (let i = 0; i < sts.length; i += 500) await Promise.all(sts.slice(i, i + 500).map((s) => redis.sendCommand(['XADD', stream, '*', 'data', s.json])));
  const e = startRedisEngine(t, { REDIS_URL: url, REDIS_TLS_CA: ca, REDIS_STREAMS: stream, REDIS_GROUP_ID: 'g-tls', REDIS_CONSUMER: 'a', BATCH_SIZE: '400', REDIS_READ_COUNT: '300' });
  await waitFor([e], drained([e], sts.length), 'all entries applied, all windows closed');
  const exp = expectedRows(sts);
  const rows = e.rows();
  t.equal(rows.length, exp.size, `each of the ${exp.size} windows emitted once`);
  t.equal(rows.filter((r) => exp.get(rowKey(r))?.count !== r.count).length, 0, 'every window\'s count as computed independently');
  const clients = String(await redis.sendCommand(['CLIENT', 'LIST']));
  t.match(clients, /name=streamstats:a:\d+ .*db=3/, 'the lane\'s own connection is named, and on the URL\'s database');
  await e.stop();
  t.equal(Number(await redis.sendCommand(['XLEN', stream])), sts.length, 'the stream was on database 3 (the engine read it there)');
});

t.test('rediss:// without the CA that signed the server: a clear error and a non-zero exit', { skip: !haveOpenssl && process.env['CI'] === undefined ? 'openssl not on PATH' : false }, async (t) => {
  const { port } = await tlsRedis(t);
  const e = await spawnEngine(t, {
    SOURCE: 'redis', REDIS_URL: `rediss://:${PASSWORD}@localhost:${port}`, REDIS_STREAMS: 'x', REDIS_GROUP_ID: 'g', REDIS_CONSUMER: 'a',
    SINK: 'stdout', DEAD_LETTER: 'stderr', LOG_LEVEL: 'warn', ...XAPI_JSON_MAPPING,
  });
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([e.exited, new Promise<'running'>((r) => (timer = setTimeout(() => r('running'), 20_000)))]).finally(() => clearTimeout(timer));
  if (code === 'running') e.child.kill('SIGKILL');
  t.not(code, 'running', 'it does not wait on behind a /readyz that never turns ready');
  t.not(code, 0, `exit status ${String(code)}`);
  t.match(e.stderr(), /certificate of rediss:\/\/.* is not trusted \(\w+: .*REDIS_TLS_CA/, 'stderr says the certificate is the problem and what to set');
  t.notMatch(e.stderr(), new RegExp(PASSWORD), 'and does not show the password');
});
