// Kafka -> file: streamstats (pool and WORKER_THREADS=0, from one or more built trees, so a
// change can be measured against a base checkout side by side) against the bare kafkajs consumer
// (bench/child/kafka-consume.ts bare) and the single-threaded whole-job kafkajs baseline
// (bench/child/kafka-baseline-job.ts), all reading the same seed-000 topic from the beginning with a
// fresh group, rows to a file. Variants alternate round by round; a run is timed from the first
// message seen to the last message processed, on this process's clock, and its CPU (user + system of
// every thread of the child, from /proc) is taken over the same span: CPU per record is the cost of
// the whole process, the main thread's share says how busy it was.
// Usage (after a build): node dist/bench/scenarios/kafka-baseline.js
//   KB_MESSAGES=1000000 KB_ROUNDS=3 KB_PARTITIONS=4
//   KB_TREES=new=/work/wt-kafka,base=/tmp/base-kafka   (label=checkout with a built dist/)
//   KB_VARIANTS=bare,job,ss:new,ss0:new,ss:base,ss0:base  (ss = WORKER_THREADS=auto, ss0 = 0)
//   KB_NODE_ARGS='--cpu-prof --cpu-prof-dir=DIR' (engine runs only; KB_NODE_ARGS_<label> for one tree's)   KB_TOPIC=<existing loaded topic> (else one is made, loaded and deleted)   KB_ENV_<label>=A=1;B=2 (extra engine vars)
// Prints one line per run and a JSON summary (medians, ratios) at the end.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { sleep } from '../../src/async/index.js';
import { PATHS } from '../lib/child.js';
import { ROOT } from '../lib/scenario.js';
import { BROKERS, createTopic, deleteTopic, requireBroker, uid } from './kafka-e2e.js';
import { freePort, spawnCli } from '../../test/fixtures/engine-process.js';
import { metricSum, parseMetrics } from '../../test/fixtures/metrics.js';

/** /metrics is scraped this often: a scrape costs the engine ~2 ms of main thread, so 50 ms polls would charge it ~4 %. */
const POLL_MS = 200;
const TICK_S = 100; // USER_HZ on Linux

interface Cpu {
  readonly total: number;
  readonly main: number;
  /** System time of every thread (page faults of fresh buffers show here). */
  readonly sys: number;
}

/** CPU seconds of every thread of `pid`, and of its main thread, from /proc. */
function cpuOf(pid: number): Cpu {
  let total = 0;
  let main = 0;
  let sys = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const s = (Number(f[11]) + Number(f[12])) / TICK_S;
    total += s;
    sys += Number(f[12]) / TICK_S;
    if (Number(tid) === pid) main = s;
  }
  // Threads that ended are counted in the process's own totals, not in any task.
  const pf = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const p = pf.slice(pf.lastIndexOf(')') + 2).split(' ');
  total = Math.max(total, (Number(p[11]) + Number(p[12])) / TICK_S);
  return { total, main, sys: Math.max(sys, Number(p[12]) / TICK_S) };
}

interface Run {
  readonly seconds: number;
  readonly cpu: number;
  readonly mainCpu: number;
  readonly sysCpu: number;
  readonly rows?: number;
}

function runChild(script: string, args: readonly string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
    let first: { t: number; cpu: Cpu } | null = null;
    let last: { t: number; cpu: Cpu } | null = null;
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const t = performance.now();
      const ev = JSON.parse(line) as { event: string };
      if (ev.event === 'first') first = { t, cpu: cpuOf(child.pid!) };
      else if (ev.event === 'done') last = { t, cpu: cpuOf(child.pid!) };
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 || first === null || last === null) return reject(new Error(`${script} exited with ${code}:\n${err.slice(-2000)}`));
      const f: { t: number; cpu: Cpu } = first;
      const l: { t: number; cpu: Cpu } = last;
      resolve({ seconds: (l.t - f.t) / 1000, cpu: l.cpu.total - f.cpu.total, mainCpu: l.cpu.main - f.cpu.main, sysCpu: l.cpu.sys - f.cpu.sys });
    });
  });
}

async function runEngine(tree: string, topic: string, n: number, vars: Readonly<Record<string, string>>, nodeArgText: string | undefined): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'streamstats-kb-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'warn',
    PROGRESS: 'off',
    METRICS_PORT: String(port),
    METRICS_HOST: '127.0.0.1',
    SOURCE: 'kafka',
    KAFKA_BROKERS: BROKERS,
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('ss-kb-g'),
    SINK: `file:${join(dir, 'stats.ndjson')}`,
    DEAD_LETTER: `file:${join(dir, 'dead-letter.ndjson')}`,
    ...vars,
  };
  const nodeArgs = (nodeArgText ?? '').split(' ').filter((a) => a !== '');
  const { child, closed } = spawnCli(env, { entry: join(tree, 'dist', 'src', 'cli.js'), nodeArgs });
  try {
    let first: { t: number; cpu: Cpu } | null = null;
    const deadline = performance.now() + 600_000;
    for (;;) {
      await sleep(POLL_MS);
      if (child.exitCode !== null) throw new Error(`streamstats (${tree}) exited with ${child.exitCode}`);
      let text: string;
      try {
        text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      } catch {
        continue; // not listening yet
      }
      const t = performance.now();
      const cpu = cpuOf(child.pid!);
      const ms = parseMetrics(text);
      if (first === null && metricSum(ms, 'streamstats_messages_total') > 0) first = { t, cpu };
      if (first !== null && metricSum(ms, 'streamstats_records_total', { result: 'ok' }) >= n) {
        const rows = metricSum(ms, 'streamstats_windows_emitted_total');
        return { seconds: (t - first.t) / 1000, cpu: cpu.total - first.cpu.total, mainCpu: cpu.main - first.cpu.main, sysCpu: cpu.sys - first.cpu.sys, rows };
      }
      if (t > deadline) throw new Error('streamstats did not apply every record within 600 s');
    }
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    await closed;
    clearTimeout(killer);
    rmSync(dir, { recursive: true, force: true });
  }
}

function loadTopic(topic: string, count: number, partitions: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'tools', 'produce.js')], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KAFKA_BROKERS: BROKERS, KAFKA_TOPICS: topic, GEN_COUNT: String(count), PRODUCE_PARTITIONS: String(partitions), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`produce exited with ${code}`))));
  });
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

function envOf(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of (text ?? '').split(';')) {
    const i = kv.indexOf('=');
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

async function main(): Promise<void> {
  const n = Number(process.env.KB_MESSAGES ?? 1_000_000);
  const rounds = Number(process.env.KB_ROUNDS ?? 3);
  const partitions = Number(process.env.KB_PARTITIONS ?? 4);
  const trees = new Map((process.env.KB_TREES ?? `new=${ROOT}`).split(',').map((kv) => kv.split('=') as [string, string]));
  const names = (process.env.KB_VARIANTS ?? 'bare,job,ss:new,ss0:new').split(',');
  await requireBroker();
  const given = process.env.KB_TOPIC;
  const topic = given ?? uid('ss-kb');
  if (given === undefined) {
    await createTopic(topic, partitions);
    const t0 = performance.now();
    await loadTopic(topic, n, partitions);
    process.stderr.write(`loaded ${n} messages into ${topic} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  const runOne = async (name: string): Promise<Run> => {
    const jobOut = join(tmpdir(), `streamstats-kb-job-${process.pid}.ndjson`);
    if (name === 'bare') return runChild(PATHS.child('kafka-consume'), ['bare', BROKERS, topic, uid('ss-kb-g'), String(n)]);
    if (name === 'job') {
      try {
        return await runChild(PATHS.child('kafka-baseline-job'), [BROKERS, topic, uid('ss-kb-g'), String(n), jobOut]);
      } finally {
        rmSync(jobOut, { force: true });
      }
    }
    const [kind, label] = name.split(':') as [string, string];
    const tree = trees.get(label);
    if (tree === undefined || (kind !== 'ss' && kind !== 'ss0')) throw new Error(`unknown variant ${name}`);
    return runEngine(tree, topic, n, { ...(kind === 'ss0' ? { WORKER_THREADS: '0' } : {}), ...envOf(process.env[`KB_ENV_${label}`]) }, process.env[`KB_NODE_ARGS_${label}`] ?? process.env.KB_NODE_ARGS);
  };
  const runs = new Map<string, Run[]>(names.map((v) => [v, []]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const name of names) {
        const x = await runOne(name);
        runs.get(name)!.push(x);
        process.stderr.write(
          `round ${r + 1} ${name}: ${Math.round(n / x.seconds)} rec/s, ${x.seconds.toFixed(2)} s, ${((x.cpu / n) * 1e6).toFixed(2)} us CPU/rec ` +
            `(main thread ${((x.mainCpu / n) * 1e6).toFixed(2)}, system ${((x.sysCpu / n) * 1e6).toFixed(2)}), ` +
            `main ${((x.mainCpu / x.seconds) * 100).toFixed(0)} %, all threads ${((x.cpu / x.seconds) * 100).toFixed(0)} %${x.rows === undefined ? '' : `, ${x.rows} rows`}\n`,
        );
      }
    }
  } finally {
    if (given === undefined && process.env.KB_KEEP !== '1') await deleteTopic(topic);
  }
  const summary: Record<string, { recPerS: number; usPerRec: number; mainUsPerRec: number; sysUsPerRec: number; mainBusy: number; allBusy: number; runs: number[] }> = {};
  for (const [name, xs] of runs) {
    summary[name] = {
      recPerS: Math.round(median(xs.map((x) => n / x.seconds))),
      usPerRec: Number(median(xs.map((x) => (x.cpu / n) * 1e6)).toFixed(2)),
      mainUsPerRec: Number(median(xs.map((x) => (x.mainCpu / n) * 1e6)).toFixed(2)),
      sysUsPerRec: Number(median(xs.map((x) => (x.sysCpu / n) * 1e6)).toFixed(2)),
      mainBusy: Number(median(xs.map((x) => x.mainCpu / x.seconds)).toFixed(2)),
      allBusy: Number(median(xs.map((x) => x.cpu / x.seconds)).toFixed(2)),
      runs: xs.map((x) => Math.round(n / x.seconds)),
    };
  }
  const ratios: Record<string, number> = {};
  for (const name of names) {
    if (!name.startsWith('ss')) continue;
    for (const base of ['bare', 'job']) if (summary[base] !== undefined) ratios[`${name}/${base}`] = Number((summary[name]!.recPerS / summary[base]!.recPerS).toFixed(2));
  }
  process.stdout.write(`${JSON.stringify({ messages: n, rounds, partitions, topic: given ?? 'fresh', summary, ratios }, null, 1)}\n`);
}

await main();
