// Environment (or equal CLI flags) -> validated Config. A wrong value is one line naming the
// variable, the value and what is allowed.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { FieldRef, FormatSpec, JsonMapping } from '../core/formats/index.js';
import { RecordError, checkText, parseIsoTimestamp } from '../core/record.js';
import { redactUrl } from './redact.js';
import { detectCpus, defaultThreads, type CpuInfo } from './cpus.js';
import { OPTIONS, flagFor, type OptionName } from './options.js';
import { parseRedisConfig, type RedisConfig } from '../sources/redis/config.js';
import { producibleCompressions, type KafkaCompression } from '../kafka/compression.js';

export type SourceSpec = { kind: 'generator' } | { kind: 'file'; path: string } | { kind: 'stdin' } | { kind: 'kafka' } | { kind: 'redis' };
export type OutputCompression = KafkaCompression;
export type SinkSpec =
  | { kind: 'stdout' }
  | { kind: 'file'; path: string }
  | { kind: 'postgres'; url: string }
  | { kind: 'kafka'; topic: string; exactlyOnce: boolean; compression: OutputCompression };
export type DeadLetterSpec = { kind: 'file'; path: string } | { kind: 'stderr' } | { kind: 'kafka'; topic: string; compression: OutputCompression };

export interface GeneratorConfig {
  count: number;
  metrics: number;
  hosts: number;
  intervalMs: number;
  startMs: number;
  seed: number;
  rate: number;
}

export interface KafkaConfig {
  brokers: string[];
  topics: string[];
  groupId: string;
  clientId: string;
  from: 'earliest' | 'latest';
  ssl: null | { ca?: string; cert?: string; key?: string; rejectUnauthorized: boolean };
  sasl: null | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxWaitMs: number;
  maxBytesPerPartition: number;
  intakeMaxBytes: number;
  commitIntervalMs: number;
  idleFlushMs: number;
  lagIntervalMs: number;
  retryMaxMs: number;
}

export interface Config {
  source: SourceSpec;
  sink: SinkSpec;
  deadLetter: DeadLetterSpec;
  format: FormatSpec;
  groupBy: string[] | null;
  windowSeconds: number;
  allowedLatenessSeconds: number;
  watermarkConfirmRecords: number;
  /** Percentiles (0..100) to report per window; empty = no sketches. */
  percentiles: number[];
  percentileAccuracy: number;
  maxSeries: number;
  maxDimensions: number;
  maxMessageBytes: number;
  maxNameBytes: number;
  maxDimensionBytes: number;
  maxSeriesKeyBytes: number;
  maxFutureSeconds: number;
  workerThreads: number;
  /** Why this thread count: logged at start. */
  workerThreadsReason: string;
  batchSize: number;
  batchMaxBytes: number;
  poolQueue: number;
  workerMaxMemoryMb: number;
  taskTimeoutSeconds: number;
  generator: GeneratorConfig;
  kafka: KafkaConfig;
  redis: RedisConfig;
  metricsPort: number;
  metricsHost: string;
  logLevel: string;
  progress: 'auto' | 'on' | 'off';
  shutdownTimeoutSeconds: number;
}

export type Env = Readonly<Record<string, string | undefined>>;

class Reader {
  constructor(private readonly env: Env) {}

  raw(name: OptionName): string {
    const v = this.env[name];
    if (v !== undefined && v !== '') return v.trim();
    return OPTIONS.find((o) => o.env === name)!.default;
  }

  int(name: OptionName, min: number, max: number): number {
    const s = this.raw(name);
    const n = Number(s);
    if (!/^-?\d+$/.test(s) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new ConfigError(name, s, `an integer from ${min} to ${max} is allowed`);
    }
    return n;
  }

  num(name: OptionName, min: number, max: number): number {
    const s = this.raw(name);
    const n = Number(s);
    if (s === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new ConfigError(name, s, `a number from ${min} to ${max} is allowed`);
    }
    return n;
  }

  oneOf<T extends string>(name: OptionName, allowed: readonly T[]): T {
    const s = this.raw(name);
    if (!(allowed as readonly string[]).includes(s)) throw new ConfigError(name, s, `one of ${allowed.join(', ')} is allowed`);
    return s as T;
  }
}

function parsePath(name: OptionName, s: string): string[] {
  const path = s.split('.');
  if (path.some((p) => p === '')) throw new ConfigError(name, s, 'a dotted path like verb.id (no empty segments) is allowed');
  return path;
}

function fieldRef(name: OptionName, s: string, numeric: boolean): FieldRef {
  if (s.startsWith('=')) {
    const c = s.slice(1);
    if (numeric) {
      const n = Number(c);
      if (c === '' || !Number.isFinite(n)) throw new ConfigError(name, s, 'a path or =NUMBER (e.g. =1) is allowed');
      return { constant: n };
    }
    if (c === '') throw new ConfigError(name, s, 'a path or =CONSTANT with a non-empty constant is allowed');
    return { constant: c };
  }
  return { path: parsePath(name, s), text: s };
}

function parseFormat(r: Reader): FormatSpec {
  const kind = r.oneOf('FORMAT', ['monasca', 'ceilometer', 'json'] as const);
  if (kind !== 'json') return { kind };
  const name = r.raw('JSON_NAME');
  if (name === '') throw new ConfigError('JSON_NAME', name, 'FORMAT=json needs a path of the meter name or =CONSTANT');
  const ts = r.raw('JSON_TIMESTAMP');
  const unit = r.raw('JSON_UNIT');
  const dimsText = r.raw('JSON_DIMENSIONS');
  const dimensions = dimsText === ''
    ? []
    : dimsText.split(',').map((entry) => {
        const e = entry.trim();
        const eq = e.indexOf('=');
        const dimName = eq === -1 ? e : e.slice(0, eq).trim();
        const path = eq === -1 ? e : e.slice(eq + 1).trim();
        if (dimName === '') throw new ConfigError('JSON_DIMENSIONS', dimsText, 'a comma list of NAME=PATH or PATH is allowed (empty name found)');
        if (path.split('.').some((p) => p === '')) {
          throw new ConfigError('JSON_DIMENSIONS', dimsText, `entry ${JSON.stringify(e)} needs a dotted path like verb.id (no empty segments)`);
        }
        return { name: dimName, path: path.split('.'), text: path };
      });
  const mapping: JsonMapping = {
    name: fieldRef('JSON_NAME', name, false),
    value: fieldRef('JSON_VALUE', r.raw('JSON_VALUE'), true),
    timestamp: { path: parsePath('JSON_TIMESTAMP', ts), text: ts },
    unit: unit === '' ? null : fieldRef('JSON_UNIT', unit, false),
    dimensions,
  };
  return { kind: 'json', mapping };
}

function list(s: string): string[] {
  return s.split(',').map((x) => x.trim()).filter((x) => x !== '');
}

function parseKafka(r: Reader, required: boolean): KafkaConfig {
  const brokersText = r.raw('KAFKA_BROKERS');
  const brokers = list(brokersText);
  if (brokers.length === 0 || brokers.some((b) => !/^[^\s:]+:\d{1,5}$/.test(b))) {
    throw new ConfigError('KAFKA_BROKERS', brokersText, 'a comma list of host:port is allowed');
  }
  const topicsText = r.raw('KAFKA_TOPICS');
  const topics = list(topicsText);
  if (required && topics.length === 0) throw new ConfigError('KAFKA_TOPICS', topicsText, 'SOURCE=kafka needs at least one topic');
  if (topics.some((t) => !/^[A-Za-z0-9._-]{1,249}$/.test(t))) {
    throw new ConfigError('KAFKA_TOPICS', topicsText, 'topic names of letters, digits, ".", "_" and "-" (at most 249) are allowed');
  }
  const bool = (name: 'KAFKA_SSL' | 'KAFKA_SSL_REJECT_UNAUTHORIZED') => r.oneOf(name, ['true', 'false'] as const) === 'true';
  const file = (name: 'KAFKA_SSL_CA' | 'KAFKA_SSL_CERT' | 'KAFKA_SSL_KEY'): string | undefined => {
    const path = r.raw(name);
    if (path === '') return undefined;
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError(name, path, `a readable PEM file is required (${(err as Error).message})`);
    }
  };
  const ssl = bool('KAFKA_SSL')
    ? { ca: file('KAFKA_SSL_CA'), cert: file('KAFKA_SSL_CERT'), key: file('KAFKA_SSL_KEY'), rejectUnauthorized: bool('KAFKA_SSL_REJECT_UNAUTHORIZED') }
    : null;
  const mechText = r.raw('KAFKA_SASL_MECHANISM');
  let sasl: KafkaConfig['sasl'] = null;
  if (mechText !== '') {
    const mechanism = r.oneOf('KAFKA_SASL_MECHANISM', ['plain', 'scram-sha-256', 'scram-sha-512'] as const);
    const username = r.raw('KAFKA_SASL_USERNAME');
    if (username === '') throw new ConfigError('KAFKA_SASL_USERNAME', username, `KAFKA_SASL_MECHANISM=${mechanism} needs a user name`);
    sasl = { mechanism, username, password: r.raw('KAFKA_SASL_PASSWORD') };
  }
  const sessionTimeoutMs = r.int('KAFKA_SESSION_TIMEOUT_MS', 6000, 300000);
  const heartbeatIntervalMs = r.int('KAFKA_HEARTBEAT_INTERVAL_MS', 100, 300000);
  if (heartbeatIntervalMs >= sessionTimeoutMs) {
    throw new ConfigError('KAFKA_HEARTBEAT_INTERVAL_MS', String(heartbeatIntervalMs), `must be lower than KAFKA_SESSION_TIMEOUT_MS (${sessionTimeoutMs})`);
  }
  return {
    brokers,
    topics,
    groupId: r.raw('KAFKA_GROUP_ID'),
    clientId: r.raw('KAFKA_CLIENT_ID'),
    from: r.oneOf('KAFKA_FROM', ['earliest', 'latest'] as const),
    ssl,
    sasl,
    sessionTimeoutMs,
    heartbeatIntervalMs,
    maxWaitMs: r.int('KAFKA_MAX_WAIT_MS', 0, 60000),
    maxBytesPerPartition: r.int('KAFKA_MAX_BYTES_PER_PARTITION', 1024, 256 * 1024 * 1024),
    intakeMaxBytes: r.int('KAFKA_INTAKE_MAX_BYTES', 1024, 16 * 1024 * 1024 * 1024),
    commitIntervalMs: r.num('COMMIT_INTERVAL_SECONDS', 0.1, 3600) * 1000,
    idleFlushMs: r.num('IDLE_FLUSH_SECONDS', 0.1, 86400) * 1000,
    lagIntervalMs: r.num('LAG_INTERVAL_SECONDS', 0.1, 3600) * 1000,
    retryMaxMs: r.num('KAFKA_RETRY_MAX_SECONDS', 1, 3600) * 1000,
  };
}

function parsePercentiles(r: Reader): number[] {
  const text = r.raw('PERCENTILES');
  if (text === '') return [];
  const out = list(text).map(Number);
  if (out.length === 0 || out.some((p) => !Number.isFinite(p) || p < 0 || p > 100)) {
    throw new ConfigError('PERCENTILES', text, 'a comma list of numbers from 0 to 100 (e.g. 50,95,99) is allowed');
  }
  return out;
}

function parseSource(r: Reader): SourceSpec {
  const s = r.raw('SOURCE');
  if (s === 'generator' || s === 'stdin' || s === 'kafka' || s === 'redis') return { kind: s };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  throw new ConfigError('SOURCE', s, 'generator, file:PATH, stdin or kafka or redis is allowed');
}

function parseSink(r: Reader): SinkSpec {
  const s = r.raw('SINK');
  if (s === 'stdout') return { kind: 'stdout' };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  if (s === 'kafka') {
    const topic = r.raw('OUTPUT_TOPIC');
    if (!/^[A-Za-z0-9._-]{1,249}$/.test(topic)) throw new ConfigError('OUTPUT_TOPIC', topic, 'SINK=kafka needs a topic name of letters, digits, ".", "_" and "-"');
    return {
      kind: 'kafka',
      topic,
      exactlyOnce: r.oneOf('EXACTLY_ONCE', ['true', 'false'] as const) === 'true',
      compression: r.oneOf('OUTPUT_COMPRESSION', producibleCompressions()),
    };
  }
  if (/^postgres(ql)?:\/\/./.test(s)) {
    try {
      new URL(s);
    } catch {
      throw new ConfigError('SINK', redactUrl(s), 'a postgres://user:password@host:port/database URL is allowed');
    }
    return { kind: 'postgres', url: s };
  }
  throw new ConfigError('SINK', redactUrl(s), 'stdout, file:PATH, postgres://… or kafka is allowed');
}

function parseDeadLetter(r: Reader): DeadLetterSpec {
  const s = r.raw('DEAD_LETTER');
  if (s === 'stderr') return { kind: 'stderr' };
  if (s.startsWith('file:') && s.length > 5) return { kind: 'file', path: s.slice(5) };
  if (s === 'kafka') {
    const topic = r.raw('DLQ_TOPIC');
    if (!/^[A-Za-z0-9._-]{1,249}$/.test(topic)) throw new ConfigError('DLQ_TOPIC', topic, 'DEAD_LETTER=kafka needs a topic name of letters, digits, ".", "_" and "-"');
    return { kind: 'kafka', topic, compression: r.oneOf('OUTPUT_COMPRESSION', producibleCompressions()) };
  }
  throw new ConfigError('DEAD_LETTER', s, 'file:PATH, stderr or kafka is allowed (rejected records are never dropped)');
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
      throw new ConfigError(variable, r.raw(variable), what);
    }
  };
  for (const g of c.groupBy ?? []) check('GROUP_BY', g, c.maxDimensionBytes, 'MAX_DIMENSION_BYTES');
  if (c.format.kind === 'json') {
    const m = c.format.mapping;
    for (const d of m.dimensions) check('JSON_DIMENSIONS', d.name, c.maxDimensionBytes, 'MAX_DIMENSION_BYTES');
    if ('constant' in m.name) check('JSON_NAME', String(m.name.constant), c.maxNameBytes, 'MAX_NAME_BYTES');
    if (m.unit !== null && 'constant' in m.unit) check('JSON_UNIT', String(m.unit.constant), c.maxNameBytes, 'MAX_NAME_BYTES');
  }
}

export function parseConfig(env: Env, cpus: CpuInfo = detectCpus()): Config {
  const r = new Reader(env);
  const threadsText = r.raw('WORKER_THREADS');
  let workerThreads: number;
  let workerThreadsReason: string;
  if (threadsText === 'auto') {
    workerThreads = defaultThreads(cpus);
    workerThreadsReason = `auto: ${cpus.usable} usable CPUs (${cpus.source}) - 1 for the main thread`;
  } else {
    workerThreads = r.int('WORKER_THREADS', 0, 256);
    workerThreadsReason = workerThreads === 0 ? 'WORKER_THREADS=0: decode on the main thread (baseline)' : 'WORKER_THREADS set';
  }
  const queueText = r.raw('POOL_QUEUE');
  const poolQueue = queueText === 'auto' ? 2 * Math.max(1, workerThreads) + 1 : r.int('POOL_QUEUE', 1, 10000);
  const groupByText = r.raw('GROUP_BY');
  const groupBy = groupByText === '' ? null : groupByText.split(',').map((g) => g.trim());
  if (groupBy !== null && groupBy.some((g) => g === '')) {
    throw new ConfigError('GROUP_BY', groupByText, 'a comma list of dimension names (no empty names) is allowed');
  }
  const startText = r.raw('GEN_START');
  let startMs = NaN;
  try {
    if (startText.includes('T')) startMs = parseIsoTimestamp(startText, 'GEN_START');
  } catch {
    // reported below
  }
  if (!Number.isFinite(startMs)) {
    throw new ConfigError('GEN_START', startText, 'an ISO 8601 timestamp like 2020-02-11T12:42:13Z is allowed');
  }
  const source = parseSource(r);
  const sink = parseSink(r);
  if (r.raw('EXACTLY_ONCE') === 'true' && sink.kind !== 'kafka') {
    throw new ConfigError('EXACTLY_ONCE', 'true', 'only with SINK=kafka (a postgres:// sink is exactly-once on its own)');
  }
  const config: Config = {
    source,
    sink,
    deadLetter: parseDeadLetter(r),
    format: parseFormat(r),
    groupBy,
    windowSeconds: r.int('WINDOW_SECONDS', 1, 86400),
    allowedLatenessSeconds: r.num('ALLOWED_LATENESS_SECONDS', 0, 86400 * 7),
    watermarkConfirmRecords: r.int('WATERMARK_CONFIRM_RECORDS', 1, 1_000_000),
    percentiles: parsePercentiles(r),
    percentileAccuracy: r.num('PERCENTILE_ACCURACY', 0.0001, 0.1),
    maxSeries: r.int('MAX_SERIES', 1, 100_000_000),
    maxDimensions: r.int('MAX_DIMENSIONS', 0, 10_000),
    maxMessageBytes: r.int('MAX_MESSAGE_BYTES', 16, 256 * 1024 * 1024),
    maxNameBytes: r.int('MAX_NAME_BYTES', 1, 256 * 1024 * 1024),
    maxDimensionBytes: r.int('MAX_DIMENSION_BYTES', 1, 256 * 1024 * 1024),
    maxSeriesKeyBytes: r.int('MAX_SERIES_KEY_BYTES', 16, 256 * 1024 * 1024),
    maxFutureSeconds: r.num('MAX_FUTURE_SECONDS', 0, 86400 * 365 * 100),
    workerThreads,
    workerThreadsReason,
    batchSize: r.int('BATCH_SIZE', 1, 100_000),
    batchMaxBytes: r.int('BATCH_MAX_BYTES', 1024, 1024 * 1024 * 1024),
    poolQueue,
    workerMaxMemoryMb: r.int('WORKER_MAX_MEMORY_MB', 16, 65536),
    taskTimeoutSeconds: r.num('TASK_TIMEOUT_SECONDS', 0.1, 86400),
    generator: {
      count: r.int('GEN_COUNT', 0, 1e12),
      metrics: r.int('GEN_METRICS', 1, 10_000_000),
      hosts: r.int('GEN_HOSTS', 1, 1_000_000),
      intervalMs: r.num('GEN_INTERVAL_SECONDS', 0.001, 86400) * 1000,
      startMs,
      seed: r.int('GEN_SEED', 0, 2 ** 32 - 1),
      rate: r.num('GEN_RATE', 0, 1e9),
    },
    kafka: parseKafka(r, source.kind === 'kafka'),
    redis: parseRedisConfig((name) => r.raw(name as OptionName), source.kind === 'redis'),
    metricsPort: r.int('METRICS_PORT', 0, 65535),
    metricsHost: r.raw('METRICS_HOST'),
    logLevel: r.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    progress: r.oneOf('PROGRESS', ['auto', 'on', 'off'] as const),
    shutdownTimeoutSeconds: r.num('SHUTDOWN_TIMEOUT_SECONDS', 1, 3600),
  };
  checkConfiguredNames(config, r);
  if (config.batchMaxBytes < config.maxMessageBytes) {
    throw new ConfigError('BATCH_MAX_BYTES', String(config.batchMaxBytes), `must be at least MAX_MESSAGE_BYTES (${config.maxMessageBytes})`);
  }
  return config;
}

/**
 * CLI flags equal to the variables: --worker-threads 2 or --worker-threads=2 is WORKER_THREADS=2.
 * Flags win over the environment. Returns 'help' for --help and 'version' for --version, wherever
 * they stand, so that asking never starts anything.
 */
export function argvToEnv(argv: readonly string[], env: Env): Record<string, string | undefined> | 'help' | 'version' {
  if (argv.some((a) => a === '--help' || a === '-h')) return 'help';
  if (argv.includes('--version')) return 'version';
  const out: Record<string, string | undefined> = { ...env };
  const byFlag = new Map<string, string>(OPTIONS.map((o) => [flagFor(o.env), o.env]));
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = eq === -1 ? a : a.slice(0, eq);
    const name = byFlag.get(flag);
    if (name === undefined) {
      // Only the part before "=": what follows may be a password typed into a misspelled flag.
      throw new ConfigError('argument', flag, `a known flag is allowed (see --help); e.g. ${flagFor('WORKER_THREADS')} 2`);
    }
    let value: string | undefined;
    if (eq !== -1) value = a.slice(eq + 1);
    else value = argv[++i];
    if (value === undefined) throw new ConfigError(name, '', `${flag} needs a value`);
    out[name] = value;
  }
  return out;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/** Prefixes that two or more options share (KAFKA_, GEN_, MAX_, ...): a variable with one is meant for us. */
const OPTION_PREFIXES = [...new Set(OPTIONS.map((o) => o.env.split('_')[0]!))]
  .filter((p) => OPTIONS.filter((o) => o.env.startsWith(`${p}_`)).length >= 2)
  .map((p) => `${p}_`);

/**
 * Look like ours but are not: scripts/kafka.sh's ports, Kafka's own launch scripts, and the
 * variables Kubernetes injects for every Service of the namespace (a Service "kafka" gives
 * KAFKA_PORT=tcp://..., KAFKA_SERVICE_HOST, KAFKA_PORT_9092_TCP_ADDR, ...).
 */
function notOurs(name: string, value: string): boolean {
  if (['KAFKA_PORT', 'KAFKA_CONTROLLER_PORT', 'KAFKA_HOME', 'KAFKA_OPTS', 'KAFKA_HEAP_OPTS', 'KAFKA_JVM_PERFORMANCE_OPTS', 'KAFKA_LOG4J_OPTS'].includes(name)) return true;
  if (/_SERVICE_(HOST|PORT)(_[A-Z0-9_]+)?$/.test(name) || /_PORT_\d+_(TCP|UDP|SCTP)(_(ADDR|PORT|PROTO))?$/.test(name)) return true;
  return /_PORT$/.test(name) && /^(tcp|udp|sctp):\/\//.test(value);
}

/**
 * Environment variables that look meant for us but are no option, each with the closest option:
 * a misspelled WORKER_THREAD=2 would otherwise be ignored without a word. `extra` are variables
 * of the command itself (streamstats-produce's PRODUCE_*). Names only: values may be secrets.
 */
export function unknownVariables(env: Env, extra: readonly string[] = []): Array<{ name: string; closest: string }> {
  const known = new Set<string>([...OPTIONS.map((o) => o.env), ...extra]);
  const out: Array<{ name: string; closest: string }> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || known.has(name) || notOurs(name, value)) continue;
    let closest = '';
    let best = Infinity;
    for (const o of known) {
      const dist = editDistance(name, o);
      if (dist < best) [best, closest] = [dist, o];
    }
    // Short names are close to too much (LINK is one edit from SINK): one edit from 5 letters on,
    // two from 8; shorter ones only by exact prefix.
    const near = best <= (name.length >= 8 ? 2 : name.length >= 5 ? 1 : 0);
    if (near || OPTION_PREFIXES.some((p) => name.startsWith(p))) out.push({ name, closest });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The start-up warning for unknownVariables(), one line; null when there is nothing to say. */
export function unknownVariablesWarning(found: ReturnType<typeof unknownVariables>): string | null {
  if (found.length === 0) return null;
  const list = found.map((f) => `${f.name} (did you mean ${f.closest}?)`).join(', ');
  return `ignoring environment variables that are not options: ${list}; see --help`;
}

export function helpText(): string {
  const lines = [
    'streamstats: parallel JSON decode + event-time window statistics, with Prometheus metrics.',
    '',
    'Usage: streamstats [--flag value ...]   (every flag has an equal environment variable)',
    '       streamstats --help | --version',
    '',
  ];
  for (const o of OPTIONS) {
    const def = o.default === '' ? '' : ` (default ${o.default})`;
    lines.push(`  ${o.env.padEnd(26)} ${flagFor(o.env).padEnd(28)} ${o.help}${def}`);
  }
  return lines.join('\n');
}

/** The effective config for the start-up log, without secrets (passwords, TLS keys). */
export function redactedConfig(config: Config): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(config)) as Config;
  if (copy.sink.kind === 'postgres') copy.sink.url = redactUrl(copy.sink.url);
  (copy.redis as { url: string }).url = redactUrl(copy.redis.url);
  if (copy.kafka.sasl !== null) copy.kafka.sasl.password = copy.kafka.sasl.password === '' ? '' : '[redacted]';
  if (copy.kafka.ssl !== null) {
    if (copy.kafka.ssl.key !== undefined) copy.kafka.ssl.key = '[redacted]';
    if (copy.kafka.ssl.cert !== undefined) copy.kafka.ssl.cert = '[pem]';
    if (copy.kafka.ssl.ca !== undefined) copy.kafka.ssl.ca = '[pem]';
  }
  return copy as unknown as Record<string, unknown>;
}
