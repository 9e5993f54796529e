// RSS, not the estimate, against the README's memory budget (src/config/memory.ts rssBudgetMb), under
// the floods that grew the process past it: percentile sketches as wide as they get (1,500 series of
// 4,096 buckets were 396 MB the estimate never saw) and endless new series (the decoders' series
// dictionaries, each full one kept on the main thread). The shipped CLI reads the flood on stdin for
// a bounded time while its RSS is sampled from /proc: under the budget, and level by the end.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { rssBudgetMb } from '../../src/config/memory.js';
import { CLI } from '../fixtures/engine-process.js';

const FLOOD = fileURLToPath(new URL('../fixtures/state-flood.js', import.meta.url));

/** MiB the last 10 s of a run may rise above the peak before them: under the swing of a collection. */
const PLATEAU_MARGIN_MB = 8;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s[s.length >> 1]!;
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? 0 : Number(m[1]) / 1024;
  } catch {
    return 0;
  }
}

/** Runs the CLI on `mode`'s flood for `seconds`; its largest RSS (MiB) and what it said on the way. */
async function flood(t: Test, mode: string, floodArgs: string[], env: Record<string, string>, seconds: number): Promise<{ peak: number; samples: number[]; stderr: string; refused: number }> {
  const feeder = spawn(process.execPath, [FLOOD, mode, ...floodArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  const cli = spawn(process.execPath, [CLI], {
    env: { ...process.env, SOURCE: 'stdin', SINK: 'file:/dev/null', DEAD_LETTER: 'stderr', PROGRESS: 'off', METRICS_PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: [feeder.stdout, 'ignore', 'pipe'],
  });
  let stderr = '';
  let refused = 0;
  // Dead letters go to stderr: count the refused records, keep only the log lines.
  cli.stderr.setEncoding('utf8').on('data', (d: string) => {
    for (const line of d.split('\n')) {
      if (line.includes('"reason":"series_limit"')) refused++;
      else if (line.includes('"level"') && stderr.length < 100_000) stderr += `${line}\n`;
    }
  });
  const samples: number[] = [];
  const exited = new Promise<number | null>((resolve) => cli.on('exit', (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));
  const until = Date.now() + seconds * 1000;
  while (running && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 500));
    samples.push(rssMb(cli.pid!));
  }
  const stillRunning = running;
  feeder.kill('SIGKILL');
  cli.kill('SIGKILL');
  await exited;
  t.ok(stillRunning, `the engine ran the whole ${seconds} s (${stderr.slice(-2000)})`);
  return { peak: Math.max(...samples), samples, stderr, refused };
}


t.test('wide percentile sketches: RSS stays under the budget, the sketches beyond it are refused', async (t) => {
  // Small limits make a small budget, so that 40 s of a loaded CI machine's throughput can pass it.
  const env = { WORKER_THREADS: '1', WORKER_MAX_MEMORY_MB: '32', MAX_STATE_MB: '4', PERCENTILES: '50,99', WINDOW_SECONDS: '60' };
  const budget = rssBudgetMb({ maxStateMb: 4, workerThreads: 1, workerMaxMemoryMb: 32 });
  const run = await flood(t, 'sketch', ['1500'], env, 40);
  t.comment(`RSS MiB every 5 s: ${run.samples.filter((_, i) => i % 10 === 9).map((m) => m.toFixed(0)).join(' ')}; budget ${budget}`);
  t.ok(run.peak <= budget, `peak RSS ${run.peak.toFixed(0)} MiB <= ${budget} MiB`);
  // A peak under the budget for 40 s is no bound if RSS still climbs: a worker's young generation,
  // left to V8, doubled step by step (27 to 74 MiB of heap in the first minute; V8's bound is 192 MiB).
  // Once the heaps are at their bounds RSS only swings with the collections, so the last 10 s stay
  // around what the 30 s before reached; the median, as single samples land on a collection's top.
  const last = median(run.samples.slice(-20));
  const before = Math.max(...run.samples.slice(0, -20));
  t.ok(last <= before + PLATEAU_MARGIN_MB, `RSS levels off: median of the last 10 s ${last.toFixed(0)} MiB <= ${before.toFixed(0)} + ${PLATEAU_MARGIN_MB} MiB, the peak of the 30 s before`);
  t.ok(run.refused > 0, `records whose sketch would pass MAX_STATE_MB are dead-lettered as series_limit (${run.refused})`);
});

t.test('endless new series: RSS stays under the budget, and no worker outgrows its heap limit', async (t) => {
  const env = { WORKER_THREADS: '1', WORKER_MAX_MEMORY_MB: '64', MAX_STATE_MB: '32', WINDOW_SECONDS: '10' };
  const budget = rssBudgetMb({ maxStateMb: 32, workerThreads: 1, workerMaxMemoryMb: 64 });
  const run = await flood(t, 'series', ['0', '120'], env, 30);
  t.comment(`RSS MiB every 5 s: ${run.samples.filter((_, i) => i % 10 === 9).map((m) => m.toFixed(0)).join(' ')}; budget ${budget}`);
  t.ok(run.peak <= budget, `peak RSS ${run.peak.toFixed(0)} MiB <= ${budget} MiB`);
  // A dictionary bound fixed at 128 MiB outgrew a 64 MiB worker: replaced again and again, its batches retried.
  t.notMatch(run.stderr, /ERR_WORKER_OUT_OF_MEMORY/, 'the series dictionary starts over within the worker heap limit');
});
