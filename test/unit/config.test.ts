import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { argvToEnv, configSecrets, helpText, parseConfig, redactDeep, redactedConfig, unknownVariables, unknownVariablesWarning, type Env } from '../../src/config/index.js';
import { defaultThreads, detectCpus, parseCpuMax, type CpuInfo } from '../../src/config/cpus.js';
import { OPTIONS, allowedText, flagFor, optionsMarkdownTable, specOf, type OptionSpec } from '../../src/config/options.js';
import { showValue } from '../../src/config/reader.js';
import { redactSecrets, redactUrl } from '../../src/config/redact.js';
import { ConfigError, StreamstatsError } from '../../src/errors.js';
import { zstdAvailable } from '../../src/kafka/compression.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const CPUS: CpuInfo = { usable: 4, host: 8, quota: 4, source: 'x' };

/** Asserts parseConfig (or fn) throws a ConfigError naming the variable, the value and what is allowed. */
function expectConfigError(t: TapTest, fn: () => unknown, variable: string, value: string, allowed: RegExp, label: string): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  if (!(err instanceof ConfigError)) {
    t.fail(`${label}: expected a ConfigError, got ${err === undefined ? 'no error' : String(err)}`);
    return;
  }
  t.ok(err instanceof StreamstatsError, `${label}: is a StreamstatsError`);
  t.equal(err.code, 'STREAMSTATS_CONFIG', `${label}: code`);
  t.equal(err.canRetry, false, `${label}: retrying cannot help`);
  t.equal(err.variable, variable, `${label}: variable`);
  t.ok(err.message.startsWith(`${variable}=${JSON.stringify(value)} `), `${label}: message names variable and value: ${err.message}`);
  t.match(err.message, allowed, `${label}: message says what is allowed`);
  t.notMatch(err.message, /\n/, `${label}: one line`);
}

function bad(t: TapTest, env: Env, variable: string, value: string, allowed: RegExp, label = `${variable}=${value}`): void {
  expectConfigError(t, () => parseConfig(env, CPUS), variable, value, allowed, label);
}

t.test('defaults', async (t) => {
  const c = parseConfig({}, CPUS);
  t.same(c.source, { kind: 'generator' });
  t.same(c.sink, { kind: 'stdout' });
  t.same(c.deadLetter, { kind: 'file', path: 'streamstats-dead-letter.ndjson', maxBytes: 100 * 1024 * 1024, files: 5 });
  t.same(c.format, { kind: 'monasca' });
  t.equal(c.groupBy, null, 'empty GROUP_BY = all dimensions');
  t.equal(c.windowSeconds, 60);
  t.equal(c.allowedLatenessSeconds, 5);
  t.equal(c.maxSeries, 100_000);
  t.equal(c.maxDimensions, 64);
  t.equal(c.maxMessageBytes, 1_048_576);
  t.equal(c.maxFutureSeconds, 86_400);
  t.equal(c.maxNameBytes, 1024, 'MAX_NAME_BYTES: any 255-character name');
  t.equal(c.maxDimensionBytes, 1024, 'MAX_DIMENSION_BYTES: any 255-character dimension');
  t.equal(c.maxSeriesKeyBytes, 2048, 'MAX_SERIES_KEY_BYTES: under PostgreSQL\'s 2704-byte index entry');
  t.equal(c.laneState, 'worker', 'LANE_STATE=auto: the generator\'s lanes in their owner workers');
  t.match(c.laneStateReason, /^auto: in their owner workers/);
  t.equal(c.workerThreads, 4, 'auto: one lane owner per usable CPU (4)');
  t.match(c.workerThreadsReason, /auto/);
  t.match(c.workerThreadsReason, /4 usable/);
  t.match(c.workerThreadsReason, /\(x\)/, 'reason includes the CPU source');
  t.equal(c.batchSize, 4000);
  t.equal(c.batchMaxBytes, 4_194_304);
  t.equal(c.poolQueue, 2 * 4 + 1, 'POOL_QUEUE auto = 2 x threads + 1');
  t.equal(c.workerMaxMemoryMb, 512);
  t.same(c.generator, {
    count: 690_000,
    metrics: 1000,
    hosts: 4,
    intervalMs: 30_000,
    startMs: Date.UTC(2020, 1, 11, 12, 42, 13),
    seed: 1,
    rate: 0,
  });
  t.equal(c.metricsPort, 9464);
  t.equal(c.metricsHost, '0.0.0.0');
  t.equal(c.logLevel, 'info');
  t.equal(c.progress, 'auto');
  t.equal(c.shutdownTimeoutSeconds, 30);

  // Empty strings are unset; surrounding blanks are ignored.
  const empty = parseConfig(Object.fromEntries(OPTIONS.map((o) => [o.env, ''])), CPUS);
  t.same(empty, c, 'every variable set to "" gives the defaults');
  t.equal(parseConfig({ WORKER_THREADS: ' 2 ', WINDOW_SECONDS: '\t10\n' }, CPUS).workerThreads, 2, 'blanks trimmed');
  t.equal(parseConfig({ WINDOW_SECONDS: ' 10 ' }, CPUS).windowSeconds, 10);
  // Unrelated variables are ignored.
  t.same(parseConfig({ PATH: '/bin', HOME: '/root', FOO: 'bar' }, CPUS), c, 'unrelated variables ignored');

  // The help text lists every option with its flag and default.
  const help = helpText();
  for (const o of OPTIONS) {
    t.ok(help.includes(o.env) && help.includes(flagFor(o.env)), `help lists ${o.env}`);
    if (o.default !== '') t.ok(help.includes(`(default ${o.default})`), `help gives the default of ${o.env}`);
  }
});

t.test('valid non-default values', async (t) => {
  const c = parseConfig(
    {
      SOURCE: 'file:/data/in.ndjson',
      SINK: 'file:out.ndjson',
      DEAD_LETTER: 'stderr',
      GROUP_BY: 'hostname, service',
      WORKER_THREADS: '0',
      WINDOW_SECONDS: '86400',
      ALLOWED_LATENESS_SECONDS: '0.5',
      GEN_INTERVAL_SECONDS: '0.25',
      GEN_START: '2021-06-01T00:00:00.000+02:00',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
      PROGRESS: 'off',
      MAX_FUTURE_SECONDS: '0',
    },
    CPUS,
  );
  t.same(c.source, { kind: 'file', path: '/data/in.ndjson' });
  t.same(c.sink, { kind: 'file', path: 'out.ndjson' });
  t.same(c.deadLetter, { kind: 'stderr' });
  t.same(c.groupBy, ['hostname', 'service'], 'GROUP_BY split and trimmed');
  t.equal(c.workerThreads, 0);
  t.match(c.workerThreadsReason, /main thread/);
  t.equal(c.poolQueue, 2, 'POOL_QUEUE auto with a file and 0 threads = 1 + 1 (its batches are large)');
  t.equal(c.windowSeconds, 86400);
  t.equal(c.allowedLatenessSeconds, 0.5);
  t.equal(c.generator.intervalMs, 250, 'GEN_INTERVAL_SECONDS in ms');
  t.equal(c.generator.startMs, Date.UTC(2021, 4, 31, 22, 0, 0), 'GEN_START offset honoured');
  t.equal(c.metricsPort, 0);
  t.equal(c.logLevel, 'silent');
  t.equal(c.progress, 'off');
  t.equal(c.maxFutureSeconds, 0);
  const lim = parseConfig({ MAX_NAME_BYTES: '1', MAX_DIMENSION_BYTES: '268435456', MAX_SERIES_KEY_BYTES: '16' }, CPUS);
  t.same([lim.maxNameBytes, lim.maxDimensionBytes, lim.maxSeriesKeyBytes], [1, 268_435_456, 16], 'byte limits at their bounds');
  t.same(parseConfig({ GROUP_BY: 'host', MAX_DIMENSION_BYTES: '4' }, CPUS).groupBy, ['host'], 'a GROUP_BY name of exactly MAX_DIMENSION_BYTES');
  t.same(parseConfig({ SOURCE: 'stdin' }, CPUS).source, { kind: 'stdin' });
  t.same(parseConfig({ SOURCE: 'kafka', KAFKA_TOPICS: 'metrics' }, CPUS).source, { kind: 'kafka' });
  t.equal(parseConfig({ WORKER_THREADS: '256' }, CPUS).workerThreads, 256, 'upper bound allowed');
  t.equal(parseConfig({ WORKER_THREADS: '5', POOL_QUEUE: '1' }, CPUS).poolQueue, 1, 'explicit POOL_QUEUE');
  t.equal(parseConfig({ WORKER_THREADS: '5' }, CPUS).poolQueue, 11, 'POOL_QUEUE auto follows WORKER_THREADS');
  t.equal(parseConfig({ BATCH_MAX_BYTES: '65536', MAX_MESSAGE_BYTES: '65536' }, CPUS).batchMaxBytes, 65536, 'BATCH_MAX_BYTES = MAX_MESSAGE_BYTES is enough');

  t.same(parseConfig({ FORMAT: 'ceilometer', CEILOMETER_METADATA: 'instance_type, flavor.name' }, CPUS).format, {
    kind: 'ceilometer',
    metadata: [{ name: 'resource_metadata.instance_type', path: ['instance_type'] }, { name: 'resource_metadata.flavor.name', path: ['flavor', 'name'] }],
  }, 'CEILOMETER_METADATA: kept keys and their dimension names');
  t.same(parseConfig({ FORMAT: 'ceilometer' }, CPUS).format, { kind: 'ceilometer' });

  const j = parseConfig(
    {
      FORMAT: 'json',
      JSON_NAME: 'verb.id',
      JSON_VALUE: '=2.5',
      JSON_TIMESTAMP: 'meta.ts',
      JSON_UNIT: '=points',
      JSON_DIMENSIONS: 'actor=actor.mbox, object.id ,items.0.sku',
    },
    CPUS,
  );
  t.same(j.format, {
    kind: 'json',
    mapping: {
      name: { path: ['verb', 'id'], text: 'verb.id' },
      value: { constant: 2.5 },
      timestamp: { path: ['meta', 'ts'], text: 'meta.ts' },
      unit: { constant: 'points' },
      dimensions: [
        { name: 'actor', path: ['actor', 'mbox'], text: 'actor.mbox' },
        { name: 'object.id', path: ['object', 'id'], text: 'object.id' },
        { name: 'items.0.sku', path: ['items', '0', 'sku'], text: 'items.0.sku' },
      ],
    },
  });
  const j2 = parseConfig({ FORMAT: 'json', JSON_NAME: '=events', JSON_VALUE: 'result.score' }, CPUS);
  t.same(j2.format, {
    kind: 'json',
    mapping: {
      name: { constant: 'events' },
      value: { path: ['result', 'score'], text: 'result.score' },
      timestamp: { path: ['timestamp'], text: 'timestamp' },
      unit: null,
      dimensions: [],
    },
  });
  const j3 = parseConfig({ FORMAT: 'json', JSON_NAME: 'n' }, CPUS).format;
  t.same(j3.kind === 'json' ? j3.mapping.value : null, { constant: 1 }, 'JSON_VALUE default =1 counts events');
  t.same(parseConfig({ FORMAT: 'ceilometer' }, CPUS).format, { kind: 'ceilometer' });
});

t.test('every validation path names the variable, the value and what is allowed', async (t) => {
  const INT = (lo: number, hi: number): RegExp => new RegExp(`integer from ${lo} to ${hi}`);
  const NUM = (lo: number, hi: number): RegExp => new RegExp(`number from ${lo} to ${hi}`);
  const cases: Array<[Env, string, string, RegExp]> = [
    [{ WORKER_THREADS: '-1' }, 'WORKER_THREADS', '-1', INT(0, 256)],
    [{ WORKER_THREADS: 'abc' }, 'WORKER_THREADS', 'abc', INT(0, 256)],
    [{ WORKER_THREADS: '257' }, 'WORKER_THREADS', '257', INT(0, 256)],
    [{ WORKER_THREADS: '1.5' }, 'WORKER_THREADS', '1.5', INT(0, 256)],
    [{ WORKER_THREADS: '2x' }, 'WORKER_THREADS', '2x', INT(0, 256)],
    [{ WORKER_THREADS: '0x10' }, 'WORKER_THREADS', '0x10', INT(0, 256)],
    [{ WORKER_THREADS: '1e1' }, 'WORKER_THREADS', '1e1', INT(0, 256)],
    [{ WORKER_THREADS: 'AUTO' }, 'WORKER_THREADS', 'AUTO', INT(0, 256)],
    [{ WINDOW_SECONDS: '0' }, 'WINDOW_SECONDS', '0', INT(1, 86400)],
    [{ WINDOW_SECONDS: '86401' }, 'WINDOW_SECONDS', '86401', INT(1, 86400)],
    [{ WINDOW_SECONDS: '1.5' }, 'WINDOW_SECONDS', '1.5', INT(1, 86400)],
    [{ FORMAT: 'xml' }, 'FORMAT', 'xml', /one of monasca, ceilometer, json/],
    [{ FORMAT: 'Monasca' }, 'FORMAT', 'Monasca', /one of monasca, ceilometer, json/],
    [{ SOURCE: 'kafkaa' }, 'SOURCE', 'kafkaa', /generator, file:PATH, stdin or kafka/],
    [{ SOURCE: 'file:' }, 'SOURCE', 'file:', /file:PATH/],
    [{ SINK: 'foo' }, 'SINK', 'foo', /stdout, file:PATH, postgres.* or kafka/],
    [{ SINK: 'file:' }, 'SINK', 'file:', /stdout, file:PATH, postgres.* or kafka/],
    [{ DEAD_LETTER: 'none' }, 'DEAD_LETTER', 'none', /file:PATH, stderr or kafka/],
    [{ DEAD_LETTER: 'file:' }, 'DEAD_LETTER', 'file:', /file:PATH, stderr or kafka/],
    [{ GROUP_BY: ',' }, 'GROUP_BY', ',', /dimension names \(no empty names\)/],
    [{ KAFKA_BROKERS: 'localhost' }, 'KAFKA_BROKERS', 'localhost', /comma list of host:port/],
    [{ SINK: 'kafka' }, 'OUTPUT_TOPIC', '', /SINK=kafka needs a topic name/],
    [{ SINK: 'kafka', OUTPUT_TOPIC: 'o', OUTPUT_COMPRESSION: 'brotli' }, 'OUTPUT_COMPRESSION', 'brotli', /one of none, gzip, snappy, lz4/],
    [{ SINK: 'kafka', OUTPUT_TOPIC: 'o', EXACTLY_ONCE: 'yes' }, 'EXACTLY_ONCE', 'yes', /one of true, false/],
    [{ EXACTLY_ONCE: 'true' }, 'EXACTLY_ONCE', 'true', /only with SINK=kafka/],
    [{ DEAD_LETTER: 'kafka' }, 'DLQ_TOPIC', '', /DEAD_LETTER=kafka needs a topic name/],
    [{ DEAD_LETTER_MAX_BYTES: '1023' }, 'DEAD_LETTER_MAX_BYTES', '1023', INT(1024, 1024 ** 4)],
    [{ DEAD_LETTER_FILES: '0' }, 'DEAD_LETTER_FILES', '0', INT(1, 1000)],
    [{ PERCENTILES: '50,101' }, 'PERCENTILES', '50,101', /numbers from 0 to 100/],
    [{ PERCENTILE_ACCURACY: '0.5' }, 'PERCENTILE_ACCURACY', '0.5', NUM(0.0001, 0.1)],
    [{ SINK: 'postgres://' }, 'SINK', 'postgres://', /stdout, file:PATH, postgres/],
    [{ SOURCE: 'kafka' }, 'KAFKA_TOPICS', '', /needs at least one topic/],
    [{ KAFKA_TOPICS: 'a b' }, 'KAFKA_TOPICS', 'a b', /topic names of letters/],
    [{ KAFKA_FROM: 'middle' }, 'KAFKA_FROM', 'middle', /one of earliest, latest/],
    [{ KAFKA_SSL: 'yes' }, 'KAFKA_SSL', 'yes', /one of true, false/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_CA: '/nonexistent/ca.pem' }, 'KAFKA_SSL_CA', '/nonexistent/ca.pem', /readable PEM file/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_CERT: '/nonexistent/c.pem' }, 'KAFKA_SSL_CERT', '/nonexistent/c.pem', /readable PEM file/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_KEY: '/nonexistent/k.pem' }, 'KAFKA_SSL_KEY', '/nonexistent/k.pem', /readable PEM file/],
    [{ KAFKA_SSL: 'true', KAFKA_SSL_REJECT_UNAUTHORIZED: 'no' }, 'KAFKA_SSL_REJECT_UNAUTHORIZED', 'no', /one of true, false/],
    [{ KAFKA_SASL_MECHANISM: 'gssapi' }, 'KAFKA_SASL_MECHANISM', 'gssapi', /one of plain, scram-sha-256, scram-sha-512/],
    [{ KAFKA_SASL_MECHANISM: 'plain' }, 'KAFKA_SASL_USERNAME', '', /needs a user name/],
    [{ KAFKA_SESSION_TIMEOUT_MS: '100' }, 'KAFKA_SESSION_TIMEOUT_MS', '100', INT(6000, 300000)],
    [{ KAFKA_HEARTBEAT_INTERVAL_MS: '30000' }, 'KAFKA_HEARTBEAT_INTERVAL_MS', '30000', /lower than KAFKA_SESSION_TIMEOUT_MS \(30000\)/],
    [{ KAFKA_MAX_WAIT_MS: '-1' }, 'KAFKA_MAX_WAIT_MS', '-1', INT(0, 60000)],
    [{ KAFKA_INTAKE_MAX_BYTES: '10' }, 'KAFKA_INTAKE_MAX_BYTES', '10', /integer from 1024/],
    [{ KAFKA_MAX_BYTES_PER_PARTITION: '10' }, 'KAFKA_MAX_BYTES_PER_PARTITION', '10', /integer from 1024/],
    [{ COMMIT_INTERVAL_SECONDS: '0' }, 'COMMIT_INTERVAL_SECONDS', '0', NUM(0.1, 3600)],
    [{ IDLE_FLUSH_SECONDS: 'x' }, 'IDLE_FLUSH_SECONDS', 'x', NUM(0.1, 86400)],
    [{ LAG_INTERVAL_SECONDS: '0' }, 'LAG_INTERVAL_SECONDS', '0', NUM(0.1, 3600)],
    [{ KAFKA_RETRY_MAX_SECONDS: '0' }, 'KAFKA_RETRY_MAX_SECONDS', '0', NUM(1, 3600)],
    [{ GROUP_BY: 'a,,b' }, 'GROUP_BY', 'a,,b', /no empty names/],
    [{ GROUP_BY: 'host, ' }, 'GROUP_BY', 'host,', /no empty names/],
    [{ FORMAT: 'json' }, 'JSON_NAME', '', /FORMAT=json needs/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_VALUE: '=abc' }, 'JSON_VALUE', '=abc', /=NUMBER/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_VALUE: '=' }, 'JSON_VALUE', '=', /=NUMBER/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_VALUE: '=Infinity' }, 'JSON_VALUE', '=Infinity', /=NUMBER/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_VALUE: 'a..b' }, 'JSON_VALUE', 'a..b', /dotted path/],
    [{ FORMAT: 'json', JSON_NAME: '=' }, 'JSON_NAME', '=', /non-empty constant/],
    [{ FORMAT: 'json', JSON_NAME: 'verb.' }, 'JSON_NAME', 'verb.', /dotted path/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_TIMESTAMP: '.ts' }, 'JSON_TIMESTAMP', '.ts', /dotted path/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_UNIT: '=' }, 'JSON_UNIT', '=', /non-empty constant/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_DIMENSIONS: '=x' }, 'JSON_DIMENSIONS', '=x', /NAME=PATH.*empty name/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_DIMENSIONS: 'a,,b' }, 'JSON_DIMENSIONS', 'a,,b', /NAME=PATH/],
    [{ FORMAT: 'ceilometer', CEILOMETER_METADATA: 'a,,b' }, 'CEILOMETER_METADATA', 'a,,b', /comma list of resource_metadata keys or dotted paths/],
    [{ FORMAT: 'ceilometer', CEILOMETER_METADATA: 'flavor.' }, 'CEILOMETER_METADATA', 'flavor.', /comma list of resource_metadata keys or dotted paths/],
    [{ FORMAT: 'ceilometer', CEILOMETER_METADATA: 'a,a' }, 'CEILOMETER_METADATA', 'a,a', /"a" is given twice/],
    [{ CEILOMETER_METADATA: 'instance_type' }, 'CEILOMETER_METADATA', 'instance_type', /applies to FORMAT=ceilometer only \(FORMAT is monasca\)/],
    [{ FORMAT: 'ceilometer', CEILOMETER_METADATA: 'instance_type', MAX_DIMENSION_BYTES: '8' }, 'CEILOMETER_METADATA', 'instance_type', /MAX_DIMENSION_BYTES=8.*"resource_metadata\.instance_type" is 31/],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', 'loud', /fatal, error, warn, info, debug, trace, silent/],
    [{ PROGRESS: 'maybe' }, 'PROGRESS', 'maybe', /auto, on, off/],
    [{ BATCH_MAX_BYTES: '1024' }, 'BATCH_MAX_BYTES', '1024', /at least MAX_MESSAGE_BYTES \(1048576\)/],
    [{ BATCH_MAX_BYTES: '2048', MAX_MESSAGE_BYTES: '4096' }, 'BATCH_MAX_BYTES', '2048', /at least MAX_MESSAGE_BYTES \(4096\)/],
    [{ BATCH_MAX_BYTES: '1023' }, 'BATCH_MAX_BYTES', '1023', INT(1024, 1024 * 1024 * 1024)],
    [{ GEN_START: 'yesterday' }, 'GEN_START', 'yesterday', /ISO 8601/],
    [{ GEN_START: '2020-02-11' }, 'GEN_START', '2020-02-11', /ISO 8601/],
    [{ GEN_START: '2020-02-11T25:00:00Z' }, 'GEN_START', '2020-02-11T25:00:00Z', /ISO 8601/],
    [{ GEN_START: '1581424933000' }, 'GEN_START', '1581424933000', /ISO 8601/],
    [{ METRICS_PORT: '70000' }, 'METRICS_PORT', '70000', INT(0, 65535)],
    [{ METRICS_PORT: '-1' }, 'METRICS_PORT', '-1', INT(0, 65535)],
    [{ METRICS_PORT: 'http' }, 'METRICS_PORT', 'http', INT(0, 65535)],
    [{ ALLOWED_LATENESS_SECONDS: '-1' }, 'ALLOWED_LATENESS_SECONDS', '-1', NUM(0, 604800)],
    [{ ALLOWED_LATENESS_SECONDS: 'soon' }, 'ALLOWED_LATENESS_SECONDS', 'soon', NUM(0, 604800)],
    [{ ALLOWED_LATENESS_SECONDS: 'Infinity' }, 'ALLOWED_LATENESS_SECONDS', 'Infinity', NUM(0, 604800)],
    [{ WATERMARK_CONFIRM_RECORDS: '0' }, 'WATERMARK_CONFIRM_RECORDS', '0', INT(1, 1000000)],
    [{ MAX_SERIES: '0' }, 'MAX_SERIES', '0', INT(1, 100_000_000)],
    [{ MAX_STATE_MB: '0' }, 'MAX_STATE_MB', '0', INT(1, 1_048_576)],
    [{ MAX_DIMENSIONS: '-1' }, 'MAX_DIMENSIONS', '-1', INT(0, 10_000)],
    [{ MAX_MESSAGE_BYTES: '15' }, 'MAX_MESSAGE_BYTES', '15', INT(16, 256 * 1024 * 1024)],
    [{ MAX_NAME_BYTES: '0' }, 'MAX_NAME_BYTES', '0', INT(1, 256 * 1024 * 1024)],
    [{ MAX_NAME_BYTES: '1kB' }, 'MAX_NAME_BYTES', '1kB', INT(1, 256 * 1024 * 1024)],
    [{ MAX_DIMENSION_BYTES: '0' }, 'MAX_DIMENSION_BYTES', '0', INT(1, 256 * 1024 * 1024)],
    [{ MAX_DIMENSION_BYTES: '1.5' }, 'MAX_DIMENSION_BYTES', '1.5', INT(1, 256 * 1024 * 1024)],
    [{ MAX_SERIES_KEY_BYTES: '15' }, 'MAX_SERIES_KEY_BYTES', '15', INT(16, 256 * 1024 * 1024)],
    [{ MAX_SERIES_KEY_BYTES: '268435457' }, 'MAX_SERIES_KEY_BYTES', '268435457', INT(16, 256 * 1024 * 1024)],
    // Names the configuration adds to every record pass the record checks.
    [{ GROUP_BY: `hostname,${'g'.repeat(1025)}` }, 'GROUP_BY', `hostname,${'g'.repeat(1025)}`, /at most MAX_DIMENSION_BYTES=1024 bytes.*is 1025/],
    [{ GROUP_BY: 'hostname,zone', MAX_DIMENSION_BYTES: '4' }, 'GROUP_BY', 'hostname,zone', /at most MAX_DIMENSION_BYTES=4 bytes.*"hostname" is 8/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_DIMENSIONS: 'actor=actor.mbox', MAX_DIMENSION_BYTES: '4' }, 'JSON_DIMENSIONS', 'actor=actor.mbox', /MAX_DIMENSION_BYTES=4.*"actor" is 5/],
    [{ FORMAT: 'json', JSON_NAME: '=events', MAX_NAME_BYTES: '5' }, 'JSON_NAME', '=events', /MAX_NAME_BYTES=5.*"events" is 6/],
    [{ FORMAT: 'json', JSON_NAME: 'n', JSON_UNIT: '=µs', MAX_NAME_BYTES: '2' }, 'JSON_UNIT', '=µs', /MAX_NAME_BYTES=2.*"µs" is 3/],
    [{ MAX_FUTURE_SECONDS: '-1' }, 'MAX_FUTURE_SECONDS', '-1', /number from 0 to/],
    [{ MAX_FUTURE_SECONDS: 'NaN' }, 'MAX_FUTURE_SECONDS', 'NaN', /number from 0 to/],
    [{ BATCH_SIZE: '0' }, 'BATCH_SIZE', '0', INT(1, 100_000)],
    [{ BATCH_SIZE: '100001' }, 'BATCH_SIZE', '100001', INT(1, 100_000)],
    [{ POOL_QUEUE: '0' }, 'POOL_QUEUE', '0', INT(1, 10000)],
    [{ POOL_QUEUE: 'many' }, 'POOL_QUEUE', 'many', INT(1, 10000)],
    [{ WORKER_MAX_MEMORY_MB: '8' }, 'WORKER_MAX_MEMORY_MB', '8', INT(16, 65536)],
    [{ TASK_TIMEOUT_SECONDS: '0' }, 'TASK_TIMEOUT_SECONDS', '0', NUM(0.1, 86400)],
    [{ GEN_COUNT: '-5' }, 'GEN_COUNT', '-5', /integer from 0 to/],
    [{ GEN_METRICS: '0' }, 'GEN_METRICS', '0', INT(1, 10_000_000)],
    [{ GEN_HOSTS: '0' }, 'GEN_HOSTS', '0', INT(1, 1_000_000)],
    [{ GEN_INTERVAL_SECONDS: '0' }, 'GEN_INTERVAL_SECONDS', '0', NUM(0.001, 86400)],
    [{ GEN_SEED: '4294967296' }, 'GEN_SEED', '4294967296', INT(0, 4294967295)],
    [{ GEN_RATE: '-1' }, 'GEN_RATE', '-1', /number from 0 to/],
    [{ SHUTDOWN_TIMEOUT_SECONDS: '0' }, 'SHUTDOWN_TIMEOUT_SECONDS', '0', NUM(1, 3600)],
    [{ LATE_RECORDS: 'drop' }, 'LATE_RECORDS', 'drop', /one of auto, dead-letter, amend/],
    [{ LANE_STATE: 'elsewhere' }, 'LANE_STATE', 'elsewhere', /one of auto, main, worker/],
    [{ LANE_STATE: 'worker', WORKER_THREADS: '0' }, 'LANE_STATE', 'worker', /needs WORKER_THREADS >= 1/],
    [{ LATE_RECORDS: 'amend', AMEND_HORIZON_SECONDS: '0' }, 'AMEND_HORIZON_SECONDS', '0', NUM(1, 2592000)],
    // SOURCE=redis (src/sources/redis/config.ts)
    [{ REDIS_URL: 'http://h:1' }, 'REDIS_URL', 'http://h:1', /redis:\/\/ or rediss:\/\//],
    [{ SOURCE: 'redis' }, 'REDIS_STREAMS', '', /needs at least one stream key/],
    [{ REDIS_STREAMS: 'a b' }, 'REDIS_STREAMS', 'a b', /distinct stream keys/],
    [{ REDIS_GROUP_ID: 'g g' }, 'REDIS_GROUP_ID', 'g g', /letters, digits/],
    [{ REDIS_CONSUMER: 'c/1' }, 'REDIS_CONSUMER', 'c/1', /letters, digits/],
    [{ REDIS_FIELD: 'x'.repeat(513) }, 'REDIS_FIELD', 'x'.repeat(513), /at most 512 bytes/],
    [{ REDIS_FROM: 'start' }, 'REDIS_FROM', 'start', /one of earliest, latest/],
    [{ REDIS_READ_COUNT: '0' }, 'REDIS_READ_COUNT', '0', INT(1, 100000)],
    [{ REDIS_READ_MAX_BYTES: '1' }, 'REDIS_READ_MAX_BYTES', '1', INT(1024, 1073741824)],
    [{ REDIS_BLOCK_MS: '0' }, 'REDIS_BLOCK_MS', '0', INT(1, 60000)],
    [{ REDIS_CLAIM_IDLE_MS: '2000', REDIS_BLOCK_MS: '5000' }, 'REDIS_CLAIM_IDLE_MS', '2000', /higher than REDIS_BLOCK_MS \(5000\)/],
    [{ REDIS_TLS_CA: '/nonexistent/ca.pem' }, 'REDIS_TLS_CA', '/nonexistent/ca.pem', /readable PEM file/],
    [{ REDIS_TLS_REJECT_UNAUTHORIZED: 'yes' }, 'REDIS_TLS_REJECT_UNAUTHORIZED', 'yes', /one of true, false/],
    // The statistics API's options (all their messages: test/unit/api-config.test.ts).
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_PORT: '65536' }, 'API_PORT', '65536', INT(0, 65535)],
    [{ API_TOKENS_FILE: '/nonexistent/tokens' }, 'API_TOKENS_FILE', '/nonexistent/tokens', /needs SINK=postgres/],
    [{ API_AUTH: 'basic' }, 'API_AUTH', 'basic', /one of token, none is allowed/],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_CONNECTIONS: '0' }, 'API_CONNECTIONS', '0', INT(1, 1000)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_TOKEN_QUERIES: '5' }, 'API_TOKEN_QUERIES', '5', /more than API_CONNECTIONS \(4\)/],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_TOKEN_WAITING: '-1' }, 'API_TOKEN_WAITING', '-1', INT(0, 100000)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_MAX_WAITING: '0' }, 'API_MAX_WAITING', '0', INT(1, 100000)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_MAX_RESULTS: '100001' }, 'API_MAX_RESULTS', '100001', INT(1, 100000)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_MAX_SKETCH_BUCKETS: '10' }, 'API_MAX_SKETCH_BUCKETS', '10', INT(1000, 100000000)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_SEND_TIMEOUT_SECONDS: '0' }, 'API_SEND_TIMEOUT_SECONDS', '0', NUM(0.1, 3600)],
    [{ SINK: 'postgres://u@h/db', API_AUTH: 'none', API_MAX_CONNECTIONS: '0' }, 'API_MAX_CONNECTIONS', '0', INT(1, 1000000)],
  ];
  for (const [env, variable, value, allowed] of cases) bad(t, env, variable, value, allowed, `${JSON.stringify(env)}`);

  // An entry with an empty path: the message shows only the empty path, not what the user wrote.
  let err: unknown;
  try {
    parseConfig({ FORMAT: 'json', JSON_NAME: 'n', JSON_DIMENSIONS: 'host=hostname,zone=' }, CPUS);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError && err.variable === 'JSON_DIMENSIONS', 'JSON_DIMENSIONS with an empty path is a ConfigError');
  t.match(err instanceof Error ? err.message : '', /dotted path/, 'JSON_DIMENSIONS empty path: says a dotted path is allowed');
  t.match(err instanceof Error ? err.message : '', /zone=/, 'JSON_DIMENSIONS empty path: message shows the offending entry "zone="');

  // Every option with a checked value has at least one case above.
  const tested = new Set(cases.map(([, v]) => v));
  const unchecked = new Set(['KAFKA_GROUP_ID', 'KAFKA_CLIENT_ID', 'KAFKA_SASL_PASSWORD', 'METRICS_HOST', 'API_HOST', 'JSON_NAME', 'JSON_UNIT', 'JSON_DIMENSIONS', 'JSON_TIMESTAMP', 'JSON_VALUE']);
  for (const o of OPTIONS) if (!unchecked.has(o.env)) t.ok(tested.has(o.env), `${o.env} has a validation case`);
});

t.test('invalid calendar dates are rejected', async (t) => {
  // Date.parse rolls 2020-02-30 over to 2020-03-01 instead of failing.
  let err: unknown;
  try {
    parseConfig({ GEN_START: '2020-02-30T00:00:00Z' }, CPUS);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError, 'GEN_START=2020-02-30T00:00:00Z is a ConfigError');
});

t.test('WORKER_THREADS=auto uses the CpuInfo passed in', async (t) => {
  const auto = (usable: number): number => parseConfig({ WORKER_THREADS: 'auto', LANE_STATE: 'main' }, { usable, host: 64, quota: usable, source: 'fake' }).workerThreads;
  t.equal(auto(4), 3, 'usable 4 -> 3');
  t.equal(auto(2), 1, 'usable 2 -> 1');
  t.equal(auto(1), 1, 'usable 1 -> 1 (never 0: 0 would mean decode on the main thread)');
  t.equal(auto(64), 63, 'usable 64 -> 63');
  t.equal(parseConfig({}, { usable: 1, host: 1, quota: null, source: 'host' }).workerThreads, 1, 'default is auto');
  const c = parseConfig({ WORKER_THREADS: 'auto', LANE_STATE: 'main' }, { usable: 8, host: 8, quota: null, source: 'host CPUs (no cgroup quota)' });
  t.match(c.workerThreadsReason, /8 usable CPUs \(host CPUs \(no cgroup quota\)\)/, 'reason names the CPU count and source');
  t.equal(c.poolQueue, 2 * 7 + 1);
  t.equal(defaultThreads({ usable: 3, host: 3, quota: null, source: '' }), 2);
  // The lanes in their owners: the main thread only moves bytes, so every usable CPU gets an owner.
  const owned = (usable: number) => parseConfig({ LANE_STATE: 'worker', WORKER_THREADS: 'auto' }, { usable, host: 64, quota: usable, source: 'fake' });
  t.equal(owned(4).workerThreads, 4, 'LANE_STATE=worker, usable 4 -> 4');
  t.equal(owned(1).workerThreads, 1, 'LANE_STATE=worker, usable 1 -> 1');
  t.equal(owned(4).poolQueue, 2 * 4 + 1, 'POOL_QUEUE auto follows');
  t.match(owned(2).workerThreadsReason, /2 usable CPUs \(fake\), every one to a lane owner \(the lanes live in their owner workers/);
  t.equal(parseConfig({ LANE_STATE: 'worker', WORKER_THREADS: '1' }, { usable: 4, host: 4, quota: null, source: '' }).workerThreads, 1, 'a number stays that number');
  t.equal(defaultThreads({ usable: 0, host: 0, quota: null, source: '' }), 1, 'never below 1');
});

t.test('a file: auto gives every usable CPU to decode workers, large batches and a bounded number held', async (t) => {
  const file = (env: Record<string, string>, usable: number) => parseConfig({ SOURCE: 'file:/data/in.ndjson', ...env }, { usable, host: 64, quota: usable, source: 'fake' });
  const two = file({}, 2);
  t.equal(two.laneState, 'main', 'a file stays one lane on the main thread');
  t.equal(two.workerThreads, 2, 'usable 2 -> 2 decode workers');
  t.match(two.workerThreadsReason, /2 usable CPUs \(fake\), every one to a decode worker \(a file's batches are large/);
  t.equal(two.poolQueue, 3, 'POOL_QUEUE auto = threads + 1');
  t.equal(two.batchSize, 32_000, 'BATCH_SIZE auto = 32000 for a file');
  t.equal(two.batchMaxBytes, 16 * 1024 * 1024, 'BATCH_MAX_BYTES auto: 128 MiB / 6 batches held, at most 16 MiB');
  t.equal(two.batchReason, 'BATCH_SIZE=auto: 32000 messages, BATCH_MAX_BYTES=auto: 16777216 bytes (a file is read whole, so its batches are large; the 2 x POOL_QUEUE = 6 batches held stay within 134217728 bytes)');
  t.match(file({ BATCH_SIZE: '1000' }, 2).batchReason, /^BATCH_MAX_BYTES=auto: 16777216 bytes \(a file/, 'a set BATCH_SIZE is not called auto');
  // Many workers: more batches held, so each is smaller, never below 4 MiB.
  const many = file({}, 16);
  t.equal(many.poolQueue, 17);
  t.equal(many.batchMaxBytes, 4 * 1024 * 1024, '128 MiB / 34 batches held is under 4 MiB: 4 MiB');
  const six = file({}, 6);
  t.equal(six.batchMaxBytes, Math.floor(128 * 1024 * 1024 / 14), '128 MiB / 14 batches held');
  t.ok(six.batchMaxBytes * 2 * six.poolQueue <= 128 * 1024 * 1024, 'the batches held fit 128 MiB');
  // Messages larger than the auto bound still fit a batch.
  t.equal(file({ MAX_MESSAGE_BYTES: String(32 * 1024 * 1024) }, 2).batchMaxBytes, 32 * 1024 * 1024, 'never below MAX_MESSAGE_BYTES');
  // Set values stay as set; other sources keep the stream defaults.
  const set = file({ BATCH_SIZE: '1000', BATCH_MAX_BYTES: '2097152', POOL_QUEUE: '9', WORKER_THREADS: '1' }, 2);
  t.same([set.batchSize, set.batchMaxBytes, set.poolQueue, set.workerThreads], [1000, 2_097_152, 9, 1]);
  t.equal(set.batchReason, 'BATCH_SIZE and BATCH_MAX_BYTES set');
  const stdin = parseConfig({ SOURCE: 'stdin' }, { usable: 2, host: 2, quota: null, source: 'fake' });
  t.same([stdin.batchSize, stdin.batchMaxBytes, stdin.workerThreads, stdin.poolQueue], [4000, 4 * 1024 * 1024, 1, 3], 'stdin may be a live stream: the stream defaults, usable - 1');
  t.throws(() => parseConfig({ BATCH_SIZE: 'big' }), /BATCH_SIZE/, 'a word other than auto is refused, naming the variable');
});

t.test('argvToEnv', async (t) => {
  const env = { WORKER_THREADS: '7', SOURCE: 'stdin' } as const;
  const a = argvToEnv(['--worker-threads', '2'], env);
  t.not(a, 'help');
  if (a === 'help' || a === 'version') return;
  t.equal(a['WORKER_THREADS'], '2', '--worker-threads 2');
  t.equal(a['SOURCE'], 'stdin', 'other variables kept');
  t.same(env, { WORKER_THREADS: '7', SOURCE: 'stdin' }, 'input env not modified');
  const b = argvToEnv(['--worker-threads=2', '--group-by=hostname,service', '--json-dimensions=a=b.c'], {});
  t.same(b, { WORKER_THREADS: '2', GROUP_BY: 'hostname,service', JSON_DIMENSIONS: 'a=b.c' }, '--flag=value, "=" inside the value kept');
  const empty = argvToEnv(['--group-by='], { GROUP_BY: 'x' });
  t.same(empty, { GROUP_BY: '' }, '--flag= sets an empty value');
  t.same(argvToEnv([], { A: 'b' }), { A: 'b' }, 'no flags: the env');
  const last = argvToEnv(['--window-seconds', '10', '--window-seconds', '20'], {});
  t.same(last, { WINDOW_SECONDS: '20' }, 'the last flag wins');

  // Every option has its flag.
  for (const o of OPTIONS) {
    const r = argvToEnv([flagFor(o.env), 'v1'], {});
    t.same(r, { [o.env]: 'v1' }, `${flagFor(o.env)} sets ${o.env}`);
  }
  t.equal(flagFor('WORKER_THREADS'), '--worker-threads');
  t.equal(flagFor('ALLOWED_LATENESS_SECONDS'), '--allowed-lateness-seconds');

  // Flags feed parseConfig.
  const parsed = argvToEnv(['--window-seconds', '10', '--format=ceilometer'], { WINDOW_SECONDS: '30' });
  if (parsed !== 'help' && parsed !== 'version') {
    const c = parseConfig(parsed, CPUS);
    t.equal(c.windowSeconds, 10, 'flag wins over the environment');
    t.same(c.format, { kind: 'ceilometer' });
  }

  t.equal(argvToEnv(['--help'], {}), 'help');
  t.equal(argvToEnv(['-h'], {}), 'help');
  t.equal(argvToEnv(['--worker-threads', '2', '--help'], {}), 'help', '--help anywhere');

  t.equal(argvToEnv(['--version'], {}), 'version');
  t.equal(argvToEnv(['--bogus', '--version'], {}), 'version', '--version anywhere, before an unknown flag is judged');
  t.equal(argvToEnv(['--version', '--help'], {}), 'help', '--help wins');

  expectConfigError(t, () => argvToEnv(['--bogus', '1'], {}), 'argument', '--bogus', /known flag.*--worker-threads 2/, 'unknown flag');
  expectConfigError(t, () => argvToEnv(['--kafka-sasl-pasword=hunter2'], {}), 'argument', '--kafka-sasl-pasword', /known flag/, 'unknown flag with =: the name, not the value');
  try {
    argvToEnv(['--kafka-sasl-pasword=hunter2'], {});
  } catch (err) {
    t.notMatch((err as Error).message, /hunter2/, 'the value after = is never echoed');
  }
  expectConfigError(t, () => argvToEnv(['positional'], {}), 'argument', 'positional', /known flag/, 'positional argument');
  expectConfigError(t, () => argvToEnv(['--WORKER-THREADS', '2'], {}), 'argument', '--WORKER-THREADS', /known flag/, 'flags are lower case');
  expectConfigError(t, () => argvToEnv(['--worker_threads', '2'], {}), 'argument', '--worker_threads', /known flag/, 'dashes, not underscores');
  expectConfigError(t, () => argvToEnv(['--worker-threads'], {}), 'WORKER_THREADS', '', /--worker-threads needs a value/, 'missing value');
});

t.test('parseCpuMax', async (t) => {
  t.equal(parseCpuMax('max 100000'), null, 'max = unlimited');
  t.equal(parseCpuMax('max'), null);
  t.equal(parseCpuMax('150000 100000'), 1.5);
  t.equal(parseCpuMax('200000 50000'), 4);
  t.equal(parseCpuMax('50000 100000'), 0.5);
  t.equal(parseCpuMax('250000'), 2.5, 'period defaults to 100000');
  t.equal(parseCpuMax('0 100000'), null, 'zero quota is no quota');
  t.equal(parseCpuMax('abc 100000'), null, 'garbage is no quota');
  t.equal(parseCpuMax('100000 0'), null, 'zero period is no quota');
  t.equal(parseCpuMax(''), null);
});

t.test('detectCpus with a fake cgroup root', async (t) => {
  const host = availableParallelism();
  const root = mkdtempSync(join(tmpdir(), 'streamstats-cgroup-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  let n = 0;
  const dir = (files: Record<string, string>): string => {
    const d = join(root, String(n++));
    mkdirSync(d, { recursive: true });
    for (const [rel, text] of Object.entries(files)) {
      mkdirSync(join(d, rel, '..'), { recursive: true });
      writeFileSync(join(d, rel), text);
    }
    return d;
  };

  const none = detectCpus(dir({}));
  t.same(none, { usable: host, host, quota: null, source: 'host CPUs (no cgroup quota)' }, 'no cgroup files: host CPUs');

  const unlimited = detectCpus(dir({ 'cpu.max': 'max 100000\n' }));
  t.equal(unlimited.quota, null, 'v2 max');
  t.equal(unlimited.usable, host);

  const v2 = detectCpus(dir({ 'cpu.max': '150000 100000\n' }));
  t.equal(v2.quota, 1.5, 'v2 quota');
  t.equal(v2.host, host);
  t.equal(v2.usable, Math.min(host, 1), '1.5 CPUs -> 1 usable');
  t.match(v2.source, /cgroup v2 cpu\.max "150000 100000"/, 'source names cpu.max and its content');

  const four = detectCpus(dir({ 'cpu.max': '400000 100000' }));
  t.equal(four.quota, 4);
  t.equal(four.usable, Math.min(host, 4), 'quota 4 capped by the host');

  const half = detectCpus(dir({ 'cpu.max': '50000 100000' }));
  t.equal(half.usable, 1, 'half a CPU -> 1, never 0');

  const huge = detectCpus(dir({ 'cpu.max': `${(host + 100) * 100000} 100000` }));
  t.equal(huge.usable, host, 'a quota above the host count is capped by the host');

  const v1 = detectCpus(dir({ 'cpu/cpu.cfs_quota_us': '250000\n', 'cpu/cpu.cfs_period_us': '100000\n' }));
  t.equal(v1.quota, 2.5, 'v1 quota');
  t.equal(v1.usable, Math.min(host, 2));
  t.match(v1.source, /cgroup v1/);

  const v1acct = detectCpus(dir({ 'cpu,cpuacct/cpu.cfs_quota_us': '300000', 'cpu,cpuacct/cpu.cfs_period_us': '100000' }));
  t.equal(v1acct.quota, 3, 'v1 under cpu,cpuacct');

  const v1unl = detectCpus(dir({ 'cpu/cpu.cfs_quota_us': '-1', 'cpu/cpu.cfs_period_us': '100000' }));
  t.equal(v1unl.quota, null, 'v1 quota -1 = unlimited');
  t.equal(v1unl.usable, host);

  const both = detectCpus(dir({ 'cpu.max': 'max 100000', 'cpu/cpu.cfs_quota_us': '100000', 'cpu/cpu.cfs_period_us': '100000' }));
  t.equal(both.quota, null, 'v2 present: v1 files are not read');

  // End to end: auto threads from a detected quota.
  const c = parseConfig({ WORKER_THREADS: 'auto', LANE_STATE: 'main' }, detectCpus(dir({ 'cpu.max': '300000 100000' })));
  t.equal(c.workerThreads, Math.max(1, Math.min(host, 3) - 1), 'auto threads follow the cgroup quota');
});

t.test('secrets never reach the start-up log: SASL password and TLS key are redacted', async (t) => {
  const c = parseConfig({ SOURCE: 'kafka', KAFKA_TOPICS: 'm', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'hunter2-secret' }, CPUS);
  t.equal(c.kafka.sasl?.password, 'hunter2-secret', 'the client gets the password');
  const logged = JSON.stringify(redactedConfig(c));
  t.notMatch(logged, /hunter2-secret/, 'the log does not');
  t.match(logged, /\[redacted\]/);
});

t.test('a postgres:// sink URL never shows its password in errors or the start-up log', async (t) => {
  const c = parseConfig({ SINK: 'postgres://app:s3cr3t-pw@db.example:5432/stats' }, CPUS);
  t.same(c.sink, { kind: 'postgres', url: 'postgres://app:s3cr3t-pw@db.example:5432/stats' });
  t.notMatch(JSON.stringify(redactedConfig(c)), /s3cr3t-pw/);
  t.match(JSON.stringify(redactedConfig(c)), /postgres:\/\/app:\*\*\*@db\.example:5432\/stats/);
  let err: unknown;
  try {
    parseConfig({ SINK: 'mysql://app:s3cr3t-pw@db/x' }, CPUS);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof ConfigError);
  t.notMatch((err as Error).message, /s3cr3t-pw/, 'the rejected value is shown without its password');
});

t.test('unknownVariables: variables that look like options but are none, with the closest option', async (t) => {
  const found = (env: Record<string, string>, extra: string[] = []) => unknownVariables(env, extra);
  t.same(found({ WORKER_THREAD: '2' }), [{ name: 'WORKER_THREAD', closest: 'WORKER_THREADS' }], 'WORKER_THREAD=2: one letter short');
  t.same(found({ KAFKA_TOPIC: 'm', WINDOW_SECOND: '10', SOUCRE: 'kafka', SINKS: 'stdout' }).map((f) => [f.name, f.closest]), [
    ['KAFKA_TOPIC', 'KAFKA_TOPICS'],
    ['SINKS', 'SINK'],
    ['SOUCRE', 'SOURCE'],
    ['WINDOW_SECOND', 'WINDOW_SECONDS'],
  ], 'missing and extra letters, swapped neighbours; sorted by name');
  t.same(found({ KAFKA_GROUP: 'g', GEN_SPEED: '3', MAX_ROWS: '1' }).map((f) => f.name), ['GEN_SPEED', 'KAFKA_GROUP', 'MAX_ROWS'], 'a prefix two or more options share is ours, however far the rest is');
  t.equal(found({ KAFKA_GROUP: 'g' })[0]?.closest, 'KAFKA_GROUP_ID', 'with the closest option even then');

  const quiet = {
    WORKER_THREADS: '2', SINK: 'stdout', PATH: '/bin', HOME: '/root', TERM: 'xterm', LANG: 'C', CI: 'true', NODE_ENV: 'production',
    PG_URL: 'postgres://x@y/z', LINK: 'x', PGHOST: 'db', HOSTNAME: 'box', LINES: '40', npm_config_cache: '/c',
    KAFKA_PORT: '9092', KAFKA_CONTROLLER_PORT: '9093', KAFKA_HEAP_OPTS: '-Xmx1G',
    // What Kubernetes injects for Services "kafka" and "streamstats" of the namespace.
    KAFKA_SERVICE_HOST: '10.0.0.7', KAFKA_SERVICE_PORT: '9092', KAFKA_SERVICE_PORT_CLIENT: '9092', KAFKA_PORT_9092_TCP: 'tcp://10.0.0.7:9092',
    KAFKA_PORT_9092_TCP_ADDR: '10.0.0.7', KAFKA_PORT_9092_TCP_PORT: '9092', KAFKA_PORT_9092_TCP_PROTO: 'tcp',
    STREAMSTATS_PORT: 'tcp://10.0.0.8:9464', STREAMSTATS_SERVICE_HOST: '10.0.0.8',
  };
  t.same(found(quiet), [], 'options, the usual system variables, scripts/kafka.sh\'s and Kubernetes\' service links: no warning');
  t.same(found({ METRICS_PROT: '1' }).map((f) => f.closest), ['METRICS_PORT'], 'a typo of METRICS_PORT is still caught');
  t.same(found({ PRODUCE_PARTITIONS: '6', PRODUCE_PARTITION: '6' }, ['PRODUCE_PARTITIONS']), [{ name: 'PRODUCE_PARTITION', closest: 'PRODUCE_PARTITIONS' }], 'a command\'s own variables count as known');

  const line = unknownVariablesWarning(found({ WORKER_THREAD: '2', KAFKA_SASL_PASWORD: 'hunter2' }));
  t.equal(line, 'ignoring environment variables that are not options: KAFKA_SASL_PASWORD (did you mean KAFKA_SASL_PASSWORD?), WORKER_THREAD (did you mean WORKER_THREADS?); see --help');
  t.notMatch(line ?? '', /hunter2|\n/, 'one line, names only: never a value');
  t.equal(unknownVariablesWarning([]), null, 'nothing to say: no line');
  t.doesNotThrow(() => parseConfig({ WORKER_THREAD: '2' }, CPUS), 'and never fatal: the configuration still parses');
});

t.test('OUTPUT_COMPRESSION=zstd: accepted where node:zlib compresses zstd (Node 24 does), refused elsewhere', async (t) => {
  const env = { SINK: 'kafka', OUTPUT_TOPIC: 'o', OUTPUT_COMPRESSION: 'zstd' };
  if (zstdAvailable()) {
    const sink = parseConfig(env, CPUS).sink;
    t.equal(sink.kind === 'kafka' ? sink.compression : null, 'zstd');
  } else {
    expectConfigError(t, () => parseConfig(env, CPUS), 'OUTPUT_COMPRESSION', 'zstd', /one of none, gzip, snappy, lz4/, 'zstd without node:zlib zstd');
  }
  if (Number(process.versions.node.split('.')[0]) >= 24) t.ok(zstdAvailable(), 'on Node 24 zstd is producible');
});

t.test('the table drives the parser: every typed row accepts its bounds and rejects just outside them, with its message', async (t) => {
  for (const o of OPTIONS as readonly OptionSpec[]) {
    if (o.type === 'int' || o.type === 'number') {
      // Rows checked against each other: BATCH_MAX_BYTES >= MAX_MESSAGE_BYTES, heartbeat < session timeout.
      const base = { BATCH_MAX_BYTES: { MAX_MESSAGE_BYTES: '16' }, MAX_MESSAGE_BYTES: { BATCH_MAX_BYTES: String(1024 ** 3) } }[o.env as string] ?? {};
      const bounds = o.env === 'KAFKA_HEARTBEAT_INTERVAL_MS' ? [o.min] : [o.min, o.max];
      for (const ok of bounds) t.doesNotThrow(() => parseConfig({ ...base, [o.env]: String(ok) }, CPUS), `${o.env}=${ok} (a bound) is accepted`);
      const what = o.type === 'int' ? 'an integer' : 'a number';
      for (const bad of [o.min - 1, o.max + (o.type === 'int' ? 1 : o.max)]) {
        expectConfigError(t, () => parseConfig({ ...base, [o.env]: String(bad) }, CPUS), o.env, String(bad), new RegExp(`${what} from ${o.min} to ${o.max} is allowed`), `${o.env}=${bad}`);
      }
      if (o.type === 'int') expectConfigError(t, () => parseConfig({ [o.env]: '1.5' }, CPUS), o.env, '1.5', /an integer from/, `${o.env}=1.5 (not whole)`);
      for (const word of o.type === 'int' ? o.also ?? [] : []) t.doesNotThrow(() => parseConfig({ [o.env]: word }, CPUS), `${o.env}=${word}`);
    } else if (o.type === 'enum') {
      expectConfigError(t, () => parseConfig({ SOURCE: 'kafka', KAFKA_TOPICS: 'm', SINK: 'kafka', OUTPUT_TOPIC: 'o', [o.env]: 'bogus' }, CPUS), o.env, 'bogus', /one of .* is allowed/, `${o.env}=bogus`);
    }
  }
});

t.test('--help and the README table say what each typed row allows', async (t) => {
  const help = helpText();
  const table = optionsMarkdownTable();
  for (const o of OPTIONS as readonly OptionSpec[]) {
    const allowed = allowedText(o);
    if (o.type === undefined || o.type === 'text') {
      t.equal(allowed, '', `${o.env}: checked by its component, no generic range`);
      continue;
    }
    t.ok(help.includes(`[${allowed}]`), `--help shows ${o.env}: [${allowed}]`);
    t.ok(table.includes(`| ${allowed.replace(/\|/g, '\\|')} |`), `README table shows ${o.env}: ${allowed}`);
  }
  t.equal(allowedText(specOf('WORKER_THREADS')), 'integer 0..256 or auto');
  t.equal(allowedText(specOf('KAFKA_FROM')), 'earliest | latest');
  t.match(table, /\| `KAFKA_SASL_PASSWORD` \|.*secret: never logged/, 'secret rows say so');
  t.match(help, /KAFKA_SASL_PASSWORD .*secret: never logged/, 'in --help too');
});

const SECRET = 'Zq7-s3cr3t';

t.test('redactUrl: user info and password-like query parameters of any URL, case-insensitive', async (t) => {
  t.equal(redactUrl(`postgres://app:${SECRET}@db:5432/x`), 'postgres://app:***@db:5432/x', 'the password, the user name kept');
  t.equal(redactUrl(`https://${SECRET}@example.com/x`), 'https://***@example.com/x', 'a lone user name may be a token');
  for (const p of ['password', 'PASSWORD', 'passwd', 'Pwd', 'token', 'access_token', 'secret', 'client_secret', 'sslkey', 'sslpassword', 'api_key']) {
    const u = redactUrl(`postgres://db/x?sslmode=require&${p}=${SECRET}&application_name=ss`);
    t.equal(u, `postgres://db/x?sslmode=require&${p}=***&application_name=ss`, `?${p}= is redacted, other parameters kept`);
  }
  t.equal(redactUrl(`postgres://app:${encodeURIComponent('p@ss/w:rd')}@db/x`), 'postgres://app:***@db/x', 'a percent-encoded password');
  t.equal(redactUrl('postgres://app:se/cr@t@db/x'), 'postgres://app:***@db/x', 'an unencoded "/" and "@" in a password: everything up to the last "@"');
  t.equal(redactUrl('stdout'), 'stdout', 'not a URL: unchanged');
  t.equal(redactUrl('http://127.0.0.1:9464/metrics'), 'http://127.0.0.1:9464/metrics', 'no credentials: unchanged');
  t.equal(redactSecrets(`connect failed: postgres://u:${SECRET}@h/d?password=${SECRET} (code 28P01)`), 'connect failed: postgres://u:***@h/d?password=*** (code 28P01)', 'URLs inside free text');
  t.equal(redactSecrets(`auth failed for ${SECRET}`, [SECRET]), 'auth failed for ***', 'a known secret anywhere');
  t.equal(redactSecrets(`x ${encodeURIComponent('p@ss/w:rd')} y`, ['p@ss/w:rd']), 'x *** y', 'and its percent-encoded form');
});

t.test('a ?password= in the SINK URL: not in the start-up log, and among the secrets every printed line is cleaned of', async (t) => {
  const c = parseConfig({ SINK: `postgres://app@db:5432/stats?sslmode=require&password=${SECRET}` }, CPUS);
  const logged = JSON.stringify(redactedConfig(c));
  t.notMatch(logged, new RegExp(SECRET), 'the start-up log does not show it');
  t.match(logged, /password=\*\*\*/, 'the parameter is there, its value redacted');
  t.match(logged, /sslmode=require/, 'other parameters are shown');
  t.ok(configSecrets(c).includes(SECRET), 'configSecrets has the value');
  const summary = redactDeep({ sink: `postgres://app@db:5432/stats?sslmode=require&password=${SECRET}`, rows: 3 }, configSecrets(c));
  t.same(summary, { sink: 'postgres://***@db:5432/stats?sslmode=require&password=***', rows: 3 }, 'redactDeep cleans a summary-shaped object (a lone user name too)');
});

t.test('config errors never quote a secret value', async (t) => {
  // An unencoded "/" in the password makes the URL unparsable; the old fallback then echoed it whole.
  for (const sink of [`postgres://app:se/${SECRET}@db:5432/x`, `postgres://app:${SECRET}@db:99999999/x`, `mysql://app:${SECRET}@db/x`, `postgres://app:a/b@c@db:99999/x?password=${SECRET}`]) {
    let err: unknown;
    try {
      parseConfig({ SINK: sink }, CPUS);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError && err.variable === 'SINK', `${sink.slice(0, 12)}…: a SINK config error`);
    t.notMatch((err as Error).message, new RegExp(SECRET), 'the message does not contain the password');
    t.match((err as Error).message, /^SINK="[a-z]+:\/\/app:\*\*\*@/, 'the value is shown with its credentials as ***');
  }
  // A row marked secret: the value is never quoted, whatever the check that fails.
  t.equal(showValue('KAFKA_SASL_PASSWORD', SECRET), '[redacted]');
  t.equal(showValue('KAFKA_SSL_KEY', '/etc/tls/key.pem'), '/etc/tls/key.pem', 'a key file: its path may be shown, not its contents');
  t.equal(showValue('KAFKA_TOPICS', 'a b'), 'a b', 'rows not marked secret are quoted as written');
  for (const o of OPTIONS as readonly OptionSpec[]) {
    if (o.secret?.kind === 'value') t.equal(showValue(o.env, SECRET), '[redacted]', `${o.env}: never quoted`);
  }
});

t.test('a TLS key: its contents are redacted in the start-up log and are a secret of the config', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ss-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----\n`;
  writeFileSync(join(dir, 'key.pem'), key);
  writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
  const c = parseConfig({ SOURCE: 'kafka', KAFKA_TOPICS: 'm', KAFKA_SSL: 'true', KAFKA_SSL_KEY: join(dir, 'key.pem'), KAFKA_SSL_CA: join(dir, 'ca.pem') }, CPUS);
  t.equal(c.kafka.ssl?.key, key, 'the client gets the key');
  const logged = redactedConfig(c) as { kafka: { ssl: { key: string; ca: string } } };
  t.equal(logged.kafka.ssl.key, '[redacted]');
  t.equal(logged.kafka.ssl.ca, '[pem]', 'a CA bundle is shortened (bulky, not secret)');
  t.ok(configSecrets(c).includes(key), 'the key contents are a secret');
});

t.test('a mistyped flag is reported by name only, in either form', async (t) => {
  for (const argv of [[`--kafka-sasl-pasword=${SECRET}`], ['--kafka-sasl-pasword', SECRET], ['--worker-threads', '2', `--sink-pasword=${SECRET}`]]) {
    let err: unknown;
    try {
      argvToEnv(argv, {});
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof ConfigError, `${argv.join(' ').replace(SECRET, 'SECRET')}: a ConfigError`);
    t.notMatch((err as Error).message, new RegExp(SECRET), 'without the value');
    t.match((err as Error).message, /^argument="--[a-z-]+pasword" /, 'naming the flag');
  }
});

t.test('a parsed secret that is no string (the API token table) gives its secrets through secretValues()', async (t) => {
  const tokens = { secretValues: () => ['tok-S3cr3t-aaaaaaaaaaaaaaaa'], toJSON: () => ({ tokens: 1 }) };
  const c = { ...parseConfig({}, CPUS), api: { enabled: true, host: '127.0.0.1', port: 0, tokens } };
  t.ok(configSecrets(c).includes('tok-S3cr3t-aaaaaaaaaaaaaaaa'), 'among the config secrets');
  t.equal(redactSecrets('bad token tok-S3cr3t-aaaaaaaaaaaaaaaa', configSecrets(c)), 'bad token ***', 'so no printed line shows it');
});
