// The Redis source's control connection (groups, positions, leases, acknowledgements, lag), over
// node-redis v5 with bulk strings as Buffers. The lanes' reads have connections of their own
// (lane-conn.ts), whose replies wire.ts reads as they arrive.
import { createClient, RESP_TYPES } from 'redis';
import type { Logger } from 'pino';
import { StreamstatsError } from '../../errors.js';
import type { Signal } from '../../async/index.js';
import { redactedRedisUrl, type RedisConfig } from './config.js';

export type Reply = Buffer | number | null | Reply[];

/** A connection that returns bulk strings as Buffers; only sendCommand is used. */
export interface RedisConn {
  send(args: readonly string[]): Promise<Reply>;
  /** False while the connection is down and node-redis reconnects (commands wait meanwhile). */
  readonly connected: boolean;
  close(): Promise<void>;
}

const REFUSED = /WRONGPASS|NOAUTH|NOPERM|invalid username-password/;

function refused(cfg: RedisConfig, cause: Error): StreamstatsError {
  return new StreamstatsError('STREAMSTATS_SOURCE', `redis: ${redactedRedisUrl(cfg)} refused the credentials of REDIS_URL (${cause.message})`, { cause, canRetry: false });
}

/**
 * The TLS errors that say the server's certificate is not one we trust (or not the host's): retrying
 * cannot change that, so they are final, as refused credentials are, instead of a reconnect loop
 * behind a /readyz that never turns ready.
 */
const UNTRUSTED = new Set(['SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED', 'CERT_REJECTED', 'INVALID_CA', 'ERR_TLS_CERT_ALTNAME_INVALID']);

/** A final error for a connection that failed on our side's trust in the server's certificate, or on our credentials; null for any other. */
export function finalConnectError(cfg: RedisConfig, cause: Error | undefined): StreamstatsError | null {
  if (cause === undefined) return null;
  if (REFUSED.test(String(cause.message))) return refused(cfg, cause);
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string' && UNTRUSTED.has(code)) {
    return new StreamstatsError('STREAMSTATS_SOURCE', `redis: the certificate of ${redactedRedisUrl(cfg)} is not trusted (${code}: ${cause.message}): set REDIS_TLS_CA to the PEM file of the CA that signed it, or REDIS_TLS_REJECT_UNAUTHORIZED=false to skip the check`, { cause, canRetry: false });
  }
  return null;
}

/** Resolves null when `stop` is raised before the server answered (SIGTERM while Redis is down: no wait). */
export async function connect(cfg: RedisConfig, logger: Logger, name: string): Promise<RedisConn>;
export async function connect(cfg: RedisConfig, logger: Logger, name: string, stop: Signal): Promise<RedisConn | null>;
export async function connect(cfg: RedisConfig, logger: Logger, name: string, stop?: Signal): Promise<RedisConn | null> {
  const tls = cfg.url.startsWith('rediss:');
  const client = createClient({
    url: cfg.url,
    name: `streamstats:${name}`,
    socket: {
      // Reconnect with a capped back-off (commands issued meanwhile wait in node-redis's queue), except
      // when the server refused our credentials or we refused its certificate: retrying cannot help,
      // so the source stops and says so.
      reconnectStrategy: (retries: number, cause: Error) => finalConnectError(cfg, cause) ?? Math.min(5000, 100 * 2 ** Math.min(retries, 6)),
      ...(tls ? { tls: true as const, rejectUnauthorized: cfg.tlsRejectUnauthorized, ...(cfg.tlsCa === undefined ? {} : { ca: cfg.tlsCa }) } : {}),
    },
  });
  // Per command: sendCommand does not see withTypeMapping's proxy options.
  const options = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer, [RESP_TYPES.SIMPLE_STRING]: Buffer } };
  // node-redis emits 'error' for every failed reconnect attempt: logged (rarely), never thrown.
  let lastLog = 0;
  client.on('error', (err: Error) => {
    if (Date.now() - lastLog < 5000) return;
    lastLog = Date.now();
    logger.warn({ err, url: redactedRedisUrl(cfg) }, 'redis: connection error; reconnecting');
  });
  try {
    const connecting = client.connect();
    const stopped = stop?.wait().then(() => 'stopped' as const);
    if ((await Promise.race([connecting.then(() => 'open' as const), ...(stopped === undefined ? [] : [stopped])])) === 'stopped') {
      connecting.catch(() => {});
      client.destroy();
      return null;
    }
  } catch (err) {
    // The first connection's handshake failing on credentials or trust: no retry either.
    throw finalConnectError(cfg, err as Error) ?? err;
  }
  return {
    send: (args) => client.sendCommand(args, options) as Promise<Reply>,
    get connected() {
      return client.isReady;
    },
    close: async () => {
      try {
        await client.close();
      } catch {
        client.destroy();
      }
    },
  };
}

export function text(r: Reply | undefined): string {
  return Buffer.isBuffer(r) ? r.toString('utf8') : r === null || r === undefined ? '' : String(r);
}

/** RESP2 flat [k, v, k, v] -> map of text keys (XINFO replies). */
export function pairs(r: Reply): Map<string, Reply> {
  const m = new Map<string, Reply>();
  if (!Array.isArray(r)) return m;
  for (let i = 0; i + 1 < r.length; i += 2) m.set(text(r[i]), r[i + 1]!);
  return m;
}

export function num(r: Reply | undefined): number | null {
  if (typeof r === 'number') return r;
  if (Buffer.isBuffer(r)) {
    const n = Number(r.toString());
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** Renews a lease only while it is still ours (another instance may hold it after an expiry). */
export const RENEW_LEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
export const RELEASE_LEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/**
 * Acknowledges a consumer's pending entries of a stream in an id range, in Redis: XPENDING pages and
 * an XACK of each, so that no id crosses the connection (decoding every pending entry's XPENDING
 * reply and sending its id back in XACK was the largest part of the source's CPU per entry). At most
 * ARGV[6] pages a call, so a long backlog does not hold Redis in one script. KEYS[1] stream; ARGV
 * group, consumer, start, end (XPENDING's range: '-', an id, or '(' and an id), page size, pages.
 * Reply: {acknowledged, where the next call starts, '' once the range is done}.
 */
export const ACK_RANGE = `
local group, consumer, start, stop, page, pages = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local acked = 0
for _ = 1, pages do
  local p = redis.call('XPENDING', KEYS[1], group, start, stop, page, consumer)
  if #p == 0 then return {acked, ''} end
  local ids = {}
  for i, e in ipairs(p) do ids[i] = e[1] end
  acked = acked + redis.call('XACK', KEYS[1], group, unpack(ids))
  if #p < page then return {acked, ''} end
  start = '(' .. p[#p][1]
end
return {acked, start}`;
