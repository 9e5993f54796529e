// The statistics API over HTTP, shaped like the OpenStack Ceilometer v2 API:
//   GET /v2/meters                          Meter objects; q filters, limit
//   GET /v2/meters/{name}/statistics        q, period, groupby, aggregate.func/aggregate.param, limit
// Every request is authenticated first (src/api/tokens.ts), whatever its path, so an unauthenticated
// caller learns nothing, not even which paths exist. Errors are JSON in Ceilometer's shape, first key
// "error_message" {faultcode, faultstring, debuginfo: null}, then our plain "error" (the same text).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Gate } from '../async/index.js';
import { API_DEFAULTS } from './config.js';
import { ApiError, parseMetersQuery, parseStatisticsQuery } from './params.js';
import { listMeters } from './meters.js';
import type { Queryable, QueryOptions } from './sql.js';
import { queryStatistics } from './statistics.js';
import { requestToken, type Scope, type TokenTable } from './tokens.js';

export interface StatisticsApiOptions extends QueryOptions {
  pool: Queryable;
  logger: Logger;
  /** 'none' only when the operator said API_AUTH=none. */
  auth: TokenTable | 'none';
  /** Queries at once (the pool's connections) and requests allowed to wait for one. */
  concurrency?: number;
  maxWaiting?: number;
}

export type Routes = (req: IncomingMessage, res: ServerResponse) => void;

const STATISTICS_PATH = /^\/v2\/meters\/([^/]+)\/statistics\/?$/;
const ADMIN: Scope = { admin: true };

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(`${JSON.stringify(body)}\n`);
}

function sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const faultcode = status >= 500 ? 'Server' : 'Client';
  // error_message first: python-ceilometerclient shows the faultstring of the body's first key (a body
  // whose first key is a string shows only "Bad Request (HTTP 400)"); "error" stays for plain clients.
  send(res, status, { error_message: { faultcode, faultstring: message, debuginfo: null }, error: message }, headers);
}

/** PostgreSQL errors that say the store is unavailable or slow, not that the query is wrong. */
function unavailable(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  // 57014 query_canceled (statement_timeout), 53xxx insufficient resources, 08xxx connection, 57P0x shutdown.
  return code === '57014' || code.startsWith('53') || code.startsWith('08') || code.startsWith('57P') || code === 'ECONNREFUSED';
}

export function createStatisticsApi(opts: StatisticsApiOptions): Routes {
  const { pool, logger, auth } = opts;
  const gate = new Gate(opts.concurrency ?? API_DEFAULTS.connections);
  const maxWaiting = opts.maxWaiting ?? API_DEFAULTS.maxWaiting;

  function authenticate(req: IncomingMessage): Scope | null {
    if (auth === 'none') return ADMIN;
    const token = requestToken(req.headers);
    return token === null ? null : auth.scopeOf(token);
  }

  return (req, res) => {
    const scope = authenticate(req);
    if (scope === null) {
      sendError(res, 401, 'authentication required: send X-Auth-Token (or Authorization: Bearer) with a token of API_TOKENS_FILE', {
        'www-authenticate': 'Bearer realm="streamstats statistics API"',
      });
      return;
    }
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendError(res, 400, 'the request target is not a valid URL');
      return;
    }
    if (!gate.free && gate.waiting >= maxWaiting) {
      sendError(res, 503, `the statistics API is busy (${gate.held} queries running, ${gate.waiting} waiting): retry later`, { 'retry-after': '1' });
      return;
    }
    gate.run(() => handle(url, req, res, scope)).catch((err: unknown) => {
      // An answer already under way cannot become an error: cut it (a thrown writeHead here would be
      // an unhandled rejection, and that ends the process).
      if (res.headersSent) {
        logger.error({ err, path: url.pathname }, 'statistics api: failed after the answer began');
        res.destroy();
      } else if (err instanceof ApiError) sendError(res, err.status, err.message);
      else if (unavailable(err)) {
        logger.warn({ err, path: url.pathname }, 'statistics api: the store is unavailable or the query timed out');
        sendError(res, 503, 'the statistics store is unavailable or the query took too long: retry later, or narrow the query');
      } else {
        logger.error({ err, path: url.pathname }, 'statistics api: query failed');
        sendError(res, 500, 'the statistics query failed; see the server log');
      }
    });
  };

  async function handle(url: URL, req: IncomingMessage, res: ServerResponse, scope: Scope): Promise<void> {
    const path = url.pathname;
    const known = path === '/v2/meters' || path === '/v2/meters/' || STATISTICS_PATH.test(path);
    if (!known) {
      sendError(res, 404, `no such resource ${JSON.stringify(path.slice(0, 200))}: GET /v2/meters and GET /v2/meters/{name}/statistics are served`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 405, `method ${JSON.stringify(req.method ?? '')} is not allowed: GET`, { allow: 'GET, HEAD' });
      return;
    }
    const started = performance.now();
    const m = STATISTICS_PATH.exec(path);
    const qopts: QueryOptions = { ...opts, scope };
    if (m === null) {
      send(res, 200, await listMeters(pool, parseMetersQuery(url.searchParams), qopts));
      return;
    }
    let meter: string;
    try {
      meter = decodeURIComponent(m[1]!);
    } catch {
      throw new ApiError(400, `meter name ${JSON.stringify(m[1]!.slice(0, 200))} is not valid percent-encoding`);
    }
    const stats = await queryStatistics(pool, parseStatisticsQuery(meter, url.searchParams), qopts);
    logger.debug({ meter, query: url.search, results: stats.length, ms: Math.round(performance.now() - started) }, 'statistics api: query');
    send(res, 200, stats);
  }
}
