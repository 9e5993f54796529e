// One token's flood against the statistics API over the real PostgreSQL: heavy percentile + groupby
// queries and requests for a large answer on sockets that never read. The other token keeps getting
// answers, the API process's RSS stays bounded (in a child process of its own) and nothing stays held after,
// a client that reads nothing is cut off after API_SEND_TIMEOUT_SECONDS and its slot freed, and a
// query over the bounds is a 400 that says how to narrow it.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { Statistics } from '../../src/api/index.js';
import { rowsOf, startApi, type RawSample } from '../fixtures/ceilometer/store.js';
import { openSink, testSchema } from '../fixtures/pg.js';

const P1 = 'p1-flood-0123456789abcdef';
const P2 = 'p2-quiet-0123456789abcdef';
const TOKENS = `${P1} project:p1\n${P2} project:p2\n`;
const T0 = Date.parse('2024-03-01T00:00:00Z');
/**
 * Series of the flooding project: with a 2 KB dimension each, the grouped answer is ~45 MB, more than
 * loopback's socket buffers take in (tcp_rmem up to 32 MiB here), so a reader that never reads blocks it.
 */
const SERIES = 20_000;
const PAD = 'x'.repeat(2000);
const BIG = `/v2/meters/big/statistics?groupby=resource_id&groupby=pad`;
const HEAVY = `/v2/meters/big/statistics?groupby=resource_id&aggregate.func=percentile&aggregate.param=95`;
const SMALL = `/v2/meters/small/statistics?groupby=resource_id&aggregate.func=percentile&aggregate.param=50`;

function samples(): RawSample[] {
  const out: RawSample[] = [];
  for (let i = 0; i < SERIES; i++) out.push({ name: 'big', unit: 'B', dims: { _tenant_id: 'p1', resource_id: `r${i}`, pad: `${PAD}${i}` }, ts: T0 + (i % 60) * 1000, value: i });
  for (let i = 0; i < 50; i++) out.push({ name: 'small', unit: 'B', dims: { _tenant_id: 'p2', resource_id: `s${i % 5}` }, ts: T0 + i * 1000, value: i });
  return out;
}

/** A request whose answer is never read: the socket is paused at its first bytes (the answer has begun). */
function stuck(port: number, path: string, token: string): { socket: Socket; begun: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.once('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: ${token}\r\n\r\n`));
  const begun = new Promise<string>((resolve) =>
    socket.once('data', (d: Buffer) => {
      socket.pause();
      resolve(d.subarray(0, 12).toString('latin1'));
    }),
  );
  return { socket, begun };
}

async function timed(base: string, path: string, token: string): Promise<{ status: number; ms: number; retryAfter: string | null; body: string }> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, { headers: { 'x-auth-token': token } });
  const body = await res.text();
  return { status: res.status, ms: performance.now() - started, retryAfter: res.headers.get('retry-after'), body };
}

const rssOf = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
const MB = 1024 * 1024;

t.test('one token floods the API', async (t) => {
  const { url, pool } = await testSchema(t);
  const sink = await openSink(t, url);
  const raw = samples();
  const rows = rowsOf(raw);
  for (let i = 0; i < rows.length; i += 5000) await sink.write({ rows: rows.slice(i, i + 5000), ndjson: () => '' });

  await t.test('the other token answers while the flood runs, RSS stays bounded and nothing of the flood stays held', async (t) => {
    const child = spawn(process.execPath, ['--expose-gc', fileURLToPath(new URL('../fixtures/api-child.js', import.meta.url))], {
      env: { ...process.env, PG_URL: url, API_TOKENS: TOKENS, API_SEND_TIMEOUT_SECONDS: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.teardown(() => {
      child.kill('SIGKILL');
    });
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { port: number }).port));
      child.once('exit', (code) => reject(new Error(`api child exited ${code}`)));
    });
    const base = `http://127.0.0.1:${port}`;
    /** Bytes the child holds after a full collection: live heap and memory outside it (Buffers). */
    const held = async (): Promise<number> => {
      const line = new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
      child.kill('SIGUSR2');
      const m = JSON.parse(await line) as NodeJS.MemoryUsage;
      return m.heapUsed + m.external;
    };
    // Warm: one answer of each kind, so the baseline holds the code and the pools, not a cold process.
    t.equal((await timed(base, SMALL, P2)).status, 200);
    const big = await timed(base, BIG, P1);
    t.equal(big.status, 200, 'the large answer is served to a reader');
    t.ok(big.body.length > 40 * MB, `the large answer is ${(big.body.length / MB).toFixed(1)} MB`);
    const heldBefore = await held();
    const baseline = rssOf(child.pid!);
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(child.pid!))), 50);

    // The two kinds interleaved, so that both are among the requests the token's share admits.
    const flood: Array<ReturnType<typeof timed>> = [];
    const sockets: Array<ReturnType<typeof stuck>> = [];
    for (let i = 0; i < 60; i++) {
      flood.push(timed(base, HEAVY, P1));
      if (i < 24) sockets.push(stuck(port, BIG, P1));
    }
    const quiet: Array<{ status: number; ms: number }> = [];
    for (let i = 0; i < 5; i++) quiet.push(await timed(base, SMALL, P2));
    const flooded = await Promise.all(flood);
    t.ok(quiet.every((q) => q.status === 200), `the other token: every query 200 (${quiet.map((q) => q.status).join(' ')})`);
    const slowest = Math.max(...quiet.map((q) => q.ms));
    t.ok(slowest < 15_000, `the other token's slowest answer took ${Math.round(slowest)} ms during the flood (bound 15 s)`);
    const shed = flooded.filter((f) => f.status === 503);
    t.ok(shed.length > 0 && shed.every((f) => f.retryAfter === '1' && /this token has \d+ answers under way/.test(f.body)), `the flood is shed for its own token: ${shed.length} of ${flooded.length} got a 503 with Retry-After`);
    t.ok(flooded.every((f) => f.status === 200 || f.status === 503), 'the rest answered 200');
    const began = await Promise.all(sockets.map((s) => s.begun));
    t.ok(began.includes('HTTP/1.1 200'), `requests for the large answer admitted too: ${began.filter((b) => b === 'HTTP/1.1 200').length} of 24 (the rest 503)`);

    // The stuck sockets are never read nor closed by the client: the API cuts each one off 3 s after
    // it stops taking bytes (API_SEND_TIMEOUT_SECONDS=1 here). A request of the same token queues behind the stuck ones (a 503 while its
    // queue is full): once it is answered, every stuck one has had its turn.
    let again = await timed(base, SMALL, P1);
    for (let i = 0; again.status === 503 && i < 60; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      again = await timed(base, SMALL, P1);
    }
    t.equal(again.status, 200, 'the flooding token is served again once its stuck answers were cut off');
    await new Promise((r) => setTimeout(r, 2000));
    clearInterval(sampler);
    const heldAfter = await held();
    const after = rssOf(child.pid!);
    const budget = baseline + 800 * MB;
    t.ok(peak < budget, `peak RSS ${(peak / MB).toFixed(0)} MB under the flood, from ${(baseline / MB).toFixed(0)} MB (bound ${(budget / MB).toFixed(0)} MB)`);
    // RSS stays near its peak (V8 and malloc keep freed pages for reuse); what is still held is not.
    t.ok(after <= peak + 16 * MB, `RSS ${(after / MB).toFixed(0)} MB after, not above the peak`);
    t.ok(heldAfter < heldBefore + 32 * MB, `held after the readers that never read were cut off: ${(heldAfter / MB).toFixed(0)} MB (heap + external after a full collection; ${(heldBefore / MB).toFixed(0)} MB before the flood)`);
    for (const s of sockets) s.socket.destroy();
  });

  await t.test('a client that reads nothing is cut off after API_SEND_TIMEOUT_SECONDS and its slot freed', async (t) => {
    const api = await startApi(t, pool, TOKENS, { limits: { sendTimeoutSeconds: 1, tokenQueries: 1, tokenWaiting: 0 } });
    const port = Number(new URL(api.base).port);
    const { socket: s, begun } = stuck(port, BIG, P1);
    t.equal(await begun, 'HTTP/1.1 200');
    let got = 0;
    const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
    const busy = await api.get('/v2/meters/small/statistics', P1);
    t.equal(busy.status, 503, 'while the answer waits for its reader, the token\'s one slot is held');
    await new Promise((r) => setTimeout(r, 2500));
    s.on('data', (d: Buffer) => (got += d.length));
    s.resume();
    await closed;
    t.ok(got > 0 && got < 40 * MB, `the answer was cut: ${(got / MB).toFixed(1)} MB of more than 40 MB arrived`);
    t.equal((await api.get('/v2/meters/small/statistics', P1)).status, 200, 'the slot is free again');
  });

  await t.test('a query over the bounds is a 400 that says how to narrow it', async (t) => {
    const api = await startApi(t, pool, TOKENS, { limits: { maxResults: 1000, maxSketchBuckets: 5000 } });
    const results = await api.get(`/v2/meters/big/statistics?groupby=resource_id&limit=5000`, P1);
    t.equal(results.status, 400, 'more results than API_MAX_RESULTS, even with a larger limit');
    t.match(results.body, { error: /^the query gives more than 1000 statistics \(API_MAX_RESULTS\): narrow it with q .* or a limit of at most 1000$/ });
    const within = await api.get(`/v2/meters/big/statistics?groupby=resource_id&limit=1000`, P1);
    t.equal((within.body as Statistics[]).length, 1000, 'a limit within the bound answers');
    const buckets = await api.get(`/v2/meters/big/statistics?aggregate.func=percentile&aggregate.param=95`, P1);
    t.equal(buckets.status, 400, 'a percentile query over API_MAX_SKETCH_BUCKETS');
    t.match(buckets.body, { error: /^aggregate\.func=percentile: the query would merge \d+ stored sketch buckets, more than 5000 \(API_MAX_SKETCH_BUCKETS\): narrow it/ });
    const few = await api.get(`/v2/meters/small/statistics?aggregate.func=percentile&aggregate.param=95`, P2);
    t.equal(few.status, 200, 'a percentile query within the bound answers');
  });
});
