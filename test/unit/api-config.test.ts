// The statistics API's options and token file: every validation message, the constant-time lookup,
// the token never in an error or in the logged config.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseTokens, requestToken, TokenFileError } from '../../src/api/index.js';
import { parseConfig, redactedConfig, type Env } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { configSecrets } from '../../src/config/secrets.js';

const CPUS = { usable: 4, host: 8, quota: 4, source: 'x' };
const PG = 'postgres://u@127.0.0.1:5432/test';
const TOKEN = 'tok-0123456789abcdef-secret';

t.test('the API is off unless asked for; on, it binds 127.0.0.1:8777', async (t) => {
  const off = parseConfig({ SINK: PG }, CPUS).api;
  t.same(off.enabled, false, 'no token file and no API_AUTH=none: off');
  t.match(off, { reason: /API_TOKENS_FILE.*API_AUTH=none/ }, 'the reason says how to turn it on');
  t.equal(parseConfig({}, CPUS).api.enabled, false, 'off with the default stdout sink too');
  const open = parseConfig({ SINK: PG, API_AUTH: 'none' }, CPUS).api;
  t.match(open, { enabled: true, host: '127.0.0.1', port: 8777, tokens: null, limits: { connections: 4, tokenQueries: 2, tokenWaiting: 8, maxWaiting: 64, maxResults: 100_000, sendTimeoutSeconds: 10 } });
  const noAuth = parseConfig({ SINK: PG, API_AUTH: 'none' }, CPUS);
  t.same(configSecrets(noAuth), [], 'API_AUTH=none makes no word a secret for the log redaction');
  t.match(redactedConfig(noAuth), { api: { tokens: null } });
  const moved = parseConfig({ SINK: PG, API_AUTH: 'none', API_HOST: '0.0.0.0', API_PORT: '0' }, CPUS).api;
  t.match(moved, { host: '0.0.0.0', port: 0 });
});

t.test('API option errors name the option, the value and what is allowed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-config-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'tokens');
  writeFileSync(file, `${TOKEN} admin\n`);
  const cases: Array<[string, Env, string, string, RegExp]> = [
    ['unknown API_AUTH', { SINK: PG, API_AUTH: 'basic' }, 'API_AUTH', 'basic', /one of token, none is allowed/],
    ['none with a file', { SINK: PG, API_AUTH: 'none', API_TOKENS_FILE: file }, 'API_AUTH', 'none', /API_TOKENS_FILE is set too/],
    ['file without postgres', { API_TOKENS_FILE: file }, 'API_TOKENS_FILE', file, /needs SINK=postgres:\/\/… \(SINK is stdout\)/],
    ['none without postgres', { API_AUTH: 'none', SINK: 'file:/tmp/x' }, 'API_AUTH', 'none', /needs SINK=postgres/],
    ['port out of range', { SINK: PG, API_AUTH: 'none', API_PORT: '70000' }, 'API_PORT', '70000', /an integer from 0 to 65535/],
    ['port not a number', { SINK: PG, API_AUTH: 'none', API_PORT: 'http' }, 'API_PORT', 'http', /an integer from 0 to 65535/],
    ['port of /metrics', { SINK: PG, API_AUTH: 'none', API_PORT: '9464' }, 'API_PORT', '9464', /METRICS_PORT too: .* a port of its own/],
    ['token share over the connections', { SINK: PG, API_AUTH: 'none', API_CONNECTIONS: '2', API_TOKEN_QUERIES: '3' }, 'API_TOKEN_QUERIES', '3', /more than API_CONNECTIONS \(2\): .* \(1\.\.2 is allowed\)/],
    ['token waiters over all waiters', { SINK: PG, API_AUTH: 'none', API_TOKEN_WAITING: '100', API_MAX_WAITING: '10' }, 'API_TOKEN_WAITING', '100', /more than API_MAX_WAITING \(10\), .* \(0\.\.10 is allowed\)/],
    ['no connections', { SINK: PG, API_AUTH: 'none', API_CONNECTIONS: '0' }, 'API_CONNECTIONS', '0', /an integer from 1 to 1000/],
    ['send timeout not a number', { SINK: PG, API_AUTH: 'none', API_SEND_TIMEOUT_SECONDS: 'never' }, 'API_SEND_TIMEOUT_SECONDS', 'never', /from 0\.1 to 3600/],
    ['missing file', { SINK: PG, API_TOKENS_FILE: join(dir, 'nope') }, 'API_TOKENS_FILE', join(dir, 'nope'), /nope: cannot be read \(ENOENT\)/],
  ];
  for (const [label, env, variable, value, allowed] of cases) {
    const err = t.throws(() => parseConfig(env, CPUS), label) as unknown;
    t.ok(err instanceof ConfigError, `${label}: a ConfigError`);
    const e = err as ConfigError;
    t.equal(e.variable, variable, `${label}: variable`);
    t.ok(e.message.startsWith(`${variable}=${JSON.stringify(value)} is not valid: `), `${label}: ${e.message}`);
    t.match(e.message, allowed, `${label}: what is allowed`);
  }
  const ok = parseConfig({ SINK: PG, API_TOKENS_FILE: file }, CPUS);
  t.match(ok.api, { enabled: true, port: 8777 });
  const logged = JSON.stringify(redactedConfig(ok));
  t.notOk(logged.includes(TOKEN), 'the logged config holds no token');
  t.match(JSON.parse(logged).api, { tokens: { file, tokens: 1 } }, 'only the file and how many tokens it holds');
});

t.test('token file: every error names the file and the line, never the token', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['one field', `${TOKEN}\n`, /^f, line 1: 1 fields: "TOKEN admin" or "TOKEN project:ID"/],
    ['three fields', `# c\n\n${TOKEN} admin extra\n`, /^f, line 3: 3 fields/],
    ['short token', 'short-secret admin\n', /^f, line 1: the token is 12 characters: 16 to 4096 are allowed/],
    ['unknown scope', `${TOKEN} root\n`, /^f, line 1: scope "root" is not valid: admin or project:ID is allowed$/],
    ['empty project', `${TOKEN} project:\n`, /^f, line 1: scope "project:" is not valid/],
    ['non-ASCII token', `${TOKEN}é admin\n`, /^f, line 1: the token has characters outside printable ASCII/],
    ['duplicate', `${TOKEN} admin\n# x\n${TOKEN} project:p1\n`, /^f, line 3: the token of line 1 is given again/],
    ['empty file', '# only a comment\n\n', /^f: holds no token/],
    ['long project', `${TOKEN} project:${'p'.repeat(256)}\n`, /^f, line 1: the project id is 256 characters: at most 255/],
  ];
  for (const [label, text, message] of cases) {
    const err = t.throws(() => parseTokens(text, 'f'), label) as Error;
    t.ok(err instanceof TokenFileError, `${label}: a TokenFileError`);
    t.match(err.message, message, `${label}: ${err.message}`);
    t.notOk(err.message.includes(TOKEN) || err.message.includes('short-secret'), `${label}: the token is not in the message`);
  }
});

t.test('scopes, CRLF files, comments; tokens from X-Auth-Token or Authorization: Bearer', async (t) => {
  const table = parseTokens(`# tokens\r\n${TOKEN} admin\r\n  p1-token-0123456789abcdef   project:p1  \r\n`, 'f');
  t.equal(table.size, 2);
  t.same(table.scopeOf(TOKEN), { admin: true });
  t.same(table.scopeOf('p1-token-0123456789abcdef'), { admin: false, project: 'p1' });
  t.equal(table.scopeOf(`${TOKEN}x`), null, 'one character more: no scope');
  t.equal(table.scopeOf(TOKEN.slice(0, -1)), null, 'a prefix: no scope');
  t.equal(table.scopeOf(''), null);
  t.same(JSON.parse(JSON.stringify(table)), { file: 'f', tokens: 2 }, 'serialises without tokens or digests');
  t.equal(requestToken({ 'x-auth-token': 'abc' }), 'abc');
  t.equal(requestToken({ authorization: 'Bearer abc' }), 'abc');
  t.equal(requestToken({ authorization: 'bearer   abc ' }), 'abc', 'the scheme is case-insensitive');
  t.equal(requestToken({ authorization: 'Basic YTpi' }), null, 'Basic is not a token');
  t.equal(requestToken({ authorization: 'Bearer a b' }), null);
  t.equal(requestToken({ 'x-auth-token': 'x', authorization: 'Bearer y' }), 'x', 'X-Auth-Token first, as OpenStack clients send it');
  t.equal(requestToken({}), null);
});

t.test('the API listener: errors name API_PORT and API_HOST; close is idempotent', async (t) => {
  const { ApiServer } = await import('../../src/http/api-server.js');
  const routes = () => {};
  const a = new ApiServer({ host: '127.0.0.1', port: 0, routes });
  const port = await a.listen();
  t.teardown(() => a.close());
  const b = new ApiServer({ host: '127.0.0.1', port, routes });
  await t.rejects(b.listen(), { code: 'STREAMSTATS_CONFIG', message: `API_PORT (${port}) is already in use on 127.0.0.1: stop the other process, or set another API_PORT (0 = any free port)` });
  const c = new ApiServer({ host: '192.0.2.1', port: 0, routes });
  await t.rejects(c.listen(), { message: /^API_HOST \(192\.0\.2\.1\) is not an address of this machine/ });
  await Promise.all([a.close(), a.close()]);
  await b.close();
  t.pass('closing twice, or a listener that never listened, resolves');
});
