// A stuck log pipe (stderr whose reader never reads) must not block the engine.
// Regression: pino wrote synchronously, so the first log line on a full pipe stalled the event loop
// and SIGTERM never completed. The engine's stderr here is a FIFO filled to the brim before start.
import { spawn } from 'node:child_process';
import { closeSync, constants, openSync } from 'node:fs';
import t from 'tap';
import { BoundedDestination, logLinesDropped } from '../../src/logger.js';
import { CLI, freePort, until } from '../fixtures/engine-process.js';
import { stuckFifo } from '../fixtures/fifo.js';


t.test('BoundedDestination: on a full pipe lines queue up to the bound, then are dropped and counted, never blocking', async (t) => {
  const fifo = stuckFifo(t.testdir());
  t.teardown(fifo.close);
  const nb = openSync(`/proc/self/fd/${fifo.write}`, constants.O_WRONLY | constants.O_NONBLOCK);
  t.teardown(() => closeSync(nb));
  const d = new BoundedDestination(nb, { maxQueuedBytes: 1000 });
  const before = logLinesDropped();
  for (let i = 0; i < 100; i++) d.write(`${JSON.stringify({ i, msg: 'x'.repeat(80) })}\n`);
  t.ok(d.queuedBytes <= 1000, `queued ${d.queuedBytes} bytes, within the bound`);
  t.ok(logLinesDropped() - before >= 100 - 1000 / 90, `the rest dropped and counted (${logLinesDropped() - before})`);
});

t.test('regression: with stderr a stuck pipe, SIGTERM still ends the engine (SHUTDOWN_TIMEOUT_SECONDS)', async (t) => {
  const fifo = stuckFifo(t.testdir());
  t.teardown(fifo.close);
  const port = await freePort();
  const child = spawn(process.execPath, [CLI], {
    env: {
      ...process.env,
      SOURCE: 'generator', GEN_COUNT: '100000000', GEN_RATE: '2000', SINK: 'file:/dev/null', DEAD_LETTER: 'file:/dev/null',
      METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', LOG_LEVEL: 'debug', PROGRESS: 'off', SHUTDOWN_TIMEOUT_SECONDS: '3', WORKER_THREADS: '1',
    },
    stdio: ['ignore', 'ignore', fifo.write],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let killed = false;
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const metrics = async (): Promise<string | null> => {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) });
      return r.status === 200 ? await r.text() : null;
    } catch {
      return null;
    }
  };
  let text: string | null = null;
  await until(async () => (text = await metrics()) !== null && /streamstats_records_total\{result="ok"\} [1-9]/.test(text), 'the engine serving metrics and processing records');
  const m = /streamstats_log_lines_dropped_total (\d+)/.exec(text!);
  // The startup lines are queued (far under the 1 MiB bound), not dropped; the unit test above covers drops.
  t.ok(m !== null, `streamstats_log_lines_dropped_total is exported (${m?.[1]})`);
  child.kill('SIGTERM');
  // A deadline for the test itself, far above SHUTDOWN_TIMEOUT_SECONDS: reaching it means the bug is back.
  const guard = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, 60_000);
  const code = await exited;
  clearTimeout(guard);
  t.notOk(killed, 'the engine exited on its own after SIGTERM');
  t.ok(code === 0 || code === 1, `exit code ${code}`);
});
