// SOURCE=redis options: one defaults constant, one validator. Parsed from the same environment as
// the rest (config/index.ts calls parseRedisConfig), kept here so the Redis source owns its options.
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../../errors.js';
import { redactUrl } from '../../config/redact.js';

export interface RedisConfig {
  /** redis:// or rediss:// (TLS), with an optional ACL user and password. Secret: log redactedRedisUrl(). */
  readonly url: string;
  readonly streams: readonly string[];
  readonly groupId: string;
  /** This instance's consumer name in the group: its lane, its pending entries, its lease. */
  readonly consumer: string;
  readonly field: string;
  /** Where a group created by us starts: the stream's first entry, or only new entries. */
  readonly from: 'earliest' | 'latest';
  readonly readCount: number;
  readonly blockMs: number;
  readonly claimIdleMs: number;
  /** Bytes one read may bring in (ids, field names and values of its entries; an entry larger is read alone). */
  readonly readMaxBytes: number;
  readonly tlsCa: string | undefined;
  readonly tlsRejectUnauthorized: boolean;
}

export const REDIS_DEFAULTS = {
  url: 'redis://127.0.0.1:6379',
  groupId: 'streamstats',
  field: 'data',
  from: 'earliest',
  readCount: 1000,
  blockMs: 1000,
  claimIdleMs: 30_000,
  readMaxBytes: 16 * 1024 * 1024,
} as const;

/** Stream keys are binary-safe in Redis; ours also name rows, metrics and dead letters, so: printable, no comma. */
const STREAM_KEY = /^[^\s,\u0000-\u001f]{1,512}$/u;
const CONSUMER = /^[A-Za-z0-9._:@-]{1,200}$/;

/** `get(name)` returns the variable, or its default from the option table when unset. */
export function parseRedisConfig(get: (name: string) => string, required: boolean): RedisConfig {
  const url = get('REDIS_URL');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('REDIS_URL', redactUrl(url), 'redis://[USER:PASSWORD@]HOST:PORT[/DB] or rediss://… (TLS) is allowed');
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new ConfigError('REDIS_URL', redactUrl(url), 'the scheme must be redis:// or rediss:// (TLS)');
  }
  const streamsText = get('REDIS_STREAMS');
  const streams = streamsText.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (required && streams.length === 0) throw new ConfigError('REDIS_STREAMS', streamsText, 'SOURCE=redis needs at least one stream key');
  if (streams.some((s) => !STREAM_KEY.test(s)) || new Set(streams).size !== streams.length) {
    throw new ConfigError('REDIS_STREAMS', streamsText, 'a comma list of distinct stream keys (no spaces or control characters, at most 512 bytes each) is allowed');
  }
  const consumer = get('REDIS_CONSUMER') === '' ? hostname() : get('REDIS_CONSUMER');
  if (!CONSUMER.test(consumer)) throw new ConfigError('REDIS_CONSUMER', consumer, 'letters, digits and . _ : @ - (at most 200) are allowed');
  const groupId = get('REDIS_GROUP_ID');
  if (!CONSUMER.test(groupId)) throw new ConfigError('REDIS_GROUP_ID', groupId, 'letters, digits and . _ : @ - (at most 200) are allowed');
  const field = get('REDIS_FIELD');
  if (field === '' || Buffer.byteLength(field) > 512) throw new ConfigError('REDIS_FIELD', field, 'a non-empty field name of at most 512 bytes is allowed');
  const from = get('REDIS_FROM');
  if (from !== 'earliest' && from !== 'latest') throw new ConfigError('REDIS_FROM', from, 'one of earliest, latest is allowed');
  const blockMs = int(get, 'REDIS_BLOCK_MS', 1, 60_000);
  const claimIdleMs = int(get, 'REDIS_CLAIM_IDLE_MS', 1000, 86_400_000);
  if (claimIdleMs <= blockMs) {
    throw new ConfigError('REDIS_CLAIM_IDLE_MS', String(claimIdleMs), `must be higher than REDIS_BLOCK_MS (${blockMs}): a live consumer renews its lease between reads`);
  }
  const caPath = get('REDIS_TLS_CA');
  let tlsCa: string | undefined;
  if (caPath !== '') {
    try {
      tlsCa = readFileSync(caPath, 'utf8');
    } catch (err) {
      throw new ConfigError('REDIS_TLS_CA', caPath, `a readable PEM file is required (${(err as Error).message})`);
    }
  }
  const reject = get('REDIS_TLS_REJECT_UNAUTHORIZED');
  if (reject !== 'true' && reject !== 'false') throw new ConfigError('REDIS_TLS_REJECT_UNAUTHORIZED', reject, 'one of true, false is allowed');
  return {
    url,
    streams,
    groupId,
    consumer,
    field,
    from,
    readCount: int(get, 'REDIS_READ_COUNT', 1, 100_000),
    blockMs,
    claimIdleMs,
    readMaxBytes: int(get, 'REDIS_READ_MAX_BYTES', 1024, 1024 * 1024 * 1024),
    tlsCa,
    tlsRejectUnauthorized: reject === 'true',
  };
}

function int(get: (name: string) => string, name: string, min: number, max: number): number {
  const s = get(name);
  const n = Number(s);
  if (!/^\d+$/.test(s) || !Number.isSafeInteger(n) || n < min || n > max) throw new ConfigError(name, s, `an integer from ${min} to ${max} is allowed`);
  return n;
}

/** For logs: the URL without its password. */
export function redactedRedisUrl(c: Pick<RedisConfig, 'url'>): string {
  return redactUrl(c.url);
}
