// The statistics API over HTTP, shaped like the OpenStack Ceilometer v2 API:
//   GET /v2/meters                          Meter objects; q filters, limit
//   GET /v2/meters/{name}/statistics        q, period, groupby, aggregate.func/aggregate.param, limit
//   GET /v2/resources, /v2/resources/{id}   Resource objects from the stored series; q, limit, meter_links
//   GET /v2/capabilities                    what is answered, in Ceilometer's capability names
//   /v2/meters/{name}, /v2/samples...       501: raw samples are not stored
// Every request is authenticated first (src/api/tokens.ts), whatever its path, so an unauthenticated
// caller learns nothing, not even which paths exist. Errors are JSON in Ceilometer's shape, first key
// "error_message" {faultcode, faultstring, debuginfo: null}, then our plain "error" (the same text).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { API_DEFAULTS, type ApiLimits } from './config.js';
import { FairGate, type Ticket } from './fair.js';
import { ApiError, parseMetersQuery, parseResourcesQuery, parseStatisticsQuery } from './params.js';
import { listMeters } from './meters.js';
import { getResource, listResources } from './resources.js';
import type { Queryable, QueryOptions } from './sql.js';
import { queryStatistics, statisticsJson } from './statistics.js';
import { requestToken, type Scope, type TokenTable } from './tokens.js';

export interface StatisticsApiOptions extends QueryOptions {
  pool: Queryable;
  logger: Logger;
  /** 'none' only when the operator said API_AUTH=none. */
  auth: TokenTable | 'none';
  /** Answers at once, per token, waiting, per query and per connection (API_DEFAULTS when absent). */
  limits?: Partial<ApiLimits>;
}

export type Routes = (req: IncomingMessage, res: ServerResponse) => void;

const STATISTICS_PATH = /^\/v2\/meters\/([^/]+)\/statistics\/?$/;
const RESOURCE_PATH = /^\/v2\/resources\/([^/]+)\/?$/;
/** Ceilometer's raw-sample paths: GET /v2/meters/{name} (and POST), /v2/samples[/{id}], /v2/query/samples. */
const SAMPLES_PATH = /^\/v2\/(?:meters\/[^/]+|samples(?:\/[^/]+)?|query\/samples)\/?$/;
const SERVED = 'GET /v2/meters, /v2/meters/{name}/statistics, /v2/resources, /v2/resources/{id} and /v2/capabilities are served';

/**
 * The stored rows are windows, not samples, and the two differences that follow from it, on every
 * statistics answer so that a client can tell (README: where streamstats differs from Ceilometer).
 */
export const DIFFERENCE_HEADERS: Readonly<Record<string, string>> = {
  // Buckets start at multiples of period since 1970-01-01T00:00:00Z, not at the query's first timestamp.
  'x-streamstats-period-alignment': 'epoch',
  // A timestamp bound selects the stored windows wholly within it (ge/gt: window start, lt/le: window end).
  'x-streamstats-timestamp-bounds': 'whole-windows',
};

const CAPABILITY_LIST = [
  ['meters:query:simple', true], ['meters:query:metadata', false], ['meters:query:complex', false],
  ['resources:query:simple', true], ['resources:query:metadata', false], ['resources:query:complex', false],
  ['samples:query:simple', false], ['samples:query:metadata', false], ['samples:query:complex', false],
  ['statistics:groupby', true], ['statistics:query:simple', true], ['statistics:query:metadata', false], ['statistics:query:complex', false],
  ['statistics:aggregation:standard', true],
  ...['max', 'min', 'sum', 'avg', 'count', 'stddev', 'cardinality', 'percentile'].map((f) => [`statistics:aggregation:selectable:${f}`, true] as const),
  ['events:query:simple', false],
] as const;

/** GET /v2/capabilities, Ceilometer's shape: what this API answers, so a client can ask instead of guessing. */
export const CAPABILITIES = {
  api: Object.fromEntries(CAPABILITY_LIST),
  storage: { 'storage:production_ready': true },
  event_storage: { 'storage:production_ready': false },
} as const;
const ADMIN: Scope = { admin: true };

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(`${JSON.stringify(body)}\n`);
}

/** An answer is written in pieces of about this many bytes, each after the client took the one before. */
const CHUNK_BYTES = 64 * 1024;

/** The JSON of an array, a piece at a time, so an answer is never one string of its whole size. */
function* jsonArray<T>(items: readonly T[], json: (some: readonly T[]) => string): Generator<string> {
  yield '[';
  let from = 0;
  let per = 64;
  while (from < items.length) {
    const some = items.slice(from, from + per);
    const text = json(some);
    yield `${from === 0 ? '' : ','}${text.slice(1, -1)}`;
    from += some.length;
    // Aim at CHUNK_BYTES a piece from the size of the last one.
    per = Math.max(1, Math.min(10_000, Math.floor((per * CHUNK_BYTES) / Math.max(text.length, 1))));
  }
  yield ']\n';
}

/**
 * Resolves true when the response can take more (drain), false when the client took nothing for
 * timeoutMs or went away. A reader that never reads then holds at most one piece beyond the socket's
 * high-water mark, and only for timeoutMs.
 */
function progressed(res: ServerResponse, event: 'drain' | 'finish', timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off(event, onEvent);
      res.off('close', onClose);
      resolve(ok);
    };
    const onEvent = () => done(true);
    const onClose = () => done(res.writableFinished);
    const timer = setTimeout(() => done(false), timeoutMs);
    res.once(event, onEvent);
    res.once('close', onClose);
  });
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
  const limits: ApiLimits = { ...API_DEFAULTS, ...opts.limits };
  const gate = new FairGate({ slots: limits.connections, perKey: limits.tokenQueries, waitingPerKey: limits.tokenWaiting, maxWaiting: limits.maxWaiting });
  const sendTimeoutMs = limits.sendTimeoutSeconds * 1000;
  const queryOpts: QueryOptions = { maxResults: opts.maxResults ?? limits.maxResults, maxSketchBuckets: opts.maxSketchBuckets ?? limits.maxSketchBuckets };

  /** Writes an answer with backpressure; a client that takes nothing for API_SEND_TIMEOUT_SECONDS is cut off. */
  async function stream(res: ServerResponse, path: string, headers: Record<string, string>, pieces: Iterable<string>): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', ...headers });
    for (const piece of pieces) {
      if (res.destroyed) return;
      if (!res.write(piece) && !(await progressed(res, 'drain', sendTimeoutMs))) return cut(res, path);
    }
    res.end();
    if (!res.writableFinished && !(await progressed(res, 'finish', sendTimeoutMs))) cut(res, path);
  }

  function cut(res: ServerResponse, path: string): void {
    if (res.destroyed) return;
    logger.warn({ path, buffered: res.writableLength, timeoutSeconds: limits.sendTimeoutSeconds }, 'statistics api: the client took no bytes of its answer for API_SEND_TIMEOUT_SECONDS; connection closed');
    res.destroy();
  }

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
    // Fair shares per token; without authentication every client address counts as a token.
    const key = auth === 'none' ? `address:${req.socket.remoteAddress ?? ''}` : scope;
    const ticket = gate.enter(key);
    if ('refused' in ticket) {
      const why =
        ticket.refused === 'token'
          ? `this token has ${ticket.held} answers under way and ${ticket.waiting} waiting, its share (API_TOKEN_QUERIES=${limits.tokenQueries}, API_TOKEN_WAITING=${limits.tokenWaiting})`
          : `${ticket.held} answers are under way and ${ticket.waiting} requests waiting (API_MAX_WAITING=${limits.maxWaiting})`;
      sendError(res, 503, `the statistics API is busy: ${why}; retry later`, { 'retry-after': '1' });
      return;
    }
    // The slot is held until the answer is sent or the connection is gone; a client that leaves while
    // it waits gives its place up.
    res.once('close', ticket.leave);
    run(ticket, url, req, res, scope).catch((err: unknown) => {
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

  async function run(ticket: Ticket, url: URL, req: IncomingMessage, res: ServerResponse, scope: Scope): Promise<void> {
    try {
      await ticket.ready;
      if (!res.destroyed) await handle(url, req, res, scope);
    } finally {
      ticket.leave();
    }
  }

  async function handle(url: URL, req: IncomingMessage, res: ServerResponse, scope: Scope): Promise<void> {
    const path = url.pathname;
    const meters = path === '/v2/meters' || path === '/v2/meters/';
    const stats = STATISTICS_PATH.exec(path);
    const resource = RESOURCE_PATH.exec(path);
    const resources = path === '/v2/resources' || path === '/v2/resources/';
    const capabilities = path === '/v2/capabilities' || path === '/v2/capabilities/';
    if (!meters && stats === null && resource === null && !resources && !capabilities) {
      if (SAMPLES_PATH.test(path)) {
        // Not a 404: openstack4j reads a 404 as an empty list, and an empty list of samples is a lie.
        throw new ApiError(501, `${path.slice(0, 200)}: raw samples are not stored (they are merged into windows as they arrive), so they cannot be listed, read or posted here; ${SERVED}`);
      }
      sendError(res, 404, `no such resource ${JSON.stringify(path.slice(0, 200))}: ${SERVED}`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, 405, `method ${JSON.stringify(req.method ?? '')} is not allowed: GET`, { allow: 'GET, HEAD' });
      return;
    }
    const started = performance.now();
    const qopts: QueryOptions = { ...queryOpts, scope };
    const list = <T>(items: readonly T[]) => stream(res, path, {}, jsonArray(items, (some) => JSON.stringify(some)));
    if (meters) {
      await list(await listMeters(pool, parseMetersQuery(url.searchParams), qopts));
      return;
    }
    if (capabilities) {
      send(res, 200, CAPABILITIES);
      return;
    }
    // Links as the client reached us (Ceilometer builds them from the request's application URL).
    const base = `http://${req.headers.host ?? 'localhost'}`;
    if (resources) {
      const rq = parseResourcesQuery(url.searchParams);
      await list(await listResources(pool, { ...rq }, base, qopts));
      return;
    }
    if (resource !== null) {
      checkNoParams(url.searchParams, '/v2/resources/{id}');
      send(res, 200, await getResource(pool, decoded(resource[1]!, 'resource id'), base, qopts));
      return;
    }
    const meter = decoded(stats![1]!, 'meter name');
    const result = await queryStatistics(pool, parseStatisticsQuery(meter, url.searchParams), qopts);
    logger.debug({ meter, query: url.search, results: result.length, ms: Math.round(performance.now() - started) }, 'statistics api: query');
    await stream(res, path, DIFFERENCE_HEADERS, jsonArray(result, statisticsJson));
  }
}

function decoded(segment: string, what: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(400, `${what} ${JSON.stringify(segment.slice(0, 200))} is not valid percent-encoding`);
  }
}

function checkNoParams(sp: URLSearchParams, path: string): void {
  const first = sp.keys().next();
  if (first.done !== true) throw new ApiError(400, `unknown parameter ${JSON.stringify(first.value.slice(0, 80))}: ${path} takes none`);
}
