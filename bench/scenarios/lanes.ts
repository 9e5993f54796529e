// Scenario 10: where each thread's CPU goes, by sink, with the lanes' state on the main thread
// (LANE_STATE=main: workers decode, the main thread merges, closes, formats and writes) against in
// their owner workers (LANE_STATE=worker: the main thread moves bytes and commits). One loaded topic
// (seed 000, 4 partitions, flush points as in scenario 5), every variant a fresh process and group,
// alternated round by round; WORKER_THREADS=auto in both (1 decode worker / 2 owners on 2 cores).
// CPU by kind of thread is read from /proc between the first message and the last row out
// (bench/lib/proc-threads.ts), so start-up, the group join and shutdown are not in it. The main
// thread's share is what no number of workers can take over: the figure the task model is judged by.
import { parseConfig } from '../../src/config/index.js';
import { scratchDir } from '../lib/child.js';
import { alternate, type Sample, type Variant, type VariantResult } from '../lib/measure.js';
import { pgProblem } from '../lib/outputs.js';
import type { Scenario } from '../lib/scenario.js';
import { fmt } from '../lib/stats.js';
import { deleteTopic, loadWorkload, requireBroker, runEngine, runEngineToKafka, runEngineToPostgres, sinkSample, streamCpuExtra, uid } from './kafka-e2e.js';
import { THREAD_KINDS } from '../lib/proc-threads.js';

const PARTITIONS = 4;
/** Main-thread us per record the task model must reach with the clients' socket work still there. */
const MAIN_TARGET_US = 0.8;
const RATIO_TARGETS = { kafka: 0.7, postgres: 0.5 } as const;

type Lanes = 'main' | 'worker';
type SinkKind = 'file' | 'kafka' | 'kafka-eos' | 'postgres';
const SINKS: Readonly<Record<SinkKind, string>> = { file: 'SINK=file:/dev/null', kafka: 'SINK=kafka (at least once)', 'kafka-eos': 'SINK=kafka EXACTLY_ONCE=true', postgres: 'SINK=postgres://...' };

/** Why this build cannot run the variant (the config refuses it), or null. */
function refused(sink: SinkKind, lanes: Lanes): string | null {
  const vars: Record<string, string> = { SOURCE: 'kafka', KAFKA_TOPICS: 't', LANE_STATE: lanes };
  if (sink === 'postgres') vars['SINK'] = 'postgres://u@127.0.0.1:5432/test';
  if (sink === 'kafka' || sink === 'kafka-eos') Object.assign(vars, { SINK: 'kafka', OUTPUT_TOPIC: 'o', ...(sink === 'kafka-eos' ? { EXACTLY_ONCE: 'true' } : {}) });
  try {
    parseConfig(vars);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

const med = (v: VariantResult | undefined, k: string): number => v?.extra[k]?.median ?? NaN;
const us = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '-');

export const lanesScenario: Scenario = {
  id: 'lanes',
  order: 10,
  title: 'Scenario 10: CPU per record by thread and sink, lanes on the main thread against in their owner workers',
  async run(ctx) {
    const n = Number(process.env['STREAMSTATS_BENCH_LANES_MESSAGES'] ?? (ctx.mode === 'quick' ? 300_000 : 1_000_000));
    const protocol = ctx.mode === 'quick' ? { warmup: 1, runs: Math.min(3, ctx.protocol.runs) } : ctx.protocol;
    await requireBroker();
    const pgDown = await pgProblem();
    const topic = uid('ss-bench-lanes');
    const scratch = scratchDir('lanes');
    const skipped: string[] = [];
    try {
      ctx.log(`  lanes: loading ${fmt.int(n)} messages into ${topic} (${PARTITIONS} partitions)`);
      const w = await loadWorkload(topic, n, PARTITIONS);
      const variants: Variant[] = [];
      const runs: Array<{ id: string; sink: SinkKind; lanes: Lanes }> = [];
      // STREAMSTATS_BENCH_LANES_SINKS=file,kafka measures those sinks only (a look at one path).
      const only = process.env['STREAMSTATS_BENCH_LANES_SINKS']?.split(',');
      for (const sink of (Object.keys(SINKS) as SinkKind[]).filter((k) => only === undefined || only.includes(k))) {
        for (const lanes of ['main', 'worker'] as const) {
          const why = sink === 'postgres' && pgDown !== null ? `no PostgreSQL (${pgDown})` : refused(sink, lanes);
          if (why !== null) {
            skipped.push(`${SINKS[sink]} LANE_STATE=${lanes}: not run (${why})`);
            continue;
          }
          const vars = { LANE_STATE: lanes };
          const run = async (): Promise<Sample> => {
            if (sink === 'file') {
              const r = await runEngine(topic, n, scratch.dir, vars, w);
              return sinkSample(n, r, streamCpuExtra(n, r.streamCpu));
            }
            if (sink === 'postgres') return runEngineToPostgres(topic, n, scratch.dir, w, vars);
            return runEngineToKafka(topic, n, scratch.dir, w, sink === 'kafka-eos', vars);
          };
          runs.push({ id: `${sink}-${lanes}`, sink, lanes });
          variants.push({ id: `${sink}-${lanes}`, label: `${SINKS[sink]} LANE_STATE=${lanes}`, config: { SOURCE: 'kafka', sink: SINKS[sink], LANE_STATE: lanes, WORKER_THREADS: 'auto' }, run });
        }
      }
      const results = await alternate('lanes', variants, protocol, ctx.log);
      const byId = new Map(results.map((r) => [r.id, r]));
      const rate = (id: string): number => byId.get(id)?.recordsPerSecond.median ?? NaN;
      const lines = [
        `## ${this.title}`,
        '',
        `A topic of ${fmt.int(n)} seed-000 points (4 partitions, keyed by series, loaded once, then one flush point per partition an hour on in event time), read by \`node dist/src/cli.js\` with \`SOURCE=kafka\`, a fresh group per run and every other variable at its default (\`WORKER_THREADS=auto\`: 1 decode worker with \`LANE_STATE=main\`, one owner per usable CPU with \`LANE_STATE=worker\`). A run is timed from its first message to its last row out (as scenario 5); CPU is each kind of thread's user + system time over that span, read from \`/proc/<pid>/task\` (\`bench/lib/proc-threads.ts\`): the process's start-up, group join and shutdown are not in it. The broker (and PostgreSQL) share the machine's CPUs and are not counted. ${protocol.warmup} warm-up + ${protocol.runs} measured rounds, variants alternated, medians.`,
        '',
        '| sink | LANE_STATE | records/s to the last row (median) | main us/record | workers | V8 helpers | libuv | all threads | vs file:/dev/null (same LANE_STATE) |',
        '|---|---|---:|---:|---:|---:|---:|---:|---:|',
      ];
      for (const { id, sink, lanes } of runs) {
        const r = byId.get(id)!;
        const k = (kind: keyof typeof THREAD_KINDS) => med(r, `stream${kind[0]!.toUpperCase()}${kind.slice(1)}UsPerRecord`);
        lines.push(`| ${SINKS[sink]} | ${lanes} | ${fmt.int(r.recordsPerSecond.median)} | ${us(k('main'))} | ${us(k('workers'))} | ${us(k('v8'))} | ${us(k('libuv'))} | ${us(med(r, 'streamAllUsPerRecord'))} | ${sink === 'file' ? '1.00x' : `${(rate(id) / rate(`file-${lanes}`)).toFixed(2)}x`} |`);
      }
      lines.push('');
      const targets: string[] = [];
      for (const sink of Object.keys(SINKS) as SinkKind[]) {
        const m = med(byId.get(`${sink}-worker`), 'streamMainUsPerRecord');
        if (Number.isFinite(m)) targets.push(`main thread ${us(m)} us/record with ${SINKS[sink]} (target <= ${MAIN_TARGET_US}: ${m <= MAIN_TARGET_US ? 'met' : '**not met**'})`);
      }
      for (const lanes of ['main', 'worker'] as const) {
        for (const [sink, target] of [['kafka', RATIO_TARGETS.kafka], ['kafka-eos', RATIO_TARGETS.kafka], ['postgres', RATIO_TARGETS.postgres]] as const) {
          const x = rate(`${sink}-${lanes}`) / rate(`file-${lanes}`);
          if (Number.isFinite(x)) targets.push(`LANE_STATE=${lanes}: ${SINKS[sink]} ${x.toFixed(2)}x file:/dev/null (target >= ${target}: ${x >= target ? 'met' : '**not met**'})`);
        }
      }
      lines.push('**Targets** (LANE_STATE=worker\'s main thread; sinks against the file sink of the same lane state, ratios of medians):', '', ...targets.map((l) => `- ${l}`));
      if (skipped.length > 0) lines.push('', ...skipped.map((l) => `- ${l}`));
      return {
        config: { SOURCE: 'kafka', messages: n, partitions: PARTITIONS, rows: w.rows, 'protocol.warmup': protocol.warmup, 'protocol.runs': protocol.runs },
        groups: [{ id: 'lanes', title: 'CPU per record by thread and sink', variants: results, baseline: null }],
        markdown: lines.join('\n'),
        headline: targets,
      };
    } finally {
      await deleteTopic(topic).catch(() => {});
      scratch.remove();
    }
  },
};
