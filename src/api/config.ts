// The statistics API's options (API_HOST, API_PORT, API_TOKENS_FILE, API_AUTH): one defaults
// constant and one validator, called from src/config/index.ts.
//
// The API is served only when it is asked for: with a token file (API_TOKENS_FILE), or with
// API_AUTH=none spelled out. Without either it stays off (a start-up log line says how to turn it on)
// rather than refusing to start: a pipeline that writes to PostgreSQL runs as before, and nobody gets
// an open API by upgrading. It binds 127.0.0.1 by default: tenant statistics are not for the network
// until the operator chooses an interface (a Kubernetes pod sets API_HOST=0.0.0.0 behind its Service).
import { ConfigError } from '../errors.js';
import { loadTokens, TokenFileError, type TokenTable } from './tokens.js';

export const API_DEFAULTS = {
  host: '127.0.0.1',
  /** Ceilometer's own port: clients configured for a Ceilometer endpoint find it where they expect. */
  port: 8777,
  auth: 'token',
  tokensFile: '',
  /** PostgreSQL connections of the API's own pool, and so the answers (query + sending) under way at once. */
  connections: 4,
  /** Of those, one token holds at most this many: a token's flood leaves the rest to the other tokens. */
  tokenQueries: 2,
  /** Requests of one token waiting for its turn; one more gets a 503 with Retry-After at once. */
  tokenWaiting: 8,
  /** Requests waiting in all (every token together); one more gets a 503 at once. */
  maxWaiting: 64,
  /** Result groups one query may build; beyond, a 400 that says how to narrow it. */
  maxResults: 100_000,
  /** Sketch buckets one percentile query may read into memory (12 bytes each on the wire, more as numbers); beyond, a 400. */
  maxSketchBuckets: 1_000_000,
  /** A client that takes no byte of its answer for this long has its connection closed, and the answer's memory freed. */
  sendTimeoutSeconds: 10,
  /** HTTP connections open at once (server.maxConnections); more are closed as they come. */
  maxConnections: 256,
  /** The request head must arrive within this (slow-loris), and the whole request within requestTimeoutMs. */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  /** A query running longer is cancelled by PostgreSQL (a 503 that says so). */
  statementTimeoutMs: 30_000,
} as const;

/** What one token, one query and one connection may hold (README: the statistics API's bounds). */
export interface ApiLimits {
  readonly connections: number;
  readonly tokenQueries: number;
  readonly tokenWaiting: number;
  readonly maxWaiting: number;
  readonly maxResults: number;
  readonly maxSketchBuckets: number;
  readonly sendTimeoutSeconds: number;
  readonly maxConnections: number;
}

export const API_LIMIT_OPTIONS = {
  connections: 'API_CONNECTIONS',
  tokenQueries: 'API_TOKEN_QUERIES',
  tokenWaiting: 'API_TOKEN_WAITING',
  maxWaiting: 'API_MAX_WAITING',
  maxResults: 'API_MAX_RESULTS',
  maxSketchBuckets: 'API_MAX_SKETCH_BUCKETS',
  sendTimeoutSeconds: 'API_SEND_TIMEOUT_SECONDS',
  maxConnections: 'API_MAX_CONNECTIONS',
} as const satisfies Record<keyof ApiLimits, string>;

export type ApiLimitOption = (typeof API_LIMIT_OPTIONS)[keyof ApiLimits];

export type ApiConfig =
  | { readonly enabled: false; readonly reason: string }
  /** tokens: null only with API_AUTH=none. A TokenTable logs as {file, tokens: n}, never a token. */
  | { readonly enabled: true; readonly host: string; readonly port: number; readonly tokens: TokenTable | null; readonly limits: ApiLimits };

export type ApiOption = 'API_HOST' | 'API_TOKENS_FILE' | 'API_AUTH';

export interface ApiConfigContext {
  /** The variable's value, or its default from the option table (whose types are checked already). */
  readonly get: (name: ApiOption) => string;
  readonly port: number;
  /** The limit options' values (their ranges checked by the option table). */
  readonly num: (name: ApiLimitOption) => number;
  readonly sinkKind: string;
  readonly metricsPort: number;
}

export function parseApiConfig(c: ApiConfigContext): ApiConfig {
  // API_AUTH (token | none) and API_PORT (0..65535) have their types checked by the option table.
  const auth = c.get('API_AUTH');
  const file = c.get('API_TOKENS_FILE');
  if (auth === 'none' && file !== '') throw new ConfigError('API_AUTH', auth, `API_TOKENS_FILE is set too (${file}): leave API_AUTH at token to use it, or unset API_TOKENS_FILE`);
  if (auth === 'token' && file === '') {
    return { enabled: false, reason: 'no API_TOKENS_FILE (set it, or API_AUTH=none for an API without authentication)' };
  }
  const asking: ApiOption = file === '' ? 'API_AUTH' : 'API_TOKENS_FILE';
  if (c.sinkKind !== 'postgres') {
    throw new ConfigError(asking, c.get(asking), `the statistics API reads the PostgreSQL store: it needs SINK=postgres://… (SINK is ${c.sinkKind})`);
  }
  const port = c.port;
  if (port !== 0 && port === c.metricsPort) throw new ConfigError('API_PORT', String(port), 'it is METRICS_PORT too: the API listens on a port of its own, separate from /metrics and the probes');
  // Like METRICS_HOST, any name: whether it is an address of this machine shows when it is bound.
  const host = c.get('API_HOST');
  const limits = Object.fromEntries(Object.entries(API_LIMIT_OPTIONS).map(([k, name]) => [k, c.num(name)])) as unknown as ApiLimits;
  if (limits.tokenQueries > limits.connections) {
    throw new ConfigError('API_TOKEN_QUERIES', String(limits.tokenQueries), `it is more than API_CONNECTIONS (${limits.connections}): a token's share is at most all the connections (1..${limits.connections} is allowed)`);
  }
  if (limits.tokenWaiting > limits.maxWaiting) {
    throw new ConfigError('API_TOKEN_WAITING', String(limits.tokenWaiting), `it is more than API_MAX_WAITING (${limits.maxWaiting}), the waiters of all tokens together (0..${limits.maxWaiting} is allowed)`);
  }
  if (auth === 'none') return { enabled: true, host, port, tokens: null, limits };
  try {
    return { enabled: true, host, port, tokens: loadTokens(file), limits };
  } catch (err) {
    if (err instanceof TokenFileError) throw new ConfigError('API_TOKENS_FILE', file, err.message);
    throw err;
  }
}
