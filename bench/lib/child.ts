// Measured runs happen in child processes, one per run, so memory, JIT state and worker threads of one
// run never leak into the next.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runToExit, type Exited } from '../../test/fixtures/engine-process.js';

const here = (rel: string): string => fileURLToPath(new URL(rel, import.meta.url));

/** Compiled paths (this file is dist/bench/lib/child.js). */
export const PATHS = {
  cli: here('../../src/cli.js'),
  preload: new URL('./maxrss-preload.js', import.meta.url).href,
  child: (name: string): string => here(`../child/${name}.js`),
} as const;

/** The CLI's `"msg":"done"` summary (src/pipeline.ts Summary), the fields the benchmarks use. */
export interface CliSummary {
  readonly messages: number;
  readonly records: number;
  readonly ok: number;
  readonly rejected: Record<string, number>;
  readonly rows: number;
  readonly batches: number;
  readonly decodeSeconds: number;
  readonly threads: number;
  readonly elapsedSeconds: number;
  readonly recordsPerSecond: number;
  readonly peakRssBytes: number;
}

export interface CliRun {
  readonly summary: CliSummary;
  /** getrusage peak RSS of the whole process (all threads), from the preload. */
  readonly maxRssBytes: number;
  /** Wall time of the child process, start-up included. */
  readonly wallSeconds: number;
}

function run(args: readonly string[], env: NodeJS.ProcessEnv, keepStdout: boolean): Promise<Exited> {
  return runToExit(args, env, { keepStdout });
}

function maxRssOf(stderr: string): number {
  const line = stderr.split('\n').find((l) => l.startsWith('{"bench":"maxrss"'));
  return line === undefined ? NaN : (JSON.parse(line) as { maxRssBytes: number }).maxRssBytes;
}

/** A scratch directory for sinks and dead letters; removed by the returned function. */
export function scratchDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `streamstats-bench-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs `node dist/src/cli.js` with the given variables on top of a quiet, file-sinked baseline
 * (statistics rows and dead letters to files in `dir`, metrics on a free port, no progress line).
 */
export async function runCli(vars: Readonly<Record<string, string>>, dir: string): Promise<CliRun> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'info',
    PROGRESS: 'off',
    METRICS_PORT: '0',
    METRICS_HOST: '127.0.0.1',
    SINK: `file:${join(dir, 'stats.ndjson')}`,
    DEAD_LETTER: `file:${join(dir, 'dead-letter.ndjson')}`,
    ...vars,
  };
  const r = await run(['--import', PATHS.preload, PATHS.cli], env, false);
  const done = r.stderr.split('\n').find((l) => l.includes('"msg":"done"'));
  if (r.code !== 0 || done === undefined) {
    throw new Error(`streamstats exited with ${r.code} (${JSON.stringify(vars)}):\n${r.stderr.slice(-2000)}`);
  }
  const summary = (JSON.parse(done) as { summary: CliSummary }).summary;
  return { summary, maxRssBytes: maxRssOf(r.stderr), wallSeconds: r.wallSeconds };
}

/** Runs a bench child script (dist/bench/child/NAME.js); its last stdout line is its JSON result. */
export async function runChild<T>(name: string, args: readonly string[], nodeFlags: readonly string[] = []): Promise<T & { maxRssBytes: number }> {
  const r = await run([...nodeFlags, '--import', PATHS.preload, PATHS.child(name), ...args], { PATH: process.env.PATH, HOME: process.env.HOME }, true);
  const last = r.stdout.trim().split('\n').pop();
  if (r.code !== 0 || last === undefined || last === '') {
    throw new Error(`bench child ${name} ${args.join(' ')} exited with ${r.code}:\n${r.stderr.slice(-2000)}`);
  }
  return { ...(JSON.parse(last) as T), maxRssBytes: maxRssOf(r.stderr) };
}
