// Scenario 5: end to end on the local Kafka broker. A topic of N seed-000 Monasca points (4 partitions),
// loaded once per bench run with streamstats-produce, is read from the beginning, each run in a fresh
// child process with a fresh consumer group, by
//   (a) a bare kafkajs consumer (counts messages, resolves offsets): the client library's ceiling;
//   (b) a naive kafkajs consumer: JSON.parse + a Map of (series, 60 s window) -> count/sum/min/max;
//   (c) streamstats (SOURCE=kafka, defaults otherwise): done when /metrics shows N records applied.
// Every run is timed on the parent's clock, from spawn to the last message processed, and from the
// first message seen to the last (which leaves out the group join). The scenario also exports the
// helpers that scenario 6 (sustained.ts) uses: broker checks, topics, an engine process with /metrics.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import kafkajs from 'kafkajs';
import { PATHS, scratchDir } from '../lib/child.js';
import { alternate, type Sample, type Variant, type VariantResult } from '../lib/measure.js';
import { ROOT, variant, type Scenario } from '../lib/scenario.js';
import { fmt, summarize, type Summary } from '../lib/stats.js';
import type { ConsumeDone, ConsumeVariant } from '../child/kafka-consume.js';

export const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const PRODUCE = join(ROOT, 'dist', 'src', 'tools', 'produce.js');
/** /metrics is polled this often while the engine runs: a scrape costs the engine well under 1 ms. */
const POLL_MS = 50;
const TARGETS = { ofBare: 0.9, ofNaive: 1.3 };

export const uid = (prefix: string): string => `${prefix}-${randomBytes(5).toString('hex')}`;

export function kafkaAdmin(): kafkajs.Admin {
  return new kafkajs.Kafka({ clientId: 'streamstats-bench', brokers: BROKERS.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
}

/** Fails with the fix when the broker is down: the scenario never starts or stops it. */
export async function requireBroker(): Promise<void> {
  const admin = kafkaAdmin();
  try {
    await admin.connect();
    await admin.listTopics();
  } catch (err) {
    throw new Error(`no Kafka broker at ${BROKERS} (${(err as Error).message}): start the local one with \`bash scripts/kafka.sh start\``);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

export async function createTopic(topic: string, partitions: number): Promise<void> {
  const admin = kafkaAdmin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopic(topic: string): Promise<void> {
  const admin = kafkaAdmin();
  try {
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] });
  } catch {
    // Best effort: a leftover ss-bench-* topic is harmless and named as ours.
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

async function messagesIn(topic: string): Promise<number> {
  const admin = kafkaAdmin();
  await admin.connect();
  try {
    const offs = await admin.fetchTopicOffsets(topic);
    return offs.reduce((a, o) => a + Number(o.high) - Number(o.low), 0);
  } finally {
    await admin.disconnect();
  }
}

/** Loads the topic with `node dist/src/tools/produce.js`, as a user would. */
async function loadTopic(topic: string, count: number, partitions: number): Promise<number> {
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [PRODUCE], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KAFKA_BROKERS: BROKERS, KAFKA_TOPICS: topic, GEN_COUNT: String(count), PRODUCE_PARTITIONS: String(partitions), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`streamstats-produce exited with ${code}: ${err.slice(-1000)}`))));
  });
  return (performance.now() - t0) / 1000;
}

/** Parses Prometheus text: metric name -> [{labels, value}]. */
export function parseMetrics(text: string): Map<string, Array<{ labels: Record<string, string>; value: number }>> {
  const out = new Map<string, Array<{ labels: Record<string, string>; value: number }>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value: Number(m[3]) });
    out.set(m[1]!, list);
  }
  return out;
}

export type Metrics = ReturnType<typeof parseMetrics>;
export const metricSum = (ms: Metrics, name: string, labels: Record<string, string> = {}): number =>
  (ms.get(name) ?? []).filter((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);
export const metricMax = (ms: Metrics, name: string): number => Math.max(0, ...(ms.get(name) ?? []).map((x) => x.value));

/** A `node dist/src/cli.js` child with its metrics port, for runs that end on SIGTERM. */
export interface EngineProcess {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  readonly port: Promise<number>;
  scrape(): Promise<Metrics>;
  ready(): Promise<boolean>;
  /** SIGTERM and wait: exit code, the peak RSS from the preload, the stderr tail. */
  stop(): Promise<{ code: number | null; maxRssBytes: number; stderrTail: string }>;
}

export function startEngine(vars: Readonly<Record<string, string>>, dir: string): EngineProcess {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'info',
    PROGRESS: 'off',
    METRICS_PORT: '0',
    METRICS_HOST: '127.0.0.1',
    SOURCE: 'kafka',
    KAFKA_BROKERS: BROKERS,
    SINK: `file:${join(dir, 'stats.ndjson')}`,
    DEAD_LETTER: `file:${join(dir, 'dead-letter.ndjson')}`,
    ...vars,
  };
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, ['--import', PATHS.preload, PATHS.cli], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  let maxRssBytes = NaN;
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  const port = new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stderr! });
    lines.on('line', (line) => {
      tail = `${tail}${line}\n`.slice(-4000);
      if (line.startsWith('{"bench":"maxrss"')) maxRssBytes = (JSON.parse(line) as { maxRssBytes: number }).maxRssBytes;
      if (line.includes('metrics on /metrics')) resolve((JSON.parse(line) as { port: number }).port);
    });
    void closed.then((code) => reject(new Error(`streamstats exited with ${code} before listening:\n${tail}`)));
  });
  port.catch(() => {});
  const get = async (path: string): Promise<Response> => fetch(`http://127.0.0.1:${await port}${path}`);
  return {
    child,
    spawnedAt,
    port,
    scrape: async () => parseMetrics(await (await get('/metrics')).text()),
    ready: async () => (await get('/readyz')).status === 200,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await closed;
      return { code, maxRssBytes, stderrTail: tail };
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface E2eRun {
  /** Spawn to the last message processed. */
  readonly startToLast: number;
  /** First message seen to the last. */
  readonly firstToLast: number;
  readonly maxRssBytes: number;
}

const toSample = (n: number, r: E2eRun): Sample => ({
  recordsPerSecond: n / r.firstToLast,
  elapsedSeconds: r.firstToLast,
  peakRssBytes: r.maxRssBytes,
  extra: { startToLastSeconds: r.startToLast, firstToLastSeconds: r.firstToLast, recordsPerSecondFromStart: n / r.startToLast },
});

/** Variants (a) and (b): a bench child that prints "first" and "done" lines, timed as they arrive. */
function runConsumer(kind: ConsumeVariant, topic: string, n: number, nodeFlags: readonly string[] = []): Promise<E2eRun & { done: ConsumeDone }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const args = [...nodeFlags, '--import', PATHS.preload, PATHS.child('kafka-consume'), kind, BROKERS, topic, uid('ss-bench-g'), String(n)];
    const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH, HOME: process.env.HOME }, stdio: ['ignore', 'pipe', 'pipe'] });
    let first = NaN;
    let last = NaN;
    let done: ConsumeDone | null = null;
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const now = performance.now();
      const ev = JSON.parse(line) as { event: string };
      if (ev.event === 'first') first = now;
      else if (ev.event === 'done') {
        last = now;
        done = ev as ConsumeDone;
      }
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const rss = err.split('\n').find((l) => l.startsWith('{"bench":"maxrss"'));
      if (code !== 0 || done === null) return reject(new Error(`kafka-consume ${kind} exited with ${code}:\n${err.slice(-2000)}`));
      if (done.messages < n) return reject(new Error(`kafka-consume ${kind}: ${done.messages} of ${n} messages`));
      resolve({ startToLast: (last - t0) / 1000, firstToLast: (last - first) / 1000, maxRssBytes: rss === undefined ? NaN : (JSON.parse(rss) as { maxRssBytes: number }).maxRssBytes, done });
    });
  });
}

/** Variant (c): streamstats, done when streamstats_records_total{result="ok"} reaches N. */
async function runEngine(topic: string, n: number, dir: string): Promise<E2eRun & { threads: number; rows: number }> {
  const e = startEngine({ KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('ss-bench-g'), SINK: 'file:/dev/null' }, dir);
  try {
    await e.port;
    let first = NaN;
    let last = NaN;
    let threads = NaN;
    const deadline = performance.now() + 600_000;
    for (;;) {
      const ms = await e.scrape();
      const now = performance.now();
      if (Number.isNaN(first) && metricSum(ms, 'streamstats_messages_total') > 0) first = now;
      if (metricSum(ms, 'streamstats_records_total', { result: 'ok' }) >= n) {
        last = now;
        threads = metricSum(ms, 'streamstats_pool_threads');
        break;
      }
      if (now > deadline) throw new Error(`streamstats did not apply ${n} records within 600 s`);
      if (e.child.exitCode !== null) throw new Error('streamstats exited before applying every record');
      await sleep(POLL_MS);
    }
    const rows = metricSum(await e.scrape(), 'streamstats_windows_emitted_total');
    const s = await e.stop();
    if (s.code !== 0) throw new Error(`streamstats exited with ${s.code} after SIGTERM:\n${s.stderrTail}`);
    return { startToLast: (last - e.spawnedAt) / 1000, firstToLast: (last - first) / 1000, maxRssBytes: s.maxRssBytes, threads, rows };
  } finally {
    if (e.child.exitCode === null) e.child.kill('SIGKILL');
  }
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface ProfileSummary {
  readonly sampledSeconds: number;
  readonly busySeconds: number;
  readonly byArea: ReadonlyArray<{ area: string; share: number }>;
  readonly top: ReadonlyArray<{ fn: string; where: string; share: number }>;
}

function area(url: string, fn: string): string {
  if (fn === '(idle)') return 'idle';
  if (fn === '(garbage collector)') return 'garbage collector';
  if (fn === '(program)') return 'V8 / native (program)';
  if (url.includes('/kafkajs/src/protocol')) return 'kafkajs protocol (decoding)';
  if (url.includes('/kafkajs/src/network')) return 'kafkajs network';
  if (url.includes('/kafkajs/src/consumer')) return 'kafkajs consumer';
  if (url.includes('/kafkajs/')) return 'kafkajs other';
  if (url.startsWith('node:')) return 'Node core';
  if (url.includes('/bench/')) return 'bench child';
  return url === '' ? 'native / builtins' : 'other';
}

/** Self time per function of a .cpuprofile, as shares of the non-idle samples. */
function summarizeProfile(file: string): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] };
  const total = p.samples.length;
  const perSample = (p.endTime - p.startTime) / 1e6 / total;
  const fns = new Map<string, { fn: string; where: string; hits: number }>();
  const areas = new Map<string, number>();
  let idle = 0;
  for (const n of p.nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = n.callFrame;
    const a = area(url, functionName);
    if (a === 'idle') {
      idle += hits;
      continue;
    }
    areas.set(a, (areas.get(a) ?? 0) + hits);
    const where = url === '' ? '' : `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}`;
    const key = `${functionName}@${where}`;
    const f = fns.get(key) ?? { fn: functionName === '' ? '(anonymous)' : functionName, where, hits: 0 };
    f.hits += hits;
    fns.set(key, f);
  }
  const busy = total - idle;
  return {
    sampledSeconds: total * perSample,
    busySeconds: busy * perSample,
    byArea: [...areas].sort((x, y) => y[1] - x[1]).map(([a, h]) => ({ area: a, share: h / busy })),
    top: [...fns.values()].sort((x, y) => y.hits - x.hits).slice(0, 12).map((f) => ({ fn: f.fn, where: f.where, share: f.hits / busy })),
  };
}

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

function e2eTable(results: readonly VariantResult[], n: number): string {
  const row = (r: VariantResult): string => {
    const fl = r.extra.firstToLastSeconds!;
    const sl = r.extra.startToLastSeconds!;
    return `| ${r.label} | ${fmt.int(n / fl.median)} | ${fmt.int(n / fl.max)}-${fmt.int(n / fl.min)} | ${fmt.secs(fl.median)} (${fmt.secs(fl.min)}-${fmt.secs(fl.max)}) | ` +
      `${fmt.int(n / sl.median)} | ${fmt.secs(sl.median)} (${fmt.secs(sl.min)}-${fmt.secs(sl.max)}) | ${fmt.mib(r.peakRssBytes.max)} |`;
  };
  return [
    '| variant | records/s, first->last (median) | range | first->last s, median (min-max) | records/s, start->last (median) | start->last s, median (min-max) | peak RSS MiB (max) |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...results.map(row),
  ].join('\n');
}

/** Per-round ratios (runs were alternated, so round i of each variant ran side by side). */
function roundRatios(a: VariantResult, b: VariantResult, key: 'firstToLastSeconds' | 'startToLastSeconds'): Summary {
  return summarize(a.samples.map((s, i) => (b.samples[i]!.extra![key]! / s.extra![key]!)));
}

export const kafkaE2eScenario: Scenario = {
  id: 'kafka-e2e',
  order: 5,
  title: 'Scenario 5: Kafka end to end (local broker), against plain kafkajs consumers',
  async run(ctx) {
    const n = 1_000_000;
    const partitions = 4;
    // Quick mode: 1 warm-up + 3 measured rounds (each round is 3 consumer processes of 1 M messages).
    const protocol = ctx.mode === 'quick' ? { warmup: 1, runs: Math.min(3, ctx.protocol.runs) } : ctx.protocol;
    await requireBroker();
    const topic = uid('ss-bench-e2e');
    const scratch = scratchDir('kafka-e2e');
    const profDir = mkdtempSync(join(tmpdir(), 'streamstats-bench-prof-'));
    let threads = NaN;
    let rows = NaN;
    try {
      ctx.log(`  kafka-e2e: loading ${fmt.int(n)} messages into ${topic} (${partitions} partitions) with streamstats-produce`);
      const loadSeconds = await loadTopic(topic, n, partitions);
      const stored = await messagesIn(topic);
      if (stored !== n) throw new Error(`kafka-e2e: topic ${topic} holds ${stored} messages, expected ${n}`);
      ctx.log(`  kafka-e2e: loaded in ${fmt.secs(loadSeconds)} s`);
      const variants: Variant[] = [
        { id: 'bare', label: '(a) bare kafkajs consumer (count + resolveOffset)', config: { consumer: 'kafkajs eachBatch, autoCommit off' }, run: async () => toSample(n, await runConsumer('bare', topic, n)) },
        { id: 'naive', label: '(b) naive kafkajs consumer (JSON.parse + Map aggregate)', config: { consumer: 'kafkajs eachBatch + JSON.parse + Map' }, run: async () => toSample(n, await runConsumer('naive', topic, n)) },
        {
          id: 'streamstats',
          label: '(c) streamstats (SOURCE=kafka, defaults)',
          config: { SOURCE: 'kafka', SINK: 'file:/dev/null', KAFKA_GROUP_ID: 'fresh per run' },
          run: async () => {
            const r = await runEngine(topic, n, scratch.dir);
            threads = r.threads;
            rows = r.rows;
            return toSample(n, r);
          },
        },
      ];
      const results = await alternate('kafka-e2e', variants, protocol, ctx.log);
      const group = { id: 'kafka-e2e', title: 'Kafka end to end', variants: results, baseline: 'bare' };
      const bare = variant(group, 'bare');
      const naive = variant(group, 'naive');
      const ss = variant(group, 'streamstats');

      ctx.log('  kafka-e2e: CPU profile of (a), one more run with node --cpu-prof');
      await runConsumer('bare', topic, n, ['--cpu-prof', `--cpu-prof-dir=${profDir}`]);
      const profFile = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      const prof = profFile === undefined ? null : summarizeProfile(join(profDir, profFile));

      const ofBare = roundRatios(ss, bare, 'firstToLastSeconds');
      const ofNaive = roundRatios(ss, naive, 'firstToLastSeconds');
      const ofBareStart = roundRatios(ss, bare, 'startToLastSeconds');
      const ofNaiveStart = roundRatios(ss, naive, 'startToLastSeconds');
      const med = (r: VariantResult, k: string): number => r.extra[k]!.median;
      const rBare = med(bare, 'firstToLastSeconds') / med(ss, 'firstToLastSeconds');
      const rNaive = med(naive, 'firstToLastSeconds') / med(ss, 'firstToLastSeconds');
      const rBareStart = med(bare, 'startToLastSeconds') / med(ss, 'startToLastSeconds');
      const rNaiveStart = med(naive, 'startToLastSeconds') / med(ss, 'startToLastSeconds');
      const verdict = (x: number, t: number): string => (x >= t ? `met (>= ${t})` : `**not met** (target >= ${t})`);
      const spread = (s: Summary): string => `per-round ${fmt.ratio(s.min)}-${fmt.ratio(s.max)}`;

      const lines = [
        `## ${this.title}`,
        '',
        `A topic of ${fmt.int(n)} seed-000 Monasca points (1000 names x 4 hosts, ${partitions} partitions, keyed by series, no compression), loaded once for the run with ` +
          `\`KAFKA_TOPICS=<random> GEN_COUNT=${n} PRODUCE_PARTITIONS=${partitions} node dist/src/tools/produce.js\` (${fmt.secs(loadSeconds)} s) and deleted at the end. ` +
          'Every run is a fresh child process with a fresh consumer group reading from the beginning, on the local single-node broker (same machine: the broker shares the 2 CPUs). ' +
          `${protocol.warmup} warm-up + ${protocol.runs} measured rounds, the three variants alternated (a b c a b c ...)${ctx.mode === 'quick' ? ' (quick mode: 3 rounds instead of 5, to keep the run short)' : ''}.`,
        '',
        '- (a) `bench/child/kafka-consume.ts bare`: kafkajs `eachBatch`, counts the messages and resolves the batch\'s last offset, autoCommit off. The client library\'s ceiling on this machine.',
        '- (b) `bench/child/kafka-consume.ts naive`: the same, plus `JSON.parse` of every value and a `Map` of (name + sorted dimensions, 60 s window) -> count/sum/min/max on the main thread.',
        `- (c) \`node dist/src/cli.js\` with \`SOURCE=kafka KAFKA_TOPICS=<topic> KAFKA_GROUP_ID=<fresh> SINK=file:/dev/null\` and every other variable at its default ` +
          `(\`WORKER_THREADS=auto\` = ${threads} worker thread${threads === 1 ? '' : 's'} here; ${fmt.int(rows)} statistics rows a run, serialized to /dev/null). ` +
          `Done when \`streamstats_records_total{result="ok"}\` on /metrics reaches ${fmt.int(n)} (polled every ${POLL_MS} ms, so (c) is charged up to ${POLL_MS} ms it did not use), then SIGTERM.`,
        '- The baselines use the engine\'s fetch settings (maxWaitTimeInMs 500, maxBytesPerPartition 1 MiB, one partition at a time). ' +
          '*first->last* starts at the first message seen (the first "first" line, or the first non-zero `streamstats_messages_total`), so it leaves out process start-up and the group join; *start->last* starts at spawn.',
        '',
        e2eTable(results, n),
        '',
        '| ratio (records/s) | ratio of medians, first->last | spread | ratio of medians, start->last | spread | target |',
        '|---|---:|---:|---:|---:|---|',
        `| (c) / (a) streamstats / bare kafkajs | ${fmt.ratio(rBare)} | ${spread(ofBare)} | ${fmt.ratio(rBareStart)} | ${spread(ofBareStart)} | ${verdict(rBare, TARGETS.ofBare)} |`,
        `| (c) / (b) streamstats / naive kafkajs | ${fmt.ratio(rNaive)} | ${spread(ofNaive)} | ${fmt.ratio(rNaiveStart)} | ${spread(ofNaiveStart)} | ${verdict(rNaive, TARGETS.ofNaive)} |`,
        `| (b) / (a) naive / bare | ${fmt.ratio(med(bare, 'firstToLastSeconds') / med(naive, 'firstToLastSeconds'))} | | ${fmt.ratio(med(bare, 'startToLastSeconds') / med(naive, 'startToLastSeconds'))} | | |`,
        '',
        'Per-round ratios divide the times of the same round, whose runs were adjacent; the targets are judged on the ratio of medians, first->last.',
        '',
      ];
      if (prof !== null) {
        lines.push(
          `**Where variant (a) spends its CPU** (\`node --cpu-prof\` of one more bare run, ${fmt.secs(prof.sampledSeconds)} s sampled, ${fmt.secs(prof.busySeconds)} s of it not idle on the main thread; ` +
            'shares of the non-idle samples, self time):',
          '',
          `By area: ${prof.byArea.slice(0, 8).map((a) => `${a.area} ${pct(a.share)}`).join(', ')}.`,
          '',
          '| function | where | self |',
          '|---|---|---:|',
          ...prof.top.map((f) => `| \`${f.fn}\` | ${f.where === '' ? '(native)' : `\`${f.where}\``} | ${pct(f.share)} |`),
          '',
        );
      }
      return {
        config: { topic: 'random, deleted after', messages: n, partitions, brokers: BROKERS, pollMs: POLL_MS, loadSeconds, workerThreads: threads, 'protocol.warmup': protocol.warmup, 'protocol.runs': protocol.runs },
        groups: [group],
        markdown: lines.join('\n'),
        headline: [
          `kafka-e2e ${fmt.int(n)}: bare ${fmt.int(bare.recordsPerSecond.median)} rec/s, naive ${fmt.int(naive.recordsPerSecond.median)} rec/s, streamstats ${fmt.int(ss.recordsPerSecond.median)} rec/s (first->last); ` +
            `(c)/(a) ${fmt.ratio(rBare)} [${fmt.ratio(ofBare.min)}-${fmt.ratio(ofBare.max)}], (c)/(b) ${fmt.ratio(rNaive)} [${fmt.ratio(ofNaive.min)}-${fmt.ratio(ofNaive.max)}]; ` +
            `start->last (c)/(a) ${fmt.ratio(rBareStart)}, (c)/(b) ${fmt.ratio(rNaiveStart)}`,
        ],
      };
    } finally {
      scratch.remove();
      rmSync(profDir, { recursive: true, force: true });
      await deleteTopic(topic);
    }
  },
};
