// The command as a user runs it: a child process, env and flags, stdout for rows, stderr for the rest.
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runCli, type CliIo } from '../src/cli/run.js';
import { OPTIONS, flagFor } from '../src/config/options.js';
import { freePort, runToExit, type Exited } from './fixtures/engine-process.js';
import { testSchema } from './fixtures/pg.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'dist/src/cli.js');

function run(args: string[], env: Record<string, string>, opts: { shell?: string; signalAfterMs?: number } = {}): Promise<Exited> {
  return runToExit([CLI, ...args], { ...process.env, ...env }, { cwd: ROOT, ...opts });
}

const QUIET = { LOG_LEVEL: 'warn', METRICS_PORT: '0', PROGRESS: 'off' };

t.test("the README's main command: the default workload through the pool, rows to a file, summary on stderr", async (t) => {
  const dir = t.testdir();
  // Exactly the README line, with only the output path changed to the test's folder; METRICS_PORT=0
  // in its environment, so that a test run never needs port 9464 free (another engine may hold it).
  const r = await run([], { METRICS_PORT: '0' }, { shell: `npx streamstats > ${join(dir, 'stats.ndjson')}` });
  t.equal(r.code, 0, r.stderr);
  const lines = readFileSync(join(dir, 'stats.ndjson'), 'utf8').split('\n').filter((l) => l !== '');
  t.equal(lines.length, 346_000, '1000 names x 4 hosts x ~86 one-minute windows');
  const row = JSON.parse(lines[0]!) as Record<string, unknown>;
  for (const f of ['name', 'unit', 'groupby', 'count', 'sum', 'min', 'max', 'avg', 'stddev', 'duration_start', 'duration_end', 'duration', 'period', 'period_start', 'period_end']) {
    t.ok(f in row, `rows carry ${f}`);
  }
  const total = lines.reduce((a, l) => a + (JSON.parse(l) as { count: number }).count, 0);
  t.equal(total, 690_000, 'every generated point is counted in exactly one row');
  t.match(r.stderr, /records\s+690,000: ok 690,000, rejected 0/);
  t.match(r.stderr, /windows\s+346,000 statistics rows -> stdout/);
  // WORKER_THREADS=auto: as many as this machine's usable CPUs give, which the log line says, with
  // where the lanes live (LANE_STATE=auto: the generator's in their owner workers).
  const chosen = /"workerThreads":(\d+),"reason":"[^"]+","laneState":"worker","laneStateReason":"auto: [^"]+","msg":"worker threads"/.exec(r.stderr);
  t.ok(chosen !== null, 'the chosen thread count is logged with its reason');
  const threads = Number(chosen?.[1]);
  t.match(r.stderr, new RegExp(`throughput\\s+[\\d,]+ records/s with ${threads === 0 ? 'in-thread' : `${threads} worker threads?`}`), 'the summary names the same threads');
  t.match(r.stderr, /decode\s+[\d.]+ s in all/);
});

t.test('a bad option: one line naming the variable, the value and what is allowed; exit 2 before starting', async (t) => {
  const r = await run([], { ...QUIET, WORKER_THREADS: 'lots' });
  t.equal(r.code, 2);
  t.equal(r.stderr, 'streamstats: WORKER_THREADS="lots" is not valid: an integer from 0 to 256 is allowed\n');
  t.equal(r.stdout, '');
  const f = await run(['--window-seconds', '0'], QUIET);
  t.equal(f.code, 2);
  t.match(f.stderr, /^streamstats: WINDOW_SECONDS="0" is not valid: an integer from 1 to 86400 is allowed\n$/);
  const u = await run(['--no-such-flag', '1'], QUIET);
  t.equal(u.code, 2);
  t.match(u.stderr, /--no-such-flag/);
});

t.test('--help lists every option with its flag and default', async (t) => {
  const r = await run(['--help'], {});
  t.equal(r.code, 0);
  for (const o of OPTIONS) {
    t.match(r.stdout, new RegExp(`${o.env}\\s+${flagFor(o.env)}`), `${o.env} is in --help`);
    if (o.default !== '') t.ok(r.stdout.includes(`(default ${o.default})`), `${o.env} default shown`);
  }
});

t.test('flags equal the variables and win over them', async (t) => {
  const r = await run(['--worker-threads', '0', '--gen-count=2000', '--sink', 'stdout'], { ...QUIET, WORKER_THREADS: '2' });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /2,000 messages/);
  t.match(r.stderr, /in-thread \(WORKER_THREADS=0\)/);
});

t.test('SIGTERM: stop reading, finish in-flight batches, flush every window, exit 0', async (t) => {
  const dir = t.testdir();
  const r = await run([], { ...QUIET, GEN_COUNT: '10000000', GEN_RATE: '20000', SINK: `file:${join(dir, 'rows.ndjson')}` }, { signalAfterMs: 1500 });
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /summary \(stopped by signal\)/);
  const m = /records\s+([\d,]+): ok ([\d,]+)/.exec(r.stderr);
  t.ok(m, 'summary printed');
  const ok = Number(m![2]!.replace(/,/g, ''));
  t.ok(ok > 1000 && ok < 10_000_000, `stopped part-way (${ok} records)`);
  const rows = readFileSync(join(dir, 'rows.ndjson'), 'utf8').split('\n').filter((l) => l !== '');
  const counted = rows.reduce((a, l) => a + (JSON.parse(l) as { count: number }).count, 0);
  t.equal(counted, ok, 'every accepted record is in a flushed row');
});

t.test('README: the configuration table is the one the code documents (npm run docs:options)', async (t) => {
  const { optionsMarkdownTable } = await import('../src/config/options.js');
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  t.ok(readme.includes(`<!-- options:begin -->\n${optionsMarkdownTable()}\n<!-- options:end -->`), 'README table equals OPTIONS');
  t.ok(readme.includes('npm ci && npx streamstats > stats.ndjson'), 'the main command the test above runs');
  t.ok(readme.includes('npm ci && npm test'), 'the test command CI runs');
});

const PRODUCE = join(ROOT, 'dist/src/tools/produce.js');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

function runProduce(args: string[], env: Record<string, string>): Promise<Exited> {
  return run([], env, { shell: `exec "${process.execPath}" "${PRODUCE}" ${args.map((a) => `'${a}'`).join(' ')}` });
}

// Nothing listens on port 1: a command that tried to connect would fail there, not exit 0 or 2 at once.
const NO_BROKER = { KAFKA_BROKERS: '127.0.0.1:1', KAFKA_TOPICS: 'never-created', LOG_LEVEL: 'warn' };

t.test('--version: the package version and the Node that runs it, on both commands', async (t) => {
  for (const [name, r] of [['streamstats', await run(['--version'], QUIET)], ['streamstats-produce', await runProduce(['--version'], NO_BROKER)]] as const) {
    t.equal(r.code, 0, `${name} --version exits 0`);
    t.equal(r.stdout, `${name} ${VERSION} (node ${process.version})\n`, `${name}: one line on stdout`);
    t.equal(r.stderr, '', `${name}: nothing else`);
  }
});

t.test('streamstats-produce --help: usage, no connection, nothing written', async (t) => {
  const r = await runProduce(['--help'], NO_BROKER);
  t.equal(r.code, 0, r.stderr);
  for (const v of ['KAFKA_BROKERS', 'KAFKA_TOPICS', 'GEN_COUNT', 'GEN_START', 'PRODUCE_PARTITIONS', 'PRODUCE_COMPRESSION', 'PRODUCE_BATCH', '--version']) {
    t.match(r.stdout, v, `--help names ${v}`);
  }
  t.equal(r.stderr, '', 'no connection attempt, no log');
});

t.test('an unknown argument: exit 2 and one line naming it, never the value after "="; nothing starts', async (t) => {
  const p = await runProduce(['--kafka-sasl-password=hunter2'], NO_BROKER);
  t.equal(p.code, 2, 'streamstats-produce exits 2');
  t.equal(p.stderr.split('\n').length, 2, 'one line');
  t.match(p.stderr, /^streamstats-produce: argument "--kafka-sasl-password" is not valid: .*--help/);
  t.notMatch(p.stderr, /hunter2/, 'the value is not echoed');
  t.equal(p.stdout, '');
  const q = await runProduce(['metrics'], NO_BROKER);
  t.equal(q.code, 2, 'a positional argument too');
  t.match(q.stderr, /argument "metrics"/);

  const s = await run(['--kafka-sasl-pasword=hunter2'], QUIET);
  t.equal(s.code, 2, 'streamstats exits 2');
  t.equal(s.stderr, 'streamstats: argument="--kafka-sasl-pasword" is not valid: a known flag is allowed (see --help); e.g. --worker-threads 2\n');
  t.equal(s.stdout, '');
});

t.test('a misspelled variable: one warning line at start naming the closest option; the run goes on', async (t) => {
  const r = await run([], { ...QUIET, GEN_COUNT: '100', WORKER_THREAD: '2' });
  t.equal(r.code, 0, r.stderr);
  const warnings = r.stderr.split('\n').filter((l) => l.includes('WORKER_THREAD '));
  t.equal(warnings.length, 1, 'one line');
  t.match(warnings[0] ?? '', /"level":40.*WORKER_THREAD \(did you mean WORKER_THREADS\?\)/, 'a warning naming the option meant');
  t.match(r.stderr, /records\s+100: ok 100/, 'and the run completes');
});

t.test('METRICS_PORT already in use: an error naming it, the port and the host; exit non-zero', async (t) => {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as { port: number }).port;
  const r = await run([], { ...QUIET, GEN_COUNT: '100', METRICS_HOST: '127.0.0.1', METRICS_PORT: String(port) });
  t.not(r.code, 0, 'exits non-zero');
  t.match(r.stderr, `METRICS_PORT (${port}) is already in use on 127.0.0.1`);
  t.match(r.stderr, /set another METRICS_PORT \(0 = any free port\)/, 'and says the way out');
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
  const h = await run([], { ...QUIET, GEN_COUNT: '100', METRICS_HOST: '192.0.2.1', METRICS_PORT: '0' });
  t.not(h.code, 0, 'a METRICS_HOST that is not local: exits non-zero');
  t.match(h.stderr, 'METRICS_HOST (192.0.2.1) is not an address of this machine', 'naming METRICS_HOST');
});

t.test('streamstats-produce stamps a timeline that ends now into an empty topic, starts after it into a used one; GEN_START still gives the 2020 one', async (t) => {
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
  const topic = `produce-start-${process.pid}-${Date.now()}`;
  const { default: kafkajs } = await import('kafkajs');
  t.teardown(async () => {
    const admin = new kafkajs.Kafka({ brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect();
  });
  // 2 metrics x 2 hosts, 40 points: 10 rounds, 30 s apart.
  const env = { KAFKA_BROKERS: brokers, KAFKA_TOPICS: topic, GEN_COUNT: '40', GEN_METRICS: '2', GEN_HOSTS: '2', PRODUCE_PARTITIONS: '1', LOG_LEVEL: 'warn' };
  const before = Date.now();
  const r = await runProduce([], env);
  const after = Date.now();
  t.equal(r.code, 0, r.stderr);
  const m = /40 messages to .* event times (\S+) \.\. (\S+) \(ends now \(empty target\)\)\n/.exec(r.stderr);
  t.ok(m, `summary with the event-time range: ${r.stderr}`);
  const first = Date.parse(m?.[1] ?? '');
  const last = Date.parse(m?.[2] ?? '');
  t.ok(last <= after, 'no point in the future');
  t.ok(last >= before - 2_000 - 1_000, 'the last point is about now (whole-second start, up to 1 s of jitter)');
  t.ok(last - first >= 9 * 30_000 && last - first < 9 * 30_000 + 1_000, 'the span of 10 rounds 30 s apart');

  // docker-compose.yml passes GEN_START: "${GEN_START:-}": empty counts as unset. The topic now holds
  // the first load: this one starts after its newest point and not before now.
  const empty = await runProduce([], { ...env, GEN_START: '' });
  t.equal(empty.code, 0, empty.stderr);
  const e = /event times (\S+) \.\. (\S+) \((starts now|starts after the newest point)\)\n/.exec(empty.stderr);
  t.ok(e !== null, `GEN_START="" is the recent timeline too, into a used topic: ${empty.stderr}`);
  t.ok(Date.parse(e?.[1] ?? '') > last && Date.parse(e?.[1] ?? '') >= after - 1_000, 'after the first load\'s points, and not before now');
  t.ok(Date.parse(e?.[1] ?? '') <= Date.now() + 2_000, 'starting about now');

  const fixed = await runProduce([], { ...env, GEN_START: '2020-02-11T12:42:13Z' });
  t.equal(fixed.code, 0, fixed.stderr);
  t.match(fixed.stderr, /event times 2020-02-11T12:42:13\.\d{3}Z \.\. 2020-02-11T12:46:4\d\.\d{3}Z/, 'GEN_START=2020-02-11T12:42:13Z: the fixed timeline');
  t.notMatch(fixed.stderr, /"level":50/, 'loading an existing topic logs no error');
});

t.test('a ?password= in the SINK URL is in no line the command prints: start-up log, summary, errors', async (t) => {
  const SECRET = 'qp-S3cr3t-51d0';
  const db = await testSchema(t);
  const url = new URL(db.url);
  url.searchParams.set('password', SECRET);
  const ok = await run([], { LOG_LEVEL: 'debug', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', PROGRESS: 'off', GEN_COUNT: '200', SINK: url.toString() });
  t.equal(ok.code, 0, ok.stderr.slice(-2000));
  const stored = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM streamstats_statistics');
  t.ok(Number(stored.rows[0]!.n) > 0, 'the rows went through the URL (trust auth ignores the password)');
  t.notMatch(ok.stderr, new RegExp(SECRET), 'stderr (debug log, summary) does not contain it');
  t.match(ok.stderr, /password=\*\*\*[^\n]*"msg":"starting"/, 'the start-up log shows the parameter redacted');
  t.match(ok.stderr, /windows\s+[\d,]+ statistics rows -> postgres:\/\/[^\n]*password=\*\*\*/, 'so does the summary');

  const down = new URL(url);
  down.port = String(await freePort());
  const failed = await run([], { LOG_LEVEL: 'debug', METRICS_PORT: '0', PROGRESS: 'off', GEN_COUNT: '10', SINK: down.toString() });
  t.equal(failed.code, 1, 'an unreachable database: exit 1');
  t.match(failed.stderr, /streamstats: SINK=postgres:[^\n]* \[STREAMSTATS_SINK\]\n/, 'the error line names the sink, its code last');
  t.notMatch(failed.stderr, new RegExp(SECRET), 'and does not contain the password');
});

t.test('runCli in-process: the streams, signals and exit it is given, and the status it resolves to', async (t) => {
  const io = () => {
    const out = { stdout: '', stderr: '', exits: [] as number[] };
    const signals = new EventEmitter();
    const cliIo: CliIo = {
      stdout: { write: (s: string) => (out.stdout += s) },
      stderr: { write: (s: string) => (out.stderr += s) },
      exit: (code) => out.exits.push(code),
      signals: signals as unknown as CliIo['signals'],
    };
    return { out, signals, cliIo };
  };
  const help = io();
  t.equal(await runCli(['--help'], {}, help.cliIo), 0, '--help: 0');
  t.match(help.out.stdout, /^streamstats: /, 'help on the given stdout');
  const bad = io();
  t.equal(await runCli(['--window-seconds', '0'], {}, bad.cliIo), 2, 'a bad option: 2');
  t.equal(bad.out.stderr, 'streamstats: WINDOW_SECONDS="0" is not valid: an integer from 1 to 86400 is allowed\n', 'one line on the given stderr');
  const dir = t.testdir();
  const run = io();
  const env = { GEN_COUNT: '500', LOG_LEVEL: 'silent', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', PROGRESS: 'off', WORKER_THREADS: '0', SINK: `file:${join(dir, 'rows.ndjson')}`, DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}` };
  t.equal(await runCli([], env, run.cliIo), 0, 'a generator run: 0');
  t.match(run.out.stderr, /records\s+500: ok 500, rejected 0/, 'the summary on the given stderr');
  t.equal(run.signals.listenerCount('SIGTERM'), 1, 'SIGTERM handled on the given emitter');
  t.same(run.out.exits, [], 'no hard exit on a clean run');
  const failing = io();
  t.equal(await runCli([], { ...env, SINK: `postgres://u:pw-S3cr3t@127.0.0.1:${await freePort()}/test?password=q-S3cr3t` }, failing.cliIo), 1, 'an unreachable sink: 1');
  t.notMatch(failing.out.stderr, /S3cr3t/, 'its error line without the password or the ?password= value');
});

t.test('a statistics file that cannot be opened: one line naming SINK and the reason once, exit 1, before any record is read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-cli-nofile-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await run([], { METRICS_PORT: '0', PROGRESS: 'off', GEN_COUNT: '100000', SINK: `file:${join(dir, 'missing', 'x.ndjson')}`, DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}` });
  t.equal(r.code, 1, r.stderr.slice(-2000));
  const plain = r.stderr.split('\n').filter((l) => l.startsWith('streamstats: '));
  t.equal(plain.length, 1, `one plain error line: ${JSON.stringify(plain)}`);
  t.match(plain[0], /^streamstats: SINK=file:.*missing\/x\.ndjson: cannot open it for appending: ENOENT[^\n]* \[STREAMSTATS_SINK\]$/);
  t.equal((plain[0]!.match(/ENOENT/g) ?? []).length, 1, 'the reason once');
  t.notMatch(r.stderr, /"level":50/, 'no ERROR log lines repeating it');
  t.notMatch(r.stderr, /"msg":"done"/, 'nothing ran');
});
