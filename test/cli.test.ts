// The command as a user runs it: a child process, env and flags, stdout for rows, stderr for the rest.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { OPTIONS, flagFor } from '../src/config/options.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'dist/src/cli.js');

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string>, opts: { shell?: string; signalAfterMs?: number } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = opts.shell !== undefined
      ? spawn('sh', ['-c', opts.shell], { cwd: ROOT, env: { ...process.env, ...env } })
      : spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    if (opts.signalAfterMs !== undefined) setTimeout(() => child.kill('SIGTERM'), opts.signalAfterMs);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const QUIET = { LOG_LEVEL: 'warn', METRICS_PORT: '0', PROGRESS: 'off' };

t.test("the README's main command: the default workload through the pool, rows to a file, summary on stderr", async (t) => {
  const dir = t.testdir();
  // Exactly the README line, with only the output path changed to the test's folder.
  const r = await run([], {}, { shell: `npx streamstats > ${join(dir, 'stats.ndjson')}` });
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
  t.match(r.stderr, /throughput\s+[\d,]+ records\/s with 1 worker thread/);
  t.match(r.stderr, /decode\s+[\d.]+ s in all/);
  t.match(r.stderr, /"msg":"decode threads"/, 'the chosen thread count is logged with its reason');
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
