// Environment (or equal CLI flags) -> validated Config. A wrong value is one line naming the
// variable, the value and what is allowed. The options and their types are the table in options.ts;
// each component's options are parsed in a file of their own (io, format, kafka).
import { RecordError, checkText, parseIsoTimestamp } from '../core/record.js';
import { detectCpus, defaultThreads, type CpuInfo } from './cpus.js';
import { parseApiConfig, type ApiConfig } from '../api/config.js';
import { parseFormat } from './format.js';
import { parseDeadLetter, parseSink, parseSource, type DeadLetterSpec, type SinkSpec, type SourceSpec } from './io.js';
import { parseKafka, type KafkaConfig } from './kafka.js';
import { parseRedisConfig, type RedisConfig } from '../sources/redis/config.js';
import type { OptionName } from './options.js';
import { Reader, type Env } from './reader.js';
import type { FormatSpec } from '../core/formats/index.js';

export { argvToEnv, helpText, unknownVariables, unknownVariablesWarning } from './argv.js';
export type { DeadLetterSpec, OutputCompression, SinkSpec, SourceSpec } from './io.js';
export type { KafkaConfig } from './kafka.js';
export type { Env } from './reader.js';
export { configSecrets, redactDeep, redactedConfig } from './secrets.js';

export interface GeneratorConfig {
  count: number;
  metrics: number;
  hosts: number;
  intervalMs: number;
  startMs: number;
  seed: number;
  rate: number;
}

export interface Config {
  source: SourceSpec;
  sink: SinkSpec;
  deadLetter: DeadLetterSpec;
  format: FormatSpec;
  groupBy: string[] | null;
  windowSeconds: number;
  allowedLatenessSeconds: number;
  /** LATE_RECORDS with `auto` resolved for the sink. */
  lateRecords: 'dead-letter' | 'amend';
  amendHorizonSeconds: number;
  watermarkConfirmRecords: number;
  /** Percentiles (0..100) to report per window; empty = no sketches. */
  percentiles: number[];
  percentileAccuracy: number;
  maxSeries: number;
  maxStateMb: number;
  maxDimensions: number;
  maxMessageBytes: number;
  maxNameBytes: number;
  maxDimensionBytes: number;
  maxSeriesKeyBytes: number;
  maxFutureSeconds: number;
  workerThreads: number;
  /** Where the lanes' window state lives (LANE_STATE): the main thread, or the worker that owns each lane. */
  laneState: 'main' | 'worker';
  /** Why laneState is what it is (LANE_STATE=auto chose, or was set), for the start-up log. */
  laneStateReason: string;
  /** Why this thread count: logged at start. */
  workerThreadsReason: string;
  batchSize: number;
  batchMaxBytes: number;
  /** Why batchSize and batchMaxBytes are what they are (auto chose them by source, or they were set), for the start-up log. */
  batchReason: string;
  poolQueue: number;
  workerMaxMemoryMb: number;
  taskTimeoutSeconds: number;
  generator: GeneratorConfig;
  kafka: KafkaConfig;
  redis: RedisConfig;
  metricsPort: number;
  metricsHost: string;
  /** The statistics API's listener and authentication (src/api/config.ts). */
  api: ApiConfig;
  logLevel: string;
  progress: 'auto' | 'on' | 'off';
  shutdownTimeoutSeconds: number;
}

function parsePercentiles(r: Reader): number[] {
  const text = r.raw('PERCENTILES');
  if (text === '') return [];
  const out = text.split(',').map((x) => x.trim()).filter((x) => x !== '').map(Number);
  if (out.length === 0 || out.some((p) => !Number.isFinite(p) || p < 0 || p > 100)) {
    throw r.fail('PERCENTILES', text, 'a comma list of numbers from 0 to 100 (e.g. 50,95,99) is allowed');
  }
  return out;
}

function parseGroupBy(r: Reader): string[] | null {
  const text = r.raw('GROUP_BY');
  if (text === '') return null;
  const groupBy = text.split(',').map((g) => g.trim());
  if (groupBy.some((g) => g === '')) throw r.fail('GROUP_BY', text, 'a comma list of dimension names (no empty names) is allowed');
  return groupBy;
}

function parseGenerator(r: Reader): GeneratorConfig {
  const startText = r.raw('GEN_START');
  let startMs = NaN;
  try {
    if (startText.includes('T')) startMs = parseIsoTimestamp(startText, 'GEN_START');
  } catch {
    // reported below
  }
  if (!Number.isFinite(startMs)) throw r.fail('GEN_START', startText, 'an ISO 8601 timestamp like 2020-02-11T12:42:13Z is allowed');
  return {
    count: r.get('GEN_COUNT'),
    metrics: r.get('GEN_METRICS'),
    hosts: r.get('GEN_HOSTS'),
    intervalMs: r.get('GEN_INTERVAL_SECONDS') * 1000,
    startMs,
    seed: r.get('GEN_SEED'),
    rate: r.get('GEN_RATE'),
  };
}

/**
 * What the auto batch settings are, by source. A file is read whole and nobody waits on one of its
 * records: its batches are large, so that one holds each series several times and the worker's
 * partials spare the main thread's merge (seed 001, 10,000 series: at 4000 messages a batch each
 * record was a partial of its own). The bytes held are bounded instead by the batch bytes: the engine
 * holds up to 2 x POOL_QUEUE batches.
 */
export const BATCH_DEFAULTS = {
  size: 4000,
  maxBytes: 4 * 1024 * 1024,
  file: { size: 32_000, heldBytes: 128 * 1024 * 1024, minBytes: 4 * 1024 * 1024, maxBytes: 16 * 1024 * 1024 },
} as const;

type Threads = Pick<Config, 'workerThreads' | 'workerThreadsReason' | 'poolQueue' | 'batchSize' | 'batchMaxBytes' | 'batchReason'>;

function parseThreads(r: Reader, cpus: CpuInfo, owned: boolean, file: boolean, maxMessageBytes: number): Threads {
  const threads = r.get('WORKER_THREADS');
  // With the lanes in their owners the main thread only moves bytes (0.3-0.4 us of CPU a record on the
  // default job): a core kept for it would idle, so auto gives the owners every usable core. A file's
  // large batches leave the main thread reading and merging one partial per series a batch: a core
  // kept for it idled too: one worker was seed 001's bottleneck (docs/history/measurements-2026-12.md).
  const all = owned || file;
  const workerThreads = threads === 'auto' ? (all ? Math.max(1, cpus.usable) : defaultThreads(cpus)) : threads;
  const usable = `auto: ${cpus.usable} usable CPUs (${cpus.source})`;
  const workerThreadsReason =
    threads !== 'auto' ? (threads === 0 ? 'WORKER_THREADS=0: decode on the main thread (baseline)' : 'WORKER_THREADS set')
    : owned ? `${usable}, every one to a lane owner (the lanes live in their owner workers: the main thread only moves bytes)`
    : file ? `${usable}, every one to a decode worker (a file's batches are large: the main thread reads and merges one partial per series a batch)`
    : `${usable} - 1 for the main thread`;
  const queue = r.get('POOL_QUEUE');
  const busy = Math.max(1, workerThreads);
  const poolQueue = queue === 'auto' ? (file ? busy + 1 : 2 * busy + 1) : queue;
  const size = r.get('BATCH_SIZE');
  const bytes = r.get('BATCH_MAX_BYTES');
  const f = BATCH_DEFAULTS.file;
  const autoBytes = file ? Math.min(f.maxBytes, Math.max(f.minBytes, Math.floor(f.heldBytes / (2 * poolQueue)))) : BATCH_DEFAULTS.maxBytes;
  const batchSize = size === 'auto' ? (file ? f.size : BATCH_DEFAULTS.size) : size;
  const batchMaxBytes = bytes === 'auto' ? Math.max(autoBytes, maxMessageBytes) : bytes;
  // Says which of the two auto chose: one may be set and the other not.
  const chosen = [size === 'auto' ? `BATCH_SIZE=auto: ${batchSize} messages` : null, bytes === 'auto' ? `BATCH_MAX_BYTES=auto: ${batchMaxBytes} bytes` : null].filter((x) => x !== null);
  const batchReason = chosen.length === 0
    ? 'BATCH_SIZE and BATCH_MAX_BYTES set'
    : `${chosen.join(', ')}${file ? ` (a file is read whole, so its batches are large; the 2 x POOL_QUEUE = ${2 * poolQueue} batches held stay within ${f.heldBytes} bytes)` : ''}`;
  return { workerThreads, workerThreadsReason, poolQueue, batchSize, batchMaxBytes, batchReason };
}

/**
 * Names the configuration puts into every record (GROUP_BY, JSON_DIMENSIONS names, JSON_NAME and
 * JSON_UNIT constants) pass the checks records pass, or every record would be rejected.
 */
function checkConfiguredNames(c: Config, r: Reader): void {
  const check = (variable: OptionName, name: string, maxBytes: number, option: 'MAX_NAME_BYTES' | 'MAX_DIMENSION_BYTES'): void => {
    try {
      checkText(name, variable, '', maxBytes, option);
    } catch (err) {
      if (!(err instanceof RecordError)) throw err;
      const what = err.reason === 'too_long'
        ? `names of at most ${option}=${maxBytes} bytes (UTF-8) are allowed; ${JSON.stringify(name.length > 40 ? `${name.slice(0, 37)}...` : name)} is ${Buffer.byteLength(name)}`
        : 'text without U+0000 and unpaired surrogates is allowed';
      throw r.fail(variable, r.raw(variable), what);
    }
  };
  for (const g of c.groupBy ?? []) check('GROUP_BY', g, c.maxDimensionBytes, 'MAX_DIMENSION_BYTES');
  if (c.format.kind === 'ceilometer') for (const k of c.format.metadata ?? []) check('CEILOMETER_METADATA', k.name, c.maxDimensionBytes, 'MAX_DIMENSION_BYTES');
  if (c.format.kind === 'json') {
    const m = c.format.mapping;
    for (const d of m.dimensions) check('JSON_DIMENSIONS', d.name, c.maxDimensionBytes, 'MAX_DIMENSION_BYTES');
    if ('constant' in m.name) check('JSON_NAME', String(m.name.constant), c.maxNameBytes, 'MAX_NAME_BYTES');
    if (m.unit !== null && 'constant' in m.unit) check('JSON_UNIT', String(m.unit.constant), c.maxNameBytes, 'MAX_NAME_BYTES');
  }
}

export function parseConfig(env: Env, cpus: CpuInfo = detectCpus()): Config {
  const r = new Reader(env);
  r.checkAll();
  const groupBy = parseGroupBy(r);
  const generator = parseGenerator(r);
  const source = parseSource(r);
  const sink = parseSink(r);
  if (r.bool('EXACTLY_ONCE') && sink.kind !== 'kafka') {
    throw r.fail('EXACTLY_ONCE', 'true', 'only with SINK=kafka (a postgres:// sink is exactly-once on its own)');
  }
  const late = parseLateRecords(r, sink);
  const percentiles = parsePercentiles(r);
  const lanes = parseLaneState(r, { source: source.kind, workerThreads: r.get('WORKER_THREADS'), sink });
  const threads = parseThreads(r, cpus, lanes.laneState === 'worker', source.kind === 'file', r.get('MAX_MESSAGE_BYTES'));
  const config: Config = {
    source,
    sink,
    deadLetter: parseDeadLetter(r),
    format: parseFormat(r),
    groupBy,
    windowSeconds: r.get('WINDOW_SECONDS'),
    allowedLatenessSeconds: r.get('ALLOWED_LATENESS_SECONDS'),
    ...late,
    watermarkConfirmRecords: r.get('WATERMARK_CONFIRM_RECORDS'),
    percentiles,
    percentileAccuracy: r.get('PERCENTILE_ACCURACY'),
    maxSeries: r.get('MAX_SERIES'),
    maxStateMb: r.get('MAX_STATE_MB'),
    maxDimensions: r.get('MAX_DIMENSIONS'),
    maxMessageBytes: r.get('MAX_MESSAGE_BYTES'),
    maxNameBytes: r.get('MAX_NAME_BYTES'),
    maxDimensionBytes: r.get('MAX_DIMENSION_BYTES'),
    maxSeriesKeyBytes: r.get('MAX_SERIES_KEY_BYTES'),
    maxFutureSeconds: r.get('MAX_FUTURE_SECONDS'),
    ...threads,
    ...lanes,
    workerMaxMemoryMb: r.get('WORKER_MAX_MEMORY_MB'),
    taskTimeoutSeconds: r.get('TASK_TIMEOUT_SECONDS'),
    generator,
    kafka: parseKafka(r, source.kind === 'kafka'),
    redis: parseRedisConfig((name) => r.raw(name as OptionName), source.kind === 'redis'),
    metricsPort: r.get('METRICS_PORT'),
    metricsHost: r.raw('METRICS_HOST'),
    api: parseApiConfig({ get: (n) => r.raw(n), port: r.get('API_PORT'), num: (n) => r.get(n), sinkKind: sink.kind, metricsPort: r.get('METRICS_PORT') }),
    logLevel: r.get('LOG_LEVEL'),
    progress: r.get('PROGRESS'),
    shutdownTimeoutSeconds: r.get('SHUTDOWN_TIMEOUT_SECONDS'),
  };
  checkConfiguredNames(config, r);
  if (config.batchMaxBytes < config.maxMessageBytes) {
    throw r.fail('BATCH_MAX_BYTES', String(config.batchMaxBytes), `must be at least MAX_MESSAGE_BYTES (${config.maxMessageBytes})`);
  }
  return config;
}

/** What decides where the lanes live: the options LANE_STATE=worker cannot run with yet. */
interface LaneOptions {
  readonly source: SourceSpec['kind'];
  readonly workerThreads: number | 'auto';
  readonly sink: SinkSpec;
}

/**
 * Why the lanes cannot live in their owner workers with these options, naming the option in the way
 * (rows are formatted as bytes in the owner, for sinks that read only bytes or PostgreSQL's COPY tuples; state, sketches and
 * windows kept for amendment included, is counted in a budget the owners share), or null.
 */
export function laneStateRefusal(c: LaneOptions): string | null {
  if (c.workerThreads === 0) return 'needs WORKER_THREADS >= 1 (the lanes live in the workers; WORKER_THREADS=0)';
  return null;
}

/**
 * Sources whose lanes LANE_STATE=auto keeps on the main thread, and why. A file or stdin is one lane,
 * and one owner is one worker, while with the lanes on the main thread every worker decodes that
 * lane's batches: on a machine of many cores the pool is then the faster (a lane split across workers
 * is not built yet).
 */
const AUTO_KEEPS_MAIN: Readonly<Partial<Record<SourceSpec['kind'], string>>> = {
  file: 'a file is one lane, which one owner worker alone would decode',
  stdin: 'stdin is one lane, which one owner worker alone would decode',
};

/**
 * LANE_STATE: `auto` puts the lanes in their owner workers where the options allow it and the source
 * gains by it (the main thread then only moves bytes), and on the main thread otherwise, saying why;
 * `worker` asked for with an option it cannot run with is refused, naming the option.
 */
function parseLaneState(r: Reader, c: LaneOptions): { laneState: 'main' | 'worker'; laneStateReason: string } {
  const asked = r.get('LANE_STATE');
  const refusal = asked === 'main' ? null : laneStateRefusal(c);
  if (asked === 'worker') {
    if (refusal !== null) throw r.fail('LANE_STATE', 'worker', `${refusal}, or LANE_STATE=main`);
    return { laneState: 'worker', laneStateReason: 'LANE_STATE=worker' };
  }
  if (asked === 'main') return { laneState: 'main', laneStateReason: 'LANE_STATE=main' };
  const kept = AUTO_KEEPS_MAIN[c.source];
  if (kept !== undefined && refusal === null) return { laneState: 'main', laneStateReason: `auto: on the main thread, since ${kept} (LANE_STATE=worker to choose it)` };
  return refusal === null
    ? { laneState: 'worker', laneStateReason: 'auto: in their owner workers' }
    : { laneState: 'main', laneStateReason: `auto: on the main thread, since LANE_STATE=worker ${refusal}` };
}

/**
 * LATE_RECORDS, `auto` resolved by sink: amend where a reader sees one row per identity whatever the
 * revisions (PostgreSQL updates it in place), dead-letter where every revision is appended (stdout,
 * file, Kafka): a reader written for one row per window would count an amended window twice.
 */
function parseLateRecords(r: Reader, sink: SinkSpec): { lateRecords: 'dead-letter' | 'amend'; amendHorizonSeconds: number } {
  const asked = r.get('LATE_RECORDS');
  const lateRecords = asked === 'auto' ? LATE_RECORDS_AUTO[sink.kind] : asked;
  // Read (and checked) whatever LATE_RECORDS is: it does nothing without amend.
  return { lateRecords, amendHorizonSeconds: r.get('AMEND_HORIZON_SECONDS') };
}

/** What LATE_RECORDS=auto is for each sink (README, late records, says why). */
export const LATE_RECORDS_AUTO: Readonly<Record<SinkSpec['kind'], 'dead-letter' | 'amend'>> = { postgres: 'amend', kafka: 'dead-letter', stdout: 'dead-letter', file: 'dead-letter' };
