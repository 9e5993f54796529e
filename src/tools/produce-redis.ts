#!/usr/bin/env node
// streamstats-produce-redis: writes seed 003's workload, xAPI statements, to a Redis stream (field
// REDIS_FIELD), for demos, tests and benchmarks. Configured by the environment only; any argument
// but --help and --version is refused before a connection is made.
import { parseConfig } from '../config/index.js';
import { versionText } from '../config/version.js';
import { ConfigError } from '../errors.js';
import { connect, type RedisConn } from '../sources/redis/client.js';
import { redactedRedisUrl } from '../sources/redis/config.js';
import { xapiStatements, type XapiWorkload } from '../sources/redis/xapi.js';
import { createLogger } from '../logger.js';
import { timelineStart } from './timeline.js';

export const PRODUCE_REDIS_HELP = [
  'streamstats-produce-redis: writes xAPI statements (seed 003\'s learning events) to a Redis stream.',
  '',
  'Usage: streamstats-produce-redis      (configured by environment variables only)',
  '       streamstats-produce-redis --help | --version',
  '',
  '  REDIS_URL            redis://[USER:PASSWORD@]HOST:PORT or rediss:// (default redis://127.0.0.1:6379)',
  '  REDIS_STREAMS        the first stream is written (default xapi)',
  '  REDIS_FIELD          field of the statement (default data)',
  '  GEN_COUNT            statements (default 1000)',
  '  GEN_SEED             PRNG seed (default 1)',
  '  PRODUCE_LEARNERS     distinct actors (default 500)',
  '  PRODUCE_COURSES      distinct courses (default 10)',
  '  PRODUCE_STEP_MS      event-time step between statements (default 100). Into an empty stream the last',
  '                       statement is now; into one that holds statements the first is after the newest',
  '                       of them and not before now (an idle engine takes them as new, not late), refused',
  '                       if the last would be beyond MAX_FUTURE_SECONDS',
  '  PRODUCE_BATCH        XADDs pipelined at once (default 500; never MULTI, so ids stay ms-seq with small seq)',
].join('\n');

/**
 * The workload; `newestMs` is the newest statement time the stream holds (null: none), and where
 * the timeline starts follows from it (./timeline.ts).
 */
export function parseProduceRedis(env: Readonly<Record<string, string | undefined>>, nowMs: number, newestMs: number | null = null, maxFutureSeconds = 0): XapiWorkload & { batch: number } {
  const int = (name: string, def: number, min: number, max: number) => {
    const s = env[name] ?? String(def);
    const n = Number(s);
    if (!/^\d+$/.test(s) || n < min || n > max) throw new ConfigError(name, s, `an integer from ${min} to ${max} is allowed`);
    return n;
  };
  const count = int('GEN_COUNT', 1000, 0, 1e9);
  const stepMs = int('PRODUCE_STEP_MS', 100, 0, 86_400_000);
  return {
    count,
    seed: int('GEN_SEED', 1, 0, 2 ** 32 - 1),
    learners: int('PRODUCE_LEARNERS', 500, 1, 1e9),
    courses: int('PRODUCE_COURSES', 10, 1, 1e6),
    stepMs,
    startMs: timelineStart({ stepMs, steps: Math.max(0, count - 1), jitterMs: 0 }, nowMs, newestMs, maxFutureSeconds, { name: 'GEN_COUNT', value: count }).startMs,
    batch: int('PRODUCE_BATCH', 500, 1, 100_000),
  };
}

/**
 * The time of the stream's last statement (null when the stream has no entry; 0 when its last entry
 * is not a statement with a timestamp): statements are written in time order.
 */
async function newestStatementMs(redis: RedisConn, stream: string, field: string): Promise<number | null> {
  const last = await redis.send(['XREVRANGE', stream, '+', '-', 'COUNT', '1']);
  if (!Array.isArray(last) || last.length === 0) return null;
  const entry = last[0];
  const fields = Array.isArray(entry) && Array.isArray(entry[1]) ? entry[1] : [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (String(fields[i]) !== field) continue;
    try {
      const ts = Date.parse(String((JSON.parse(String(fields[i + 1])) as { timestamp?: unknown }).timestamp));
      return Number.isFinite(ts) ? ts : 0;
    } catch {
      return 0;
    }
  }
  return 0;
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(`${PRODUCE_REDIS_HELP}\n`);
    return 0;
  }
  if (argv.includes('--version')) {
    process.stdout.write(`${versionText('streamstats-produce-redis')}\n`);
    return 0;
  }
  if (argv.length > 0) {
    const arg = argv[0]!.split('=')[0]!;
    process.stderr.write(`streamstats-produce-redis: argument ${JSON.stringify(arg)} is not valid: no arguments but --help and --version are allowed (configure with environment variables, see --help)\n`);
    return 2;
  }
  let config;
  try {
    config = parseConfig({ ...process.env, SOURCE: 'redis', REDIS_STREAMS: process.env['REDIS_STREAMS'] ?? 'xapi' });
    parseProduceRedis(process.env, Date.now());
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`streamstats-produce-redis: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const redis = await connect(config.redis, logger, 'produce');
  const stream = config.redis.streams[0]!;
  let w;
  try {
    w = parseProduceRedis(process.env, Date.now(), await newestStatementMs(redis, stream, config.redis.field), config.maxFutureSeconds);
  } catch (err) {
    await redis.close();
    if (err instanceof ConfigError) {
      process.stderr.write(`streamstats-produce-redis: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const started = performance.now();
  let sent = 0;
  let pending: Array<Promise<unknown>> = [];
  for (const s of xapiStatements(w)) {
    pending.push(redis.send(['XADD', stream, '*', config.redis.field, s.json]));
    if (pending.length >= w.batch) {
      await Promise.all(pending);
      sent += pending.length;
      pending = [];
    }
  }
  await Promise.all(pending);
  sent += pending.length;
  await redis.close();
  const secs = (performance.now() - started) / 1000;
  process.stderr.write(`streamstats-produce-redis: ${sent.toLocaleString('en-US')} xAPI statements to ${stream} at ${redactedRedisUrl(config.redis)} in ${secs.toFixed(1)} s\n`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`streamstats-produce-redis: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
