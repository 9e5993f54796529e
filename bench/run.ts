// Benchmark runner: `node dist/bench/run.js --quick | --full [--only id,id] [--runs N] [--record]`, or
// `--docs` alone. Runs the scenarios and writes <scenario>.json (+ charts): with --record into
// bench/results, then regenerates docs/benchmarks.md and the measured tables of docs/tuning.md from
// those files; without it into the git-ignored .cache/bench-results, so trying the bench on another
// machine rewrites no tracked file. --docs regenerates the pages from bench/results and runs nothing.
import { execFileSync } from 'node:child_process';
import { describeMachine, machineInfo } from './lib/machine.js';
import type { Protocol } from './lib/measure.js';
import { LOCAL_RESULTS_DIR, RESULTS_DIR, ROOT, writeResult, type Mode, type Scenario } from './lib/scenario.js';
import { refreshTuningTable, writeBenchmarksDoc } from './lib/report.js';
import { ceilometerScenario } from './scenarios/ceilometer.js';
import { decodeScenario } from './scenarios/decode.js';
import { kafkaE2eScenario } from './scenarios/kafka-e2e.js';
import { lanesScenario } from './scenarios/lanes.js';
import { lateDataScenario } from './scenarios/late-data.js';
import { memoryScenario } from './scenarios/memory.js';
import { pgSinkScenario } from './scenarios/pg-sink.js';
import { redisXapiScenario } from './scenarios/redis-xapi.js';
import { poolScenario, poolTable } from './scenarios/pool-scaling.js';
import { queryScenario } from './scenarios/query.js';
import { scalingScenario } from './scenarios/scaling.js';
import { seed000Scenario } from './scenarios/seed000.js';
import { sustainedScenario } from './scenarios/sustained.js';
import { throughputScenario } from './scenarios/throughput.js';

const SCENARIOS: readonly Scenario[] = [
  decodeScenario,
  poolScenario,
  seed000Scenario,
  throughputScenario,
  scalingScenario,
  ceilometerScenario,
  queryScenario,
  pgSinkScenario,
  kafkaE2eScenario,
  sustainedScenario,
  memoryScenario,
  redisXapiScenario,
  lateDataScenario,
  lanesScenario,
];
/** Short names accepted by --only, besides the ids. */
const ALIASES: Readonly<Record<string, string>> = {
  pool: 'pool-scaling',
  seed000: 'seed-000',
  ratio: 'throughput',
  ceilometer: 'ceilometer-ingest',
  memory: 'memory-per-series',
  kafka: 'kafka-e2e',
  e2e: 'kafka-e2e',
  seed003: 'sustained',
  seed001: 'query',
  pg: 'pg-sink',
  redis: 'redis-xapi',
  late: 'late-data',
};

/**
 * A scenario that cannot follow the common protocol says what it did in its config
 * ('protocol.warmup', 'protocol.runs'): scenario 5 in quick mode measures 3 rounds, scenario 6 runs
 * each rate once. The result file and the page then state that, not the runner's default.
 */
function protocolOf(config: Readonly<Record<string, string | number>>, fallback: Protocol): Protocol {
  const warmup = config['protocol.warmup'];
  const runs = config['protocol.runs'];
  return { warmup: typeof warmup === 'number' ? warmup : fallback.warmup, runs: typeof runs === 'number' ? runs : fallback.runs };
}

interface Args {
  readonly mode: Mode;
  readonly only: readonly string[] | null;
  readonly runs: number | null;
  /** Results into bench/results and the docs regenerated. */
  readonly record: boolean;
  /** Only regenerate the docs from bench/results. */
  readonly docsOnly: boolean;
}

function usage(msg: string): never {
  process.stderr.write(`bench: ${msg}\nusage: node dist/bench/run.js --quick|--full [--only ${SCENARIOS.map((s) => s.id).join(',')}] [--runs N (>= 5)] [--record]\n       node dist/bench/run.js --docs\n`);
  process.exit(2);
}

function parseArgs(argv: readonly string[]): Args {
  let mode: Mode | null = null;
  let only: string[] | null = null;
  let runs: number | null = null;
  let record = false;
  let docsOnly = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick' || a === '--full') mode = a === '--quick' ? 'quick' : 'full';
    else if (a === '--record') record = true;
    else if (a === '--docs') docsOnly = true;
    else if (a === '--only') {
      only = (argv[++i] ?? '').split(',').map((s) => ALIASES[s.trim()] ?? s.trim());
      const unknown = only.filter((o) => !SCENARIOS.some((s) => s.id === o));
      if (unknown.length > 0) usage(`--only: unknown scenario ${unknown.join(', ')}`);
    } else if (a === '--runs') {
      runs = Number(argv[++i]);
      if (!Number.isInteger(runs) || runs < 5) usage('--runs must be an integer >= 5');
    } else usage(`unknown argument ${a}`);
  }
  if (docsOnly) {
    if (mode !== null || only !== null || runs !== null || record) usage('--docs takes no other argument');
    return { mode: 'quick', only: null, runs: null, record: false, docsOnly };
  }
  if (mode === null) usage('--quick or --full is required');
  return { mode, only, runs, record, docsOnly };
}

function engineVersion(): string {
  // Set when benchmarking a snapshot outside the git checkout (e.g. a copy of HEAD).
  const given = process.env.STREAMSTATS_BENCH_ENGINE;
  if (given !== undefined && given !== '') return given;
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'workers'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    return `${commit}${dirty ? ' + uncommitted src changes' : ''}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

function writeDocs(log: (line: string) => void): void {
  const inputs = { scenarioIds: SCENARIOS.map((s) => s.id), poolTable };
  log(`wrote ${writeBenchmarksDoc(inputs)}`);
  const tuning = refreshTuningTable(inputs);
  if (tuning !== null) log(`updated the measured tables in ${tuning}`);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  if (args.docsOnly) {
    writeDocs(log);
    return;
  }
  const resultsDir = args.record ? RESULTS_DIR : LOCAL_RESULTS_DIR;
  const protocol: Protocol = { warmup: 1, runs: args.runs ?? 5 };
  const machine = machineInfo();
  const engine = engineVersion();
  const selected = SCENARIOS.filter((s) => args.only === null || args.only.includes(s.id));
  const extra = [...(args.only === null ? [] : [`--only ${args.only.join(',')}`]), ...(args.runs === null ? [] : [`--runs ${args.runs}`]), ...(args.record ? ['--record'] : [])];
  const command = `npm run ${args.mode === 'quick' ? 'bench' : 'bench:full'}${extra.length === 0 ? '' : ` -- ${extra.join(' ')}`}`;
  log(`streamstats benchmarks (${args.mode}): ${describeMachine(machine)}; engine ${engine}`);
  const headlines: string[] = [];
  const t0 = performance.now();
  for (const s of selected) {
    log(`${s.title}`);
    const started = performance.now();
    const out = await s.run({ mode: args.mode, protocol, log });
    const durationSeconds = (performance.now() - started) / 1000;
    const file = writeResult({
      ...out,
      scenario: s.id,
      order: s.order,
      title: s.title,
      mode: args.mode,
      command,
      engine,
      timestamp: new Date().toISOString(),
      durationSeconds,
      machine,
      protocol: { ...protocolOf(out.config, protocol), alternated: true, childProcessPerRun: true },
    }, resultsDir);
    headlines.push(...out.headline);
    log(`  -> ${file} (${durationSeconds.toFixed(0)} s)`);
  }
  if (args.record) writeDocs(log);
  else log(`results in ${resultsDir} (not recorded: --record writes them to bench/results and regenerates docs/)`);
  log(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  for (const h of headlines) log(`  ${h}`);
}

await main();
