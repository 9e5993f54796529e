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
  /** PostgreSQL connections of the API's own pool, and so the queries that run at once. */
  connections: 2,
  /** Requests waiting for a connection beyond these get a 503 at once: the wait list is bounded. */
  maxWaiting: 32,
  /** A query running longer is cancelled by PostgreSQL (a 503 that says so). */
  statementTimeoutMs: 30_000,
} as const;

export type ApiConfig =
  | { readonly enabled: false; readonly reason: string }
  /** tokens: null only with API_AUTH=none. A TokenTable logs as {file, tokens: n}, never a token. */
  | { readonly enabled: true; readonly host: string; readonly port: number; readonly tokens: TokenTable | null };

export type ApiOption = 'API_HOST' | 'API_TOKENS_FILE' | 'API_AUTH';

export interface ApiConfigContext {
  /** The variable's value, or its default from the option table (whose types are checked already). */
  readonly get: (name: ApiOption) => string;
  readonly port: number;
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
  if (auth === 'none') return { enabled: true, host, port, tokens: null };
  try {
    return { enabled: true, host, port, tokens: loadTokens(file) };
  } catch (err) {
    if (err instanceof TokenFileError) throw new ConfigError('API_TOKENS_FILE', file, err.message);
    throw err;
  }
}
