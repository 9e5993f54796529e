// Issue 14's ratio run: the default job (generator, 690,000 seed-000 points, rows to a file) with the
// worker pool, in-thread (WORKER_THREADS=0), and as the single-threaded whole-job baseline
// (baseline-job.ts), plus, with BASE_TREE=/path/to/a/built/checkout, the same job of that commit side
// by side (before/after). Every run is a fresh process under /usr/bin/time; the variants alternate
// round by round and only medians are compared. Records/s is the program's own (elapsed from its
// pipeline start); CPU is user + system of the whole process (all threads), per record.
// Usage: node dist/bench/scenarios/throughput.js [ROUNDS]   (env: BASE_TREE, GEN_COUNT)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Run {
  readonly recordsPerSecond: number;
  readonly cpuSeconds: number;
  readonly records: number;
}

interface Variant {
  readonly id: string;
  readonly label: string;
  readonly run: (dir: string) => Promise<Run>;
}

function timed(args: readonly string[], env: Record<string, string>): Promise<{ stdout: string; stderr: string; cpuSeconds: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-f', 'CPU %U %S', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(stderr);
      if (code !== 0 || m === null) reject(new Error(`${args.join(' ')} exited ${code}: ${stderr.slice(-500)}`));
      else resolve({ stdout, stderr, cpuSeconds: Number(m[1]) + Number(m[2]) });
    });
  });
}

function cli(tree: string, id: string, label: string, vars: Record<string, string>, count: number): Variant {
  return {
    id,
    label,
    run: async (dir) => {
      const out = join(dir, `${id}.ndjson`);
      rmSync(out, { force: true });
      const env = { METRICS_PORT: '0', SINK: `file:${out}`, DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`, GEN_COUNT: String(count), PROGRESS: 'off', ...vars };
      const r = await timed([join(tree, 'node_modules/.bin/node'), join(tree, 'dist/src/cli.js')], env);
      const done = r.stderr.split('\n').find((l) => l.includes('"msg":"done"'));
      if (done === undefined) throw new Error(`${id}: no summary line`);
      const s = (JSON.parse(done) as { summary: { records: number; recordsPerSecond: number; ok: number } }).summary;
      if (s.ok !== count) throw new Error(`${id}: ${s.ok} of ${count} records accepted`);
      return { recordsPerSecond: s.recordsPerSecond, cpuSeconds: r.cpuSeconds, records: s.records };
    },
  };
}

function baseline(count: number): Variant {
  return {
    id: 'baseline',
    label: 'single-threaded whole-job baseline (bench/scenarios/baseline-job.ts)',
    run: async (dir) => {
      const r = await timed([join(ROOT, 'node_modules/.bin/node'), join(ROOT, 'dist/bench/scenarios/baseline-job.js'), join(dir, 'baseline.ndjson'), String(count)], {});
      const j = JSON.parse(r.stdout) as { records: number; recordsPerSecond: number };
      return { recordsPerSecond: j.recordsPerSecond, cpuSeconds: r.cpuSeconds, records: j.records };
    },
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function runThroughput(rounds: number, count: number, baseTree: string | undefined, log: (l: string) => void): Promise<string> {
  const variants: Variant[] = [
    cli(ROOT, 'pool', 'worker pool (WORKER_THREADS=auto)', {}, count),
    cli(ROOT, 'in-thread', 'in-thread (WORKER_THREADS=0)', { WORKER_THREADS: '0' }, count),
    baseline(count),
  ];
  if (baseTree !== undefined) {
    variants.push(cli(baseTree, 'base-pool', `base commit, worker pool (${baseTree})`, {}, count));
    variants.push(cli(baseTree, 'base-in-thread', 'base commit, in-thread (WORKER_THREADS=0)', { WORKER_THREADS: '0' }, count));
  }
  const dir = mkdtempSync(join(tmpdir(), 'streamstats-throughput-'));
  const runs = new Map<string, Run[]>(variants.map((v) => [v.id, []]));
  try {
    // Round 0 is a discarded warm-up (file cache, JIT of the tools).
    for (let r = 0; r <= rounds; r++) {
      for (const v of variants) {
        const x = await v.run(dir);
        log(`round ${r}${r === 0 ? ' (warm-up)' : ''} ${v.id}: ${Math.round(x.recordsPerSecond)} rec/s, ${((x.cpuSeconds * 1e6) / x.records).toFixed(2)} us CPU/record`);
        if (r > 0) runs.get(v.id)!.push(x);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const med = new Map(variants.map((v) => {
    const rs = runs.get(v.id)!;
    return [v.id, { rps: median(rs.map((x) => x.recordsPerSecond)), cpu: median(rs.map((x) => (x.cpuSeconds * 1e6) / x.records)) }];
  }));
  const b = med.get('baseline')!;
  const lines = [
    `| variant | median records/s | ratio vs baseline | median CPU us/record (all threads) | CPU ratio vs baseline |`,
    '|---|---:|---:|---:|---:|',
    ...variants.map((v) => {
      const m = med.get(v.id)!;
      return `| ${v.label} | ${Math.round(m.rps).toLocaleString('en-US')} | ${(m.rps / b.rps).toFixed(2)}x | ${m.cpu.toFixed(2)} | ${(m.cpu / b.cpu).toFixed(2)}x |`;
    }),
  ];
  const p = med.get('pool')!;
  const t = med.get('in-thread')!;
  lines.push('', `pool / in-thread: ${(p.rps / t.rps).toFixed(2)}x records/s; pool / baseline: ${(p.rps / b.rps).toFixed(2)}x.`);
  const bp = med.get('base-pool');
  const bt = med.get('base-in-thread');
  if (bp !== undefined && bt !== undefined) {
    lines.push(
      `This tree / base commit: pool ${(p.rps / bp.rps).toFixed(2)}x records/s at ${(p.cpu / bp.cpu).toFixed(2)}x the CPU per record; ` +
        `in-thread ${(t.rps / bt.rps).toFixed(2)}x records/s at ${(t.cpu / bt.cpu).toFixed(2)}x the CPU per record.`,
    );
  }
  lines.push('', `${rounds} alternated rounds after one warm-up, ${count.toLocaleString('en-US')} points, medians.`);
  return lines.join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rounds = Number(process.argv[2] ?? 5);
  const count = Number(process.env['GEN_COUNT'] ?? 690_000);
  const text = await runThroughput(rounds, count, process.env['BASE_TREE'], (l) => process.stderr.write(`${l}\n`));
  process.stdout.write(`${text}\n`);
}
