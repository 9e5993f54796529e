// The bin starts node once more with the main heap's sizes (src/config/main-heap.ts): the same
// process (pid, stdin, stdout, signals) runs the engine with them, and a user's own flags win.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { MAIN_HEAP_DEFAULTS, MAIN_HEAP_FLAGS, relaunchArgv, type LaunchFacts } from '../../src/config/main-heap.js';
import { CLI, runToExit } from '../fixtures/engine-process.js';

const PROBE = fileURLToPath(new URL('../fixtures/launch-probe.js', import.meta.url));
const QUIET = { LOG_LEVEL: 'warn', METRICS_PORT: '0', PROGRESS: 'off' };
/** The node running the tests runs the engine too: one without process.execve (before 22.15) runs it as launched. */
const CAN_EXEC = typeof process.execve === 'function';
const NO_EXEC = CAN_EXEC ? false : 'this node has no process.execve: the bin runs as launched (the stdin test checks that)';

interface Probe {
  readonly probe: 'start' | 'exit';
  readonly pid: number;
  readonly execArgv: string[];
}

function probes(stderr: string): Probe[] {
  return stderr.split('\n').filter((l) => l.startsWith('{"probe"')).map((l) => JSON.parse(l) as Probe);
}

const FACTS: LaunchFacts = {
  platform: 'linux',
  canExec: true,
  execPath: '/usr/bin/node',
  execArgv: ['--import', './p.js'],
  argv: ['/usr/bin/node', '/app/cli.js', '--window-seconds', '60'],
  nodeOptions: '',
  hasChannel: false,
  relaunch: undefined,
};

t.test('relaunchArgv: our flags first, then the launch flags, the script and its arguments; nothing when there is nothing to add', async (t) => {
  t.same(relaunchArgv(FACTS), ['/usr/bin/node', ...MAIN_HEAP_FLAGS, '--import', './p.js', '/app/cli.js', '--window-seconds', '60']);
  // The relaunched image sees its own flags and stops there.
  t.equal(relaunchArgv({ ...FACTS, execArgv: [...MAIN_HEAP_FLAGS, '--import', './p.js'] }), null);
  // A flag the user gave wins, in either spelling, on the command line or in NODE_OPTIONS; the other is still added.
  t.same(relaunchArgv({ ...FACTS, execArgv: ['--max_semi_space_size=32'] })?.slice(1, 3), [`--initial-old-space-size=${MAIN_HEAP_DEFAULTS.initialOldSpaceMb}`, '--max_semi_space_size=32']);
  t.same(relaunchArgv({ ...FACTS, nodeOptions: '--enable-source-maps --initial-old-space-size=256' })?.slice(1, 2), [`--max-semi-space-size=${MAIN_HEAP_DEFAULTS.maxSemiSpaceMb}`]);
  t.equal(relaunchArgv({ ...FACTS, nodeOptions: '--min-semi-space-size=1', execArgv: ['--initial_old_space_size=16'] }), null);
  t.equal(relaunchArgv({ ...FACTS, relaunch: '0' }), null, 'STREAMSTATS_RELAUNCH=0');
  t.equal(relaunchArgv({ ...FACTS, canExec: false }), null, 'no process.execve');
  t.equal(relaunchArgv({ ...FACTS, platform: 'win32' }), null);
  t.equal(relaunchArgv({ ...FACTS, hasChannel: true }), null, 'an IPC channel to a parent would not survive');
});

t.test('the engine runs in the relaunched image: same pid, the flags in force, rows from stdin to stdout', async (t) => {
  const lines = Array.from({ length: 5 }, (_, i) => JSON.stringify({ metric: { name: 'cpu', dimensions: { host: 'a' }, timestamp: 1_700_000_000_000 + i * 1000, value: i } }));
  const child = spawn(process.execPath, ['--import', PROBE, CLI], { env: { ...process.env, ...QUIET, SOURCE: 'stdin', WORKER_THREADS: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  // Written after the exec has had time to happen: what the first image never read is still there.
  await new Promise((r) => setTimeout(r, 300));
  child.stdin.end(`${lines.join('\n')}\n`);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.equal(code, 0, err);
  const p = probes(err);
  t.notOk(MAIN_HEAP_FLAGS.some((f) => p[0]!.execArgv.includes(f)), 'the first image as launched');
  if (CAN_EXEC) {
    t.same(p.map((x) => x.probe), ['start', 'start', 'exit'], 'two images start, the second one exits (the first one is replaced, no exit of its own)');
    t.equal(new Set(p.map((x) => x.pid)).size, 1, 'one pid throughout');
    t.same(p[1]!.execArgv, [...MAIN_HEAP_FLAGS, '--import', PROBE], 'the second image with the heap flags and the launch flags kept');
  } else {
    t.same(p.map((x) => x.probe), ['start', 'exit'], 'no process.execve: one image, as launched');
  }
  const rows = out.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { count: number; sum: number });
  t.equal(rows.reduce((a, r) => a + r.count, 0), 5, 'every stdin record in a row');
  t.equal(rows.reduce((a, r) => a + r.sum, 0), 10);
});

t.test('a SIGTERM reaches the relaunched engine, which shuts down cleanly', { skip: NO_EXEC }, async (t) => {
  const r = await runToExit(['--import', PROBE, CLI], { ...process.env, ...QUIET, GEN_COUNT: '100000000' }, { keepStdout: false, signalAfterMs: 1500, timeoutMs: 60_000 });
  t.equal(r.code, 0, r.stderr);
  const p = probes(r.stderr);
  t.equal(p.length, 3, r.stderr);
  t.equal(new Set(p.map((x) => x.pid)).size, 1);
  t.match(r.stderr, /records\s+[\d,]+: ok/, 'the summary of a stopped run');
});

t.test('STREAMSTATS_RELAUNCH=0 and a flag of the user\'s', { skip: NO_EXEC }, async (t) => {
  const off = await runToExit(['--import', PROBE, CLI], { ...process.env, ...QUIET, GEN_COUNT: '10', STREAMSTATS_RELAUNCH: '0' }, { keepStdout: false });
  t.equal(off.code, 0, off.stderr);
  t.same(probes(off.stderr).map((x) => x.probe), ['start', 'exit'], 'one image');
  // (On the command line: the test runner rewrites NODE_OPTIONS for the processes it spawns; relaunchArgv reads both.)
  const mine = await runToExit(['--max-semi-space-size=2', '--import', PROBE, CLI], { ...process.env, ...QUIET, GEN_COUNT: '10' }, { keepStdout: false });
  t.equal(mine.code, 0, mine.stderr);
  const p = probes(mine.stderr);
  t.same(p[1]!.execArgv, [`--initial-old-space-size=${MAIN_HEAP_DEFAULTS.initialOldSpaceMb}`, '--max-semi-space-size=2', '--import', PROBE], 'only the flag the user did not give');
});
