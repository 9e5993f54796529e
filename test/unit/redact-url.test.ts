// A password with an unencoded "#" or "?" in SINK=postgres://… or REDIS_URL: the URL parser takes it
// for the start of a fragment or query, so no user info was found and the configuration error echoed
// the whole URL, password included. Each case goes through the real parseConfig and the redaction.
import t from 'tap';
import { parseConfig } from '../../src/config/index.js';
import type { CpuInfo } from '../../src/config/cpus.js';
import { redactSecrets, redactUrl, urlCredentials } from '../../src/config/redact.js';
import { redactedConfig } from '../../src/config/secrets.js';

const CPUS: CpuInfo = { usable: 2, host: 2, quota: 2, source: 'test' };
const SECRET = 's3cr';

const PASSWORDS = [`${SECRET}#et`, `${SECRET}?et`, `${SECRET}?a=b#c`, `#${SECRET}`, `${SECRET}@x?y`, `${SECRET}/x#y`];
const URLS = PASSWORDS.flatMap((p) => [
  { name: 'SINK', url: `postgres://app:${p}@db.internal:5432/stats`, env: (u: string) => ({ SINK: u }) },
  { name: 'REDIS_URL', url: `redis://worker:${p}@cache:6379/0`, env: (u: string) => ({ SOURCE: 'redis', REDIS_STREAMS: 's', REDIS_URL: u }) },
  { name: 'REDIS_URL', url: `rediss://:${p}@cache:6380`, env: (u: string) => ({ SOURCE: 'redis', REDIS_STREAMS: 's', REDIS_URL: u }) },
]);

for (const { name, url, env } of URLS) {
  t.test(`${name}=${url.replace(SECRET, 'S')}: the password never shows`, async (t) => {
    const shown = redactUrl(url);
    t.notMatch(shown, SECRET, `redactUrl: ${shown}`);
    t.match(shown, /:\*\*\*@/, 'the password is replaced where it was');
    t.ok(urlCredentials(url).some((c) => c.includes(SECRET)), 'the password is a credential to cut from any text');
    t.notMatch(redactSecrets(`connecting to ${url} failed`), SECRET);
    let message = '';
    try {
      message = JSON.stringify(redactedConfig(parseConfig(env(url), CPUS)));
    } catch (err) {
      message = (err as Error).message;
      t.match(message, name, 'the error names the option');
    }
    t.notMatch(message, SECRET, `config error or start-up log: ${message.slice(0, 200)}`);
  });
}

t.test('URLs without an unencoded delimiter in the password are redacted as before', async (t) => {
  t.equal(redactUrl('postgres://app:pw%23x@db/stats?sslmode=require&password=p2'), 'postgres://app:***@db/stats?sslmode=require&password=***');
  t.equal(redactUrl('redis://cache:6379/0'), 'redis://cache:6379/0');
  t.equal(redactUrl('postgres://db/stats?application_name=etl'), 'postgres://db/stats?application_name=etl');
  // A query value with an "@" and no user info: more is hidden than needed, nothing is shown that could be a password.
  t.notMatch(redactUrl('postgres://db/stats?options=a@b&password=p2'), 'p2');
});
