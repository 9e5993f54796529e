// The CLI's own last line (the summary) on a stuck stderr pipe. Regression: it was a
// synchronous process.stderr write, which on a full pipe never returns: a finished run never exited,
// and its exit code was never seen. Now it goes through a bounded non-blocking writer, waited for at
// most CLI_DEFAULTS.summaryFlushMs.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { readNdjson } from '../fixtures/harness.js';
import { CLI } from '../fixtures/engine-process.js';
import { stuckFifo } from '../fixtures/fifo.js';

for (const [label, env, expected] of [
  ['a finished run exits 0', { SINK: 'file:$DIR/rows.ndjson' }, 0],
  ['a failed run exits 1', { SINK: 'file:/proc/streamstats-no-such-dir/rows.ndjson' }, 1],
] as const) {
  t.test(`regression: with stderr a stuck pipe, ${label} within SHUTDOWN_TIMEOUT_SECONDS`, async (t) => {
    const dir = t.testdir();
    const fifo = stuckFifo(dir);
    t.teardown(fifo.close);
    const started = Date.now();
    const child = spawn(process.execPath, [CLI], {
      env: {
        ...process.env,
        SOURCE: 'generator', GEN_COUNT: '5000', SINK: env.SINK.replace('$DIR', dir), DEAD_LETTER: 'file:/dev/null',
        METRICS_PORT: '0', METRICS_HOST: '127.0.0.1', LOG_LEVEL: 'debug', PROGRESS: 'off', SHUTDOWN_TIMEOUT_SECONDS: '5', WORKER_THREADS: '1',
      },
      stdio: ['ignore', 'ignore', fifo.write],
    });
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let killed = false;
    const guard = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, 90_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(guard);
    t.notOk(killed, `the process exited on its own (after ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    t.equal(code, expected, `with its own exit code ${expected}, not a timeout's`);
    if (expected === 0) t.ok(readNdjson<{ count: number }>(join(dir, 'rows.ndjson')).reduce((a, r) => a + r.count, 0) === 5000, 'every record in the rows');
  });
}
