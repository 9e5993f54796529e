// Scenario 5: end to end on the local Kafka broker. A topic of N seed-000 Monasca points (4 partitions),
// loaded once per bench run with streamstats-produce, is read from the beginning, each run in a fresh
// child process with a fresh consumer group, by
//   (a) a bare kafkajs consumer (counts messages, resolves offsets): the client library's ceiling;
//   (b) a naive kafkajs consumer: JSON.parse + a Map of (series, 60 s window) -> count/sum/min/max;
//   (c) streamstats (SOURCE=kafka, defaults otherwise): done when /metrics shows N records applied.
// and, with a statistics sink that is not /dev/null, against the Kafka Streams peer (bench/kstreams):
//   (d) streamstats SINK=kafka, (e) the same with EXACTLY_ONCE=true, (f) the peer at_least_once,
//   (g) the peer exactly_once_v2, (h) streamstats SINK=postgres://... (a fresh schema per run);
//   these are done when every row is in the output (the output topic's end, read_committed, stops
//   at the expected rows; the PostgreSQL transactions are committed), and (c) is timed that way too.
// After the N points, every partition gets WATERMARK_CONFIRM_RECORDS "flush" points an hour later in
// event time, so that every workload window closes in both engines (the peer's suppress emits a window
// only once stream time passes its end + grace) and the expected rows are known: one per (series,
// window). The load is given its GEN_START (loadWorkload), so the replay that places the flush points
// and counts the rows has the topic's event times, and every run checks that each engine took every
// record and flush point on time.
// Every run is timed on the parent's clock, from spawn to the last message processed, and from the
// first message seen to the last (which leaves out the group join). The scenario also exports the
// helpers that scenario 6 (sustained.ts) uses: broker checks, topics, an engine process with /metrics.
import { sleep } from '../../src/async/index.js';
import { WINDOW_STORE_DEFAULTS } from '../../src/windows/store.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import kafkajs from 'kafkajs';
import { parseConfig } from '../../src/config/index.js';
import { TABLES } from '../../src/sinks/postgres/schema.js';
import { generatePoints } from '../../src/sources/generator.js';
import { PATHS, scratchDir } from '../lib/child.js';
import { buildPeer, internalTopics, startPeer, type PeerGuarantee } from '../lib/kstreams.js';
import { alternate, type Sample, type Variant, type VariantResult } from '../lib/measure.js';
import { createPgSchema, dropPgSchema, PG_URL, pgProblem, pgTableStats, TopicEnd } from '../lib/outputs.js';
import { PgCostProbe, pgCostPerRow, withAppName } from '../lib/pg-cost.js';
import { THREAD_KINDS, threadCpu, threadCpuBetween, type ThreadCpu } from '../lib/proc-threads.js';
import { ROOT, variant, type Scenario } from '../lib/scenario.js';
import { fmt, summarize, type Summary } from '../lib/stats.js';
import type { ConsumeDone, ConsumeVariant } from '../child/kafka-consume.js';
import { metricMax, metricSum, parseMetrics, type Metrics } from '../../test/fixtures/metrics.js';
import { createTopicOn, deleteTopicsOn, kafkaClient, uid } from '../../test/fixtures/topics.js';
import { spawnCli } from '../../test/fixtures/engine-process.js';

export const BROKERS = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const PRODUCE = join(ROOT, 'dist', 'src', 'tools', 'produce.js');
/** Prints each thread's CPU seconds at exit: an engine run's CPU per record and per row. */
const THREAD_CPU_PRELOAD = new URL('../lib/thread-cpu-preload.js', import.meta.url).href;
/** /metrics is polled this often while the engine runs, for PROGRESS_FAMILIES only (see startEngine). */
const POLL_MS = 50;
/**
 * What a progress poll reads. A whole scrape cost the engine 2-4 ms of its main thread and, on Kafka,
 * a high-watermark round trip to the broker (the lag is computed at scrape time): at 50 ms polls that
 * was charged to the main thread's CPU per record the scenarios report.
 */
export const PROGRESS_FAMILIES = ['streamstats_records_total', 'streamstats_messages_total', 'streamstats_windows_emitted_total', 'streamstats_pool_threads'] as const;
const TARGETS = { ofBare: 0.9, ofNaive: 1.3 };
/** Streamstats against the Kafka Streams peer, the sinks against /dev/null, and the Kafka sink's CPU per row. */
const SINK_TARGETS = { kafkaOfPeer: 2.5, eosOfPeerEos: 2, kafkaOfDevNull: 0.7, pgOfDevNull: 0.5, kafkaCpuUsPerRow: 2 };
/** An output is complete when its end reached the expected rows and has not moved for this long. */
const SETTLE_MS = 1000;
const PARTITIONS = 4;
/** The flush points' series (one per partition), not part of the workload. */
const FLUSH_NAME = 'streamstats.bench.flush';

export { uid };

export function kafkaAdmin(): kafkajs.Admin {
  return kafkaClient(BROKERS.split(','), 'streamstats-bench').admin();
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

/** Deletes our topics (and, for a Kafka Streams application id, its internal topics). */
async function deleteTopics(topics: readonly string[], applicationId?: string): Promise<void> {
  const admin = kafkaAdmin();
  try {
    await admin.connect();
    const all = applicationId === undefined ? [] : internalTopics(await admin.listTopics(), applicationId);
    const mine = [...topics, ...all];
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
  } catch {
    // Best effort, as deleteTopic.
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

export async function createTopic(topic: string, partitions: number): Promise<void> {
  await createTopicOn(BROKERS.split(','), topic, partitions);
}

export async function deleteTopic(topic: string): Promise<void> {
  await deleteTopicsOn(BROKERS.split(','), [topic]);
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

/** The flush points lie this far after the workload's last point in event time (past every workload window's end + grace). */
const FLUSH_AFTER_MS = 3_600_000;
/** The workload and its flush points end at least this long before the load starts (none is in the future). */
const PAST_MARGIN_MS = 60_000;
const DAY_MS = 86_400_000;

/** The topic a scenario reads: seed-000 points on a timeline the scenario chose, then the flush points. */
export interface Workload {
  readonly loadSeconds: number;
  /** GEN_START given to streamstats-produce. */
  readonly startMs: number;
  readonly maxTsMs: number;
  /** The rows both engines must write: one per (series, 60 s window) of the workload. */
  readonly rows: number;
  readonly flushMs: number;
  /** Records after the workload's: their windows stay open, so they write no row. */
  readonly flushPoints: number;
}

/** What a run must account for: its rows, and the flush points it must apply after the workload's records. */
export type WorkloadRows = Pick<Workload, 'rows' | 'flushPoints'>;

/** The generator's settings for the workload: seed 000, the defaults, GEN_COUNT=count, the first round at startMs. */
function workloadGenerator(count: number, startMs: number): ReturnType<typeof parseConfig>['generator'] {
  return { ...parseConfig({ SOURCE: 'kafka', KAFKA_BROKERS: BROKERS, KAFKA_TOPICS: 'workload', GEN_COUNT: String(count) }).generator, startMs };
}

/**
 * Where the workload starts: the built-in generator's fixed GEN_START moved on by whole days, so the
 * (series, 60 s window) cells, and the hours of PostgreSQL's rollups, are those of the fixed timeline
 * in every run, and as late as lets the workload and its flush points end before now (no point in the
 * future, every output record's timestamp within the topics' retention). Left to itself,
 * streamstats-produce ends an empty topic's timeline now, which a replay on GEN_START's default does
 * not know: its flush points lay years behind the workload, late in both engines.
 */
export function workloadStart(count: number, nowMs: number): number {
  const gen = workloadGenerator(count, 0);
  const rounds = Math.max(1, Math.ceil(count / (gen.metrics * gen.hosts)));
  const fixed = parseConfig({ SOURCE: 'kafka', KAFKA_BROKERS: BROKERS, KAFKA_TOPICS: 'workload' }).generator.startMs;
  // generatePoints jitters a point up to min(1000, interval) ms after its round's time.
  const lastMs = fixed + (rounds - 1) * gen.intervalMs + Math.min(1000, gen.intervalMs);
  return fixed + Math.floor((nowMs - PAST_MARGIN_MS - FLUSH_AFTER_MS - lastMs) / DAY_MS) * DAY_MS;
}

/**
 * Loads the topic with `node dist/src/tools/produce.js`, as a user would, with GEN_START set: the
 * event times its closing line reports come back, to be checked against the replay.
 */
export async function loadTopic(topic: string, count: number, partitions: number, startMs: number): Promise<{ seconds: number; firstMs: number; lastMs: number }> {
  const t0 = performance.now();
  const err = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, [PRODUCE], {
      env: {
        PATH: process.env.PATH, HOME: process.env.HOME, KAFKA_BROKERS: BROKERS, KAFKA_TOPICS: topic, GEN_COUNT: String(count), GEN_START: new Date(startMs).toISOString(),
        PRODUCE_PARTITIONS: String(partitions), LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let text = '';
    child.stderr.on('data', (d: Buffer) => (text += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`streamstats-produce exited with ${code}: ${text.slice(-1000)}`))));
  });
  const seconds = (performance.now() - t0) / 1000;
  const times = /event times (\S+) \.\. (\S+)/.exec(err);
  if (times === null) throw new Error(`streamstats-produce did not report its event times: ${err.slice(-1000)}`);
  return { seconds, firstMs: Date.parse(times[1]!), lastMs: Date.parse(times[2]!) };
}

/**
 * The workload streamstats-produce writes from startMs, replayed here: the number of (series, 60 s
 * window) cells, i.e. the rows both engines must write, and the smallest and largest event time.
 */
export function workloadCells(count: number, startMs: number): { rows: number; minTsMs: number; maxTsMs: number } {
  const cells = new Set<string>();
  let minTsMs = Infinity;
  let maxTsMs = -Infinity;
  for (const p of generatePoints(workloadGenerator(count, startMs))) {
    cells.add(`${p.name}|${p.host}|${Math.floor(p.timestamp / 60_000)}`);
    if (p.timestamp < minTsMs) minTsMs = p.timestamp;
    if (p.timestamp > maxTsMs) maxTsMs = p.timestamp;
  }
  return { rows: cells.size, minTsMs, maxTsMs };
}

/**
 * Monasca points per partition from tsMs on, in a series of their own: as many as streamstats' watermark
 * needs to confirm a jump (WATERMARK_CONFIRM_RECORDS), so they close every earlier window in both engines.
 */
export async function appendFlushPoints(topic: string, partitions: number, tsMs: number): Promise<number> {
  const producer = kafkaClient(BROKERS.split(','), 'streamstats-bench').producer();
  const count = partitions * WINDOW_STORE_DEFAULTS.confirmRecords;
  await producer.connect();
  try {
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: count }, (_, i) => ({
        partition: i % partitions,
        key: `${FLUSH_NAME}|${i % partitions}`,
        value: JSON.stringify({ metric: { name: FLUSH_NAME, dimensions: { hostname: `flush_${i % partitions}` }, timestamp: tsMs + Math.floor(i / partitions), value: 0 }, meta: { tenantId: 'bench', region: 'RegionOne' } }),
      })),
    });
  } finally {
    await producer.disconnect();
  }
  return count;
}

/**
 * The workload into the topic, then the flush points an hour after its last point, every one in the
 * past. Fails when the event times streamstats-produce wrote are not the replay's (the expected rows
 * and the flush points would be wrong) or the topic does not hold exactly the records sent.
 */
export async function loadWorkload(topic: string, count: number, partitions: number): Promise<Workload> {
  const startMs = workloadStart(count, Date.now());
  const load = await loadTopic(topic, count, partitions, startMs);
  const cells = workloadCells(count, startMs);
  if (load.firstMs !== cells.minTsMs || load.lastMs !== cells.maxTsMs) {
    const iso = (ms: number): string => new Date(ms).toISOString();
    throw new Error(`streamstats-produce wrote event times ${iso(load.firstMs)} .. ${iso(load.lastMs)} into ${topic}, the replay has ${iso(cells.minTsMs)} .. ${iso(cells.maxTsMs)}: the expected rows and the flush points would be wrong`);
  }
  const flushMs = cells.maxTsMs + FLUSH_AFTER_MS;
  const flushPoints = await appendFlushPoints(topic, partitions, flushMs);
  const stored = await messagesIn(topic);
  if (stored !== count + flushPoints) throw new Error(`topic ${topic} holds ${stored} messages, expected ${count} + ${flushPoints} flush points`);
  return { loadSeconds: load.seconds, startMs, maxTsMs: cells.maxTsMs, rows: cells.rows, flushMs, flushPoints };
}

export { metricMax, metricSum, type Metrics };

/** A `node dist/src/cli.js` child with its metrics port, for runs that end on SIGTERM. */
export interface EngineProcess {
  readonly child: ChildProcess;
  readonly spawnedAt: number;
  readonly port: Promise<number>;
  /** The whole exposition, or the families named (`/metrics?name=`). */
  scrape(names?: readonly string[]): Promise<Metrics>;
  ready(): Promise<boolean>;
  /** SIGTERM and wait: exit code, the peak RSS and the CPU seconds of all threads from the preloads, the stderr tail. */
  stop(): Promise<{ code: number | null; maxRssBytes: number; cpuSeconds: number; stderrTail: string }>;
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
  let maxRssBytes = NaN;
  let cpuSeconds = NaN;
  const { child, port: listening, stderr, closed } = spawnCli(env, {
    nodeArgs: ['--import', PATHS.preload, '--import', THREAD_CPU_PRELOAD],
    onLine: (line) => {
      if (line.startsWith('{"bench":"maxrss"')) maxRssBytes = (JSON.parse(line) as { maxRssBytes: number }).maxRssBytes;
      if (line.startsWith('{"bench":"threads"')) cpuSeconds = Object.values((JSON.parse(line) as { threads: Record<string, number> }).threads).reduce((a, b) => a + b, 0);
    },
  });
  const tail = () => stderr().slice(-4000);
  const port = Promise.race([listening, closed.then((code) => Promise.reject(new Error(`streamstats exited with ${code} before listening:\n${tail()}`)))]);
  port.catch(() => {});
  const get = async (path: string): Promise<Response> => fetch(`http://127.0.0.1:${await port}${path}`);
  return {
    child,
    spawnedAt,
    port,
    scrape: async (names) => parseMetrics(await (await get(names === undefined ? '/metrics' : `/metrics?${names.map((n) => `name=${n}`).join('&')}`)).text()),
    ready: async () => (await get('/readyz')).status === 200,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await closed;
      return { code, maxRssBytes, cpuSeconds, stderrTail: tail() };
    },
  };
}


interface E2eRun {
  /** Spawn to the last message processed (sink variants: to the last row in the output). */
  readonly startToLast: number;
  /** First message seen to the last (sink variants: to the last row in the output). */
  readonly firstToLast: number;
  readonly maxRssBytes: number;
  /** Scenario-specific numbers for the sample. */
  readonly extra?: Readonly<Record<string, number>>;
}

const toSample = (n: number, r: E2eRun): Sample => ({
  recordsPerSecond: n / r.firstToLast,
  elapsedSeconds: r.firstToLast,
  peakRssBytes: r.maxRssBytes,
  extra: { startToLastSeconds: r.startToLast, firstToLastSeconds: r.firstToLast, recordsPerSecondFromStart: n / r.startToLast, ...r.extra },
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

/** Where a streamstats run's rows go and how the run knows they are all there. */
interface EngineOutput {
  /** Rows the run must write: every (series, window) of the workload. */
  readonly rows: number;
  /** Records after the n of the workload, every one to be applied (on time, so they move the watermark). */
  readonly flushPoints: number;
  /** Observe this output topic's end (the same observer as the peer's); else windows_emitted_total. */
  readonly topic?: string;
}

/**
 * Every record of the topic applied, none late or refused; fails with the counts by result otherwise.
 * A flush point dead-lettered as late would leave the last windows to the idle flush
 * (IDLE_FLUSH_SECONDS after the last record) inside the timed span, or the rows short.
 */
function accountFor(ms: Metrics, n: number, flushPoints: number, vars: Readonly<Record<string, string>>): void {
  const ok = metricSum(ms, 'streamstats_records_total', { result: 'ok' });
  if (ok === n + flushPoints && metricSum(ms, 'streamstats_records_total') === ok) return;
  const results = (ms.get('streamstats_records_total') ?? []).filter((m) => m.value > 0).map((m) => `${m.labels.result ?? '?'}=${m.value}`).join(', ');
  throw new Error(`streamstats applied ${ok} of ${n} records + ${flushPoints} flush points (records_total: ${results}): the rows would not be the workload's (${JSON.stringify(vars)})`);
}

/**
 * Variants (c), (d), (e), (h): streamstats. "last" is when streamstats_records_total{result="ok"}
 * reaches N; "rows out" is when every expected row is in the output: the output topic's end settled
 * at the expected rows or more, or (file and PostgreSQL sinks) streamstats_windows_emitted_total, which
 * counts rows after the sink's write resolved (for PostgreSQL: after the transaction committed).
 */
export async function runEngine(
  topic: string,
  n: number,
  dir: string,
  vars: Readonly<Record<string, string>>,
  output: EngineOutput,
): Promise<E2eRun & { threads: number; rows: number; startToRows: number; firstToRows: number; outputEnd: number; cpuSeconds: number; streamCpu: ThreadCpu }> {
  const e = startEngine({ KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('ss-bench-g'), SINK: 'file:/dev/null', ...vars }, dir);
  const admin = output.topic === undefined ? null : kafkaAdmin();
  try {
    await admin?.connect();
    const end = admin === null ? null : new TopicEnd(admin, output.topic!);
    await e.port;
    let first = NaN;
    let last = NaN;
    let rowsAt = NaN;
    let threads = NaN;
    // Each kind of thread's CPU from the first message to the last row out (proc-threads.ts).
    let cpuAtFirst: ThreadCpu = {};
    const deadline = performance.now() + 900_000;
    for (;;) {
      const ms = await e.scrape(PROGRESS_FAMILIES);
      const now = performance.now();
      if (metricSum(ms, 'streamstats_records_total') >= n + output.flushPoints) accountFor(ms, n, output.flushPoints, vars);
      if (Number.isNaN(first) && metricSum(ms, 'streamstats_messages_total') > 0) {
        first = now;
        cpuAtFirst = threadCpu(e.child.pid);
      }
      if (Number.isNaN(last) && metricSum(ms, 'streamstats_records_total', { result: 'ok' }) >= n + output.flushPoints) {
        last = now;
        threads = metricSum(ms, 'streamstats_pool_threads');
      }
      if (Number.isNaN(rowsAt)) {
        if (end !== null) {
          await end.sample();
          if (end.settled(output.rows, SETTLE_MS)) rowsAt = end.since;
        } else if (metricSum(ms, 'streamstats_windows_emitted_total') >= output.rows) rowsAt = now;
      }
      if (!Number.isNaN(last) && !Number.isNaN(rowsAt)) break;
      if (now > deadline) throw new Error(`streamstats did not apply ${n} records and write ${output.rows} rows within 900 s (${JSON.stringify(vars)})`);
      if (e.child.exitCode !== null) throw new Error('streamstats exited before applying every record');
      await sleep(POLL_MS);
    }
    const streamCpu = threadCpuBetween(cpuAtFirst, threadCpu(e.child.pid));
    const final = await e.scrape();
    const rows = metricSum(final, 'streamstats_windows_emitted_total');
    accountFor(final, n, output.flushPoints, vars);
    const s = await e.stop();
    if (s.code !== 0) throw new Error(`streamstats exited with ${s.code} after SIGTERM:\n${s.stderrTail}`);
    return {
      startToLast: (last - e.spawnedAt) / 1000,
      firstToLast: (last - first) / 1000,
      maxRssBytes: s.maxRssBytes,
      threads,
      rows,
      startToRows: (rowsAt - e.spawnedAt) / 1000,
      firstToRows: (rowsAt - first) / 1000,
      outputEnd: end?.value ?? rows,
      cpuSeconds: s.cpuSeconds,
      streamCpu,
    };
  } finally {
    if (e.child.exitCode === null) e.child.kill('SIGKILL');
    await admin?.disconnect().catch(() => {});
  }
}

/** us of CPU per input record by kind of thread, first message to last row (`stream<Kind>UsPerRecord`, `streamAllUsPerRecord`). */
export function streamCpuExtra(n: number, cpu: ThreadCpu): Record<string, number> {
  const out: Record<string, number> = {};
  let all = 0;
  for (const v of Object.values(cpu)) all += v;
  for (const [k, name] of Object.entries(THREAD_KINDS)) out[`stream${k[0]!.toUpperCase()}${k.slice(1)}UsPerRecord`] = ((cpu[name] ?? 0) * 1e6) / n;
  out['streamAllUsPerRecord'] = (all * 1e6) / n;
  return out;
}

/** The whole process's CPU (every thread, start to exit) per input record and per row written. */
function cpuPerRow(r: { cpuSeconds: number; rows: number }): Record<string, number> {
  return { cpuSeconds: r.cpuSeconds, cpuUsPerRow: (r.cpuSeconds * 1e6) / r.rows };
}

/** A streamstats sink variant as a sample: "last" is the last row out. */
export function sinkSample(n: number, r: Awaited<ReturnType<typeof runEngine>>, extra: Readonly<Record<string, number>> = {}): Sample {
  return toSample(n, {
    startToLast: r.startToRows,
    firstToLast: r.firstToRows,
    maxRssBytes: r.maxRssBytes,
    extra: { firstToRowsSeconds: r.firstToRows, recordsAppliedSeconds: r.firstToLast, outputEnd: r.outputEnd, ...cpuPerRow(r), ...extra },
  });
}

/** Variant (d)/(e): streamstats to a fresh output topic (deleted after the run). */
export async function runEngineToKafka(topic: string, n: number, dir: string, w: WorkloadRows, exactlyOnce: boolean, vars: Readonly<Record<string, string>> = {}): Promise<Sample> {
  const out = uid('ss-bench-out');
  await createTopic(out, PARTITIONS);
  try {
    const r = await runEngine(topic, n, dir, { SINK: 'kafka', OUTPUT_TOPIC: out, ...(exactlyOnce ? { EXACTLY_ONCE: 'true' } : {}), ...vars }, { rows: w.rows, flushPoints: w.flushPoints, topic: out });
    return sinkSample(n, r, streamCpuExtra(n, r.streamCpu));
  } finally {
    await deleteTopics([out]);
  }
}

/**
 * Variant (h): streamstats to PostgreSQL in a fresh schema (dropped after the run); bytes per stored
 * row, and per row: the engine's CPU, its server backends' CPU and the WAL (bench/lib/pg-cost.ts).
 */
export async function runEngineToPostgres(topic: string, n: number, dir: string, w: WorkloadRows, vars: Readonly<Record<string, string>> = {}): Promise<Sample> {
  const { schema, url } = await createPgSchema('ss_bench_e2e');
  try {
    const probe = await PgCostProbe.start(PG_URL, schema, { clientParent: process.pid });
    const r = await runEngine(topic, n, dir, { SINK: withAppName(url, schema), ...vars }, { rows: w.rows, flushPoints: w.flushPoints });
    const cost = await probe.stop();
    const stored = await pgTableStats(schema, TABLES.statistics, [TABLES.windows, TABLES.series, TABLES.rollups]);
    if (stored.rows < w.rows) throw new Error(`kafka-e2e: ${stored.rows} rows in ${schema}.${TABLES.statistics}, expected ${w.rows}`);
    return sinkSample(n, r, {
      ...streamCpuExtra(n, r.streamCpu),
      storedRows: stored.rows, tableBytes: stored.totalBytes, bytesPerRow: stored.totalBytes / stored.rows, ...pgCostPerRow(cost, stored.rows),
    });
  } finally {
    await dropPgSchema(schema);
  }
}

/**
 * Variants (f)/(g): the Kafka Streams peer (fresh application id, state dir, output topic; all removed
 * after the run). "first" is its RUNNING state (group joined, tasks assigned, nothing restored: the
 * first fetch follows), "last" is the output topic's end settling at the expected rows or more, read
 * by the same observer as (d)/(e).
 */
async function runPeer(topic: string, n: number, w: WorkloadRows, guarantee: PeerGuarantee): Promise<Sample> {
  const rows = w.rows;
  const out = uid('ss-bench-out');
  const applicationId = uid('ss-bench-ks');
  const stateDir = mkdtempSync(join(tmpdir(), 'streamstats-bench-kstreams-'));
  await createTopic(out, PARTITIONS);
  const admin = kafkaAdmin();
  const peer = startPeer({ brokers: BROKERS, inputTopic: topic, outputTopic: out, applicationId, guarantee, stateDir });
  try {
    await admin.connect();
    const end = new TopicEnd(admin, out);
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      peer.running,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`kstreams peer (${guarantee}) not RUNNING after 180 s`)), 180_000))),
    ]).finally(() => clearTimeout(timer));
    const deadline = performance.now() + 900_000;
    for (;;) {
      await end.sample();
      if (end.settled(rows, SETTLE_MS)) break;
      if (performance.now() > deadline) throw new Error(`kstreams peer (${guarantee}) did not write ${rows} rows within 900 s (${end.value} so far)`);
      if (peer.child.exitCode !== null) throw new Error(`kstreams peer (${guarantee}) exited early:\n${(await peer.stop()).stderrTail}`);
      await sleep(POLL_MS);
    }
    const last = end.since;
    const s = await peer.stop();
    if (s.code !== 0 || s.stopped === null) throw new Error(`kstreams peer (${guarantee}) exited with ${s.code} after SIGTERM:\n${s.stderrTail}`);
    if (s.stopped.droppedRecords > 0 || s.stopped.rejected > 0) {
      throw new Error(`kstreams peer (${guarantee}) dropped ${s.stopped.droppedRecords} and rejected ${s.stopped.rejected} records: the rows would differ from streamstats'`);
    }
    // At least once may parse a record twice after a rebalance, never fewer than the topic holds.
    if (s.stopped.parsed < n + w.flushPoints) throw new Error(`kstreams peer (${guarantee}) parsed ${s.stopped.parsed} records of ${n} + ${w.flushPoints} flush points`);
    return toSample(n, {
      startToLast: (last - peer.spawnedAt) / 1000,
      firstToLast: (last - first) / 1000,
      maxRssBytes: s.maxRssBytes,
      extra: { firstToRowsSeconds: (last - first) / 1000, outputEnd: end.value, peerRows: s.stopped.rows },
    });
  } finally {
    peer.kill();
    await peer.exited;
    await admin.disconnect().catch(() => {});
    rmSync(stateDir, { recursive: true, force: true });
    await deleteTopics([out], applicationId);
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
function roundRatios(a: VariantResult, b: VariantResult, key: 'firstToLastSeconds' | 'startToLastSeconds' | 'firstToRowsSeconds'): Summary {
  return summarize(a.samples.map((s, i) => (b.samples[i]!.extra![key]! / s.extra![key]!)));
}

export const kafkaE2eScenario: Scenario = {
  id: 'kafka-e2e',
  order: 5,
  title: 'Scenario 5: Kafka end to end (local broker), against plain kafkajs consumers and a Kafka Streams peer',
  async run(ctx) {
    const n = messagesOf(process.env.STREAMSTATS_BENCH_E2E_MESSAGES);
    const partitions = PARTITIONS;
    // Quick mode: 1 warm-up + 3 measured rounds (each round is 8 processes reading 1 M messages).
    const protocol = ctx.mode === 'quick' ? { warmup: 1, runs: Math.min(3, ctx.protocol.runs) } : ctx.protocol;
    await requireBroker();
    const pgDown = await pgProblem();
    if (pgDown !== null) throw new Error(`no PostgreSQL at ${PG_URL} (${pgDown}): variant (h) needs it (STREAMSTATS_BENCH_PG overrides the URL)`);
    ctx.log('  kafka-e2e: building the Kafka Streams peer (scripts/kstreams.sh build; cached in .cache/kstreams)');
    buildPeer();
    const topic = uid('ss-bench-e2e');
    const scratch = scratchDir('kafka-e2e');
    const profDir = mkdtempSync(join(tmpdir(), 'streamstats-bench-prof-'));
    let threads = NaN;
    let rows = NaN;
    try {
      ctx.log(`  kafka-e2e: loading ${fmt.int(n)} messages into ${topic} (${partitions} partitions) with streamstats-produce, + ${partitions * WINDOW_STORE_DEFAULTS.confirmRecords} flush points`);
      const workload = await loadWorkload(topic, n, partitions);
      const loadSeconds = workload.loadSeconds;
      const expectedRows = workload.rows;
      ctx.log(`  kafka-e2e: loaded in ${fmt.secs(loadSeconds)} s, event times from ${new Date(workload.startMs).toISOString()}, flush points at ${new Date(workload.flushMs).toISOString()}; every run must write ${fmt.int(expectedRows)} rows`);
      const variants: Variant[] = [
        { id: 'bare', label: '(a) bare kafkajs consumer (count + resolveOffset)', config: { consumer: 'kafkajs eachBatch, autoCommit off' }, run: async () => toSample(n, await runConsumer('bare', topic, n)) },
        { id: 'naive', label: '(b) naive kafkajs consumer (JSON.parse + Map aggregate)', config: { consumer: 'kafkajs eachBatch + JSON.parse + Map' }, run: async () => toSample(n, await runConsumer('naive', topic, n)) },
        {
          id: 'streamstats',
          label: '(c) streamstats (SOURCE=kafka, defaults)',
          config: { SOURCE: 'kafka', SINK: 'file:/dev/null', KAFKA_GROUP_ID: 'fresh per run' },
          run: async () => {
            const r = await runEngine(topic, n, scratch.dir, {}, workload);
            threads = r.threads;
            rows = r.rows;
            return toSample(n, { ...r, extra: { firstToRowsSeconds: r.firstToRows, startToRowsSeconds: r.startToRows, ...cpuPerRow(r), ...streamCpuExtra(n, r.streamCpu) } });
          },
        },
        {
          id: 'ss-kafka',
          label: '(d) streamstats SINK=kafka (at least once)',
          config: { SOURCE: 'kafka', SINK: 'kafka', OUTPUT_TOPIC: 'fresh per run', KAFKA_GROUP_ID: 'fresh per run' },
          run: () => runEngineToKafka(topic, n, scratch.dir, workload, false),
        },
        {
          id: 'ss-kafka-eos',
          label: '(e) streamstats SINK=kafka EXACTLY_ONCE=true',
          config: { SOURCE: 'kafka', SINK: 'kafka', EXACTLY_ONCE: 'true', OUTPUT_TOPIC: 'fresh per run', KAFKA_GROUP_ID: 'fresh per run' },
          run: () => runEngineToKafka(topic, n, scratch.dir, workload, true),
        },
        {
          id: 'peer',
          label: '(f) Kafka Streams peer, at_least_once',
          config: { app: 'bench/kstreams (kafka-streams 3.9.1)', PROCESSING_GUARANTEE: 'at_least_once', STREAM_THREADS: 2, COMMIT_INTERVAL_MS: 1000 },
          run: () => runPeer(topic, n, workload, 'at_least_once'),
        },
        {
          id: 'peer-eos',
          label: '(g) Kafka Streams peer, exactly_once_v2',
          config: { app: 'bench/kstreams (kafka-streams 3.9.1)', PROCESSING_GUARANTEE: 'exactly_once_v2', STREAM_THREADS: 2, COMMIT_INTERVAL_MS: 100 },
          run: () => runPeer(topic, n, workload, 'exactly_once_v2'),
        },
        {
          id: 'ss-postgres',
          label: '(h) streamstats SINK=postgres://...',
          config: { SOURCE: 'kafka', SINK: 'postgres://<STREAMSTATS_BENCH_PG>?options=-c search_path=<fresh schema>', KAFKA_GROUP_ID: 'fresh per run' },
          run: () => runEngineToPostgres(topic, n, scratch.dir, workload),
        },
      ];
      const results = await alternate('kafka-e2e', variants, protocol, ctx.log);
      const byId = (id: string): VariantResult => {
        const v = results.find((r) => r.id === id);
        if (v === undefined) throw new Error(`no variant ${id}`);
        return v;
      };
      const group = { id: 'kafka-e2e', title: 'Kafka end to end', variants: ['bare', 'naive', 'streamstats'].map(byId), baseline: 'bare' };
      const bare = variant(group, 'bare');
      const naive = variant(group, 'naive');
      const ss = variant(group, 'streamstats');
      // (c) again, timed to its last row out like the sink variants, as the sinks' baseline.
      const devNull: VariantResult = {
        ...ss,
        id: 'streamstats-rows',
        label: '(c) streamstats SINK=file:/dev/null, to the last row',
        recordsPerSecond: summarize(ss.samples.map((x) => n / x.extra!.firstToRowsSeconds!)),
        elapsedSeconds: ss.extra.firstToRowsSeconds!,
      };
      const sinks = { id: 'kafka-e2e-sinks', title: 'Kafka in -> statistics out: streamstats sinks and the Kafka Streams peer', variants: [devNull, ...['ss-kafka', 'ss-kafka-eos', 'peer', 'peer-eos', 'ss-postgres'].map(byId)], baseline: 'streamstats-rows' };
      const ssKafka = variant(sinks, 'ss-kafka');
      const ssEos = variant(sinks, 'ss-kafka-eos');
      const peer = variant(sinks, 'peer');
      const peerEos = variant(sinks, 'peer-eos');
      const ssPg = variant(sinks, 'ss-postgres');

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
      // Sink ratios: records/s to the last row out, first message (peer: RUNNING) -> last row.
      const rows_ = (a: VariantResult, b: VariantResult): { ratio: number; rounds: Summary } => ({
        ratio: med(b, 'firstToRowsSeconds') / med(a, 'firstToRowsSeconds'),
        rounds: roundRatios(a, b, 'firstToRowsSeconds'),
      });
      const kOfPeer = rows_(ssKafka, peer);
      const eOfPeerEos = rows_(ssEos, peerEos);
      const kOfNull = rows_(ssKafka, ss);
      const pgOfNull = rows_(ssPg, ss);
      const eOfK = rows_(ssEos, ssKafka);
      const peerEosOfPeer = rows_(peerEos, peer);
      const bytesPerRow = ssPg.extra.bytesPerRow!.median;
      const storedRows = ssPg.extra.storedRows!.median;

      const sinkRow = (r: VariantResult): string => {
        const fr = r.extra.firstToRowsSeconds!;
        const sl = r.extra.startToLastSeconds!;
        const start = r === devNull ? r.extra.startToRowsSeconds! : sl;
        return `| ${r.label} | ${fmt.int(n / fr.median)} | ${fmt.int(n / fr.max)}-${fmt.int(n / fr.min)} | ${fmt.secs(fr.median)} (${fmt.secs(fr.min)}-${fmt.secs(fr.max)}) | ` +
          `${fmt.int(n / start.median)} | ${fmt.secs(start.median)} | ${fmt.mib(r.peakRssBytes.max)} | ${cpuText(r)} |`;
      };
      // CPU per row: the whole engine process (every thread, start to exit) over the rows it wrote. A
      // sink's own cost is that less (c)'s, whose rows go to /dev/null: the same input, decoding and
      // windows, so the difference is what the sink adds per row (median of the per-round differences).
      const cpuText = (r: VariantResult): string => (r.extra.cpuUsPerRow === undefined ? '' : `${r.extra.cpuUsPerRow.median.toFixed(1)} (${r.extra.cpuUsPerRow.min.toFixed(1)}-${r.extra.cpuUsPerRow.max.toFixed(1)})`);
      const sinkCpu = (r: VariantResult): Summary => summarize(r.samples.map((x, i) => x.extra!.cpuUsPerRow! - devNull.samples[i]!.extra!.cpuUsPerRow!));
      const cpuRow = (r: VariantResult, target?: number): string => {
        const d = sinkCpu(r);
        const v = target === undefined ? '' : d.median <= target ? `met (<= ${target})` : `**not met** (target <= ${target})`;
        return `| ${r.label} | ${r.extra.cpuUsPerRow!.median.toFixed(1)} | ${d.median.toFixed(2)} | ${d.min.toFixed(2)}-${d.max.toFixed(2)} | ${v} |`;
      };
      const ratioRow = (name: string, x: { ratio: number; rounds: Summary }, target?: number): string =>
        `| ${name} | ${fmt.ratio(x.ratio)} | ${spread(x.rounds)} | ${target === undefined ? '' : verdict(x.ratio, target)} |`;

      const lines = [
        `## ${this.title}`,
        '',
        `A topic of ${fmt.int(n)} seed-000 Monasca points (1000 names x 4 hosts, ${partitions} partitions, keyed by series, no compression), loaded once for the run with ` +
          `\`KAFKA_TOPICS=<random> GEN_COUNT=${n} GEN_START=${new Date(workload.startMs).toISOString()} PRODUCE_PARTITIONS=${partitions} node dist/src/tools/produce.js\` (${fmt.secs(loadSeconds)} s) and deleted at the end ` +
          '(GEN_START: the built-in generator\'s fixed timeline moved on by whole days, to end with its flush points before now, so the windows are those of the fixed timeline and the replay that counts the rows knows them), ' +
          `followed by ${WINDOW_STORE_DEFAULTS.confirmRecords} flush points per partition an hour later in event time (below). ` +
          'Every run is a fresh child process with a fresh consumer group reading from the beginning, on the local single-node broker (same machine: the broker, and PostgreSQL for (h), share the 2 CPUs). ' +
          `${protocol.warmup} warm-up + ${protocol.runs} measured rounds, the eight variants alternated (a b c d e f g h a b ...)${ctx.mode === 'quick' ? ' (quick mode: 3 rounds instead of 5, to keep the run short)' : ''}.`,
        '',
        '- (a) `bench/child/kafka-consume.ts bare`: kafkajs `eachBatch`, counts the messages and resolves the batch\'s last offset, autoCommit off. The client library\'s ceiling on this machine.',
        '- (b) `bench/child/kafka-consume.ts naive`: the same, plus `JSON.parse` of every value and a `Map` of (name + sorted dimensions, 60 s window) -> count/sum/min/max on the main thread.',
        `- (c) \`node dist/src/cli.js\` with \`SOURCE=kafka KAFKA_TOPICS=<topic> KAFKA_GROUP_ID=<fresh> SINK=file:/dev/null\` and every other variable at its default ` +
          `(\`WORKER_THREADS=auto\` = ${threads} worker thread${threads === 1 ? '' : 's'} here; ${fmt.int(rows)} statistics rows a run, serialized to /dev/null). ` +
          `Done when \`streamstats_records_total{result="ok"}\` on /metrics reaches ${fmt.int(n)} (polled every ${POLL_MS} ms, so (c) is charged up to ${POLL_MS} ms it did not use), then SIGTERM.`,
        '- The baselines use the engine\'s fetch settings (maxWaitTimeInMs 500, maxBytesPerPartition 1 MiB, one partition at a time). ' +
          '*first->last* starts at the first message seen (the first "first" line, or the first non-zero `streamstats_messages_total`), so it leaves out process start-up and the group join; *start->last* starts at spawn.',
        '',
        e2eTable(group.variants, n),
        '',
        '| ratio (records/s) | ratio of medians, first->last | spread | ratio of medians, start->last | spread | target |',
        '|---|---:|---:|---:|---:|---|',
        `| (c) / (a) streamstats / bare kafkajs | ${fmt.ratio(rBare)} | ${spread(ofBare)} | ${fmt.ratio(rBareStart)} | ${spread(ofBareStart)} | ${verdict(rBare, TARGETS.ofBare)} |`,
        `| (c) / (b) streamstats / naive kafkajs | ${fmt.ratio(rNaive)} | ${spread(ofNaive)} | ${fmt.ratio(rNaiveStart)} | ${spread(ofNaiveStart)} | ${verdict(rNaive, TARGETS.ofNaive)} |`,
        `| (b) / (a) naive / bare | ${fmt.ratio(med(bare, 'firstToLastSeconds') / med(naive, 'firstToLastSeconds'))} | | ${fmt.ratio(med(bare, 'startToLastSeconds') / med(naive, 'startToLastSeconds'))} | | |`,
        '',
        'Per-round ratios divide the times of the same round, whose runs were adjacent; the targets are judged on the ratio of medians, first->last.',
        '',
        '### Kafka in -> statistics out: the sinks, and a Kafka Streams peer',
        '',
        `Every run must write all ${fmt.int(expectedRows)} rows of the workload, one per (series, 60 s window) (counted from the generator). ` +
          'Kafka Streams\' suppress emits a window only once stream time passes its end + grace, and streamstats\' watermark closes windows the same way, ' +
          `so the ${partitions * WINDOW_STORE_DEFAULTS.confirmRecords} flush points (series \`${FLUSH_NAME}\`, ${WINDOW_STORE_DEFAULTS.confirmRecords} per partition, as many as the watermark needs to confirm a jump (WATERMARK_CONFIRM_RECORDS), an hour after the workload in event time) close every workload window in both; their own windows stay open. ` +
          'A run is timed from its first message (the peer: its RUNNING state, when its tasks are assigned and the first fetch follows) to its last row out:',
        '',
        '- (c) as above, to the last row handed to the sink: `streamstats_windows_emitted_total` (counted after the sink\'s write resolved) reaches the expected rows.',
        '- (d) `SINK=kafka OUTPUT_TOPIC=<fresh, 4 partitions>`, (e) the same with `EXACTLY_ONCE=true`; other variables at their defaults.',
        '- (f)/(g) `bench/kstreams` (`scripts/kstreams.sh run`): Kafka Streams 3.9.1, input keyed by series as produced (so no repartition topic: stream time is per input partition, like streamstats\' watermark), ' +
          'a 60 s tumbling window with 5 s grace (= `ALLOWED_LATENESS_SECONDS`), count/sum/min/max/sum of squares/first and last event time per streamstats series key, ' +
          '`suppress(untilWindowCloses(unbounded()))`, one JSON row per closed window with streamstats\' row fields and message key; 2 stream threads, RocksDB window store (default), ' +
          'record cache 10 MiB (default), JSON parsed once with Jackson in the value deserializer, event time from the parsed value. ' +
          '`commit.interval.ms` is 1000 at least once (the cache forwards window updates to suppress at commit, so Kafka Streams\' 30 s default would hold the last rows back up to 30 s) and 100 (the default) for exactly_once_v2. JVM `-Xms256m -Xmx1g`.',
        `- (d)-(g) are done when the output topic's end offsets (listed read_committed: for transactions, the last stable offset, which also counts one commit marker per partition and transaction) reach the expected rows and then do not move for ${SETTLE_MS} ms; the time is that of the first sample (every ${POLL_MS} ms) that saw the final value.`,
        `- (h) \`SINK=postgres://...?options=-c search_path=<fresh schema>\` (a new schema per run, dropped after): done when \`streamstats_windows_emitted_total\` reaches the expected rows (rows and positions commit in one transaction per emission). ` +
          `Then \`count(*)\` of the \`${TABLES.statistics}\` view and \`pg_total_relation_size\` of \`${TABLES.windows}\` + \`${TABLES.series}\` + \`${TABLES.rollups}\` (heap, indexes, TOAST): **${fmt.int(bytesPerRow)} bytes per stored row** (median; ${fmt.int(storedRows)} rows). ` +
          `Per stored row (medians; \`bench/lib/pg-cost.ts\`): the engine process's CPU ${ssPg.extra.clientCpuUsPerRow!.median.toFixed(1)} us (main thread ${ssPg.extra.clientMainCpuUsPerRow!.median.toFixed(1)}), ` +
          `the PostgreSQL backends' CPU ${ssPg.extra.serverCpuUsPerRow!.median.toFixed(1)} us (\`/proc/<backend pid>/stat\` of the sink's connections), WAL ${fmt.int(ssPg.extra.walBytesPerRow!.median)} bytes (\`pg_current_wal_lsn()\` difference).`,
        '',
        '| variant | records/s, first->last row (median) | range | first->last row s, median (min-max) | records/s, start->last row (median) | start->last row s, median | peak RSS MiB (max) | CPU us per row, whole process, median (min-max) |',
        '|---|---:|---:|---:|---:|---:|---:|---:|',
        ...sinks.variants.map(sinkRow),
        '',
        `CPU per row: every thread of the engine process from start to exit (\`bench/lib/thread-cpu-preload.ts\`), over the ${fmt.int(expectedRows)} rows; the sink's own is that less (c)'s in the same round (same input, decoding and windows, rows to /dev/null).`,
        '',
        '| sink | CPU us per row, whole process (median) | the sink\'s CPU us per row: less (c)\'s (median of rounds) | per-round range | target |',
        '|---|---:|---:|---:|---|',
        cpuRow(ssKafka, SINK_TARGETS.kafkaCpuUsPerRow),
        cpuRow(ssEos, SINK_TARGETS.kafkaCpuUsPerRow),
        cpuRow(ssPg),
        '',
        '| ratio (records/s to the last row) | ratio of medians | spread | target |',
        '|---|---:|---:|---|',
        ratioRow('(d) / (f) streamstats Kafka->Kafka / peer at_least_once', kOfPeer, SINK_TARGETS.kafkaOfPeer),
        ratioRow('(e) / (g) streamstats EXACTLY_ONCE / peer exactly_once_v2', eOfPeerEos, SINK_TARGETS.eosOfPeerEos),
        ratioRow('(d) / (c) Kafka->Kafka / Kafka->/dev/null', kOfNull, SINK_TARGETS.kafkaOfDevNull),
        ratioRow('(h) / (c) Kafka->PostgreSQL / Kafka->/dev/null', pgOfNull, SINK_TARGETS.pgOfDevNull),
        ratioRow('(e) / (d) streamstats exactly once / at least once', eOfK),
        ratioRow('(g) / (f) peer exactly_once_v2 / at_least_once', peerEosOfPeer),
        '',
        'The peer\'s rows equal streamstats\' (same keys, counts, min, max, sums and stddev within 1e-9 relative): `test/integration/kstreams-peer.test.ts` checks it on 20,000 points for both guarantees.',
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
        config: {
          topic: 'random, deleted after',
          messages: n,
          flushPoints: workload.flushPoints,
          genStart: new Date(workload.startMs).toISOString(),
          flushAt: new Date(workload.flushMs).toISOString(),
          expectedRows,
          partitions,
          brokers: BROKERS,
          pollMs: POLL_MS,
          settleMs: SETTLE_MS,
          loadSeconds,
          workerThreads: threads,
          'protocol.warmup': protocol.warmup,
          'protocol.runs': protocol.runs,
        },
        groups: [group, sinks],
        markdown: lines.join('\n'),
        headline: [
          `kafka-e2e ${fmt.int(n)}: bare ${fmt.int(bare.recordsPerSecond.median)} rec/s, naive ${fmt.int(naive.recordsPerSecond.median)} rec/s, streamstats ${fmt.int(ss.recordsPerSecond.median)} rec/s (first->last); ` +
            `(c)/(a) ${fmt.ratio(rBare)} [${fmt.ratio(ofBare.min)}-${fmt.ratio(ofBare.max)}], (c)/(b) ${fmt.ratio(rNaive)} [${fmt.ratio(ofNaive.min)}-${fmt.ratio(ofNaive.max)}]; ` +
            `start->last (c)/(a) ${fmt.ratio(rBareStart)}, (c)/(b) ${fmt.ratio(rNaiveStart)}`,
          `kafka-e2e sinks (to the last row): /dev/null ${fmt.int(devNull.recordsPerSecond.median)}, Kafka ${fmt.int(ssKafka.recordsPerSecond.median)}, EOS ${fmt.int(ssEos.recordsPerSecond.median)}, ` +
            `PostgreSQL ${fmt.int(ssPg.recordsPerSecond.median)} (${fmt.int(bytesPerRow)} B/row), peer ${fmt.int(peer.recordsPerSecond.median)}, peer EOS ${fmt.int(peerEos.recordsPerSecond.median)} rec/s; ` +
            `(d)/(f) ${fmt.ratio(kOfPeer.ratio)}, (e)/(g) ${fmt.ratio(eOfPeerEos.ratio)}, (d)/(c) ${fmt.ratio(kOfNull.ratio)}, (h)/(c) ${fmt.ratio(pgOfNull.ratio)}; ` +
            `sink CPU us per row: Kafka ${sinkCpu(ssKafka).median.toFixed(2)}, EOS ${sinkCpu(ssEos).median.toFixed(2)}, PostgreSQL ${sinkCpu(ssPg).median.toFixed(2)}`,
        ],
      };
    } finally {
      scratch.remove();
      rmSync(profDir, { recursive: true, force: true });
      await deleteTopic(topic);
    }
  },
};

/** STREAMSTATS_BENCH_E2E_MESSAGES: a smaller topic while developing (default 1,000,000). */
function messagesOf(text: string | undefined): number {
  if (text === undefined || text === '') return 1_000_000;
  const v = Number(text);
  if (!Number.isInteger(v) || v < 8000) throw new RangeError(`STREAMSTATS_BENCH_E2E_MESSAGES (${text}) must be an integer >= 8000`);
  return v;
}
