// A bench child under /usr/bin/time and the per-thread CPU preload: the whole process's CPU, peak RSS
// and wall time, and the CPU of each kind of thread (MAIN, WorkerThread, V8Worker, libuv-worker), so a
// scenario can say where the CPU went, not only how much. Also the streamstats CLI run this way.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Sample } from './measure.js';
import { ROOT } from './scenario.js';

export interface Timed {
  readonly stdout: string;
  readonly stderr: string;
  readonly cpuSeconds: number;
  readonly wallSeconds: number;
  readonly maxRssBytes: number;
  /** CPU seconds per kind of thread (thread-cpu-preload): MAIN, WorkerThread, V8Worker, libuv-worker. */
  readonly threads: Readonly<Record<string, number>>;
}

/** Every run gets the per-thread CPU preload: where the CPU went, not only how much. */
export const THREAD_CPU = ['--import', join(ROOT, 'dist/bench/lib/thread-cpu-preload.js')];
export const NODE = join(ROOT, 'node_modules/.bin/node');

export function timed(args: readonly string[], env: Record<string, string>): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'CPU %U %S %M %e', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /CPU ([\d.]+) ([\d.]+) (\d+) ([\d.]+)\s*$/.exec(stderr);
      const t = stderr.split('\n').find((l) => l.startsWith('{"bench":"threads"'));
      const threads = t === undefined ? {} : (JSON.parse(t) as { threads: Record<string, number> }).threads;
      if (code !== 0 || m === null) reject(new Error(`${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`));
      else resolve({ stdout, stderr, cpuSeconds: Number(m[1]) + Number(m[2]), wallSeconds: Number(m[4]), maxRssBytes: Number(m[3]) * 1024, threads });
    });
  });
}

/** CPU per record, whole process and by kind of thread, less a start-up's CPU when one is given. */
export function threadSample(records: number, recordsPerSecond: number, elapsedSeconds: number, t: Timed, startup?: Timed): Sample {
  const us = (kind: string): number => (((t.threads[kind] ?? 0) - (startup?.threads[kind] ?? 0)) * 1e6) / records;
  return {
    recordsPerSecond,
    elapsedSeconds,
    peakRssBytes: t.maxRssBytes,
    extra: {
      cpuUsPerRecord: ((t.cpuSeconds - (startup?.cpuSeconds ?? 0)) * 1e6) / records,
      records,
      mainUs: us('MAIN'),
      workerUs: us('WorkerThread'),
      v8Us: us('V8Worker'),
      libuvUs: us('libuv-worker'),
      // Whole process, start to exit: how many of the machine's cores the run kept busy on average.
      cores: t.cpuSeconds / t.wallSeconds,
    },
  };
}

export interface CliSummaryLine {
  readonly records: number;
  readonly recordsPerSecond: number;
  readonly elapsedSeconds: number;
  readonly ok: number;
  readonly rows: number;
  readonly threads: number;
}

/** One streamstats run of the tree's dist/src/cli.js, rows to `out`, under time and the thread preload. */
export async function timedCli(tree: string, vars: Record<string, string>, dir: string, out = join(dir, 'stats.ndjson')): Promise<{ t: Timed; summary: CliSummaryLine }> {
  rmSync(out, { force: true });
  const env = { METRICS_PORT: '0', SINK: `file:${out}`, DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`, PROGRESS: 'off', LOG_LEVEL: 'info', ...vars };
  const t = await timed([NODE, ...THREAD_CPU, join(tree, 'dist/src/cli.js')], env);
  const done = t.stderr.split('\n').find((l) => l.includes('"msg":"done"'));
  if (done === undefined) throw new Error(`streamstats ${JSON.stringify(vars)}: no summary line`);
  return { t, summary: (JSON.parse(done) as { summary: CliSummaryLine }).summary };
}
