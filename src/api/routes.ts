// The statistics API over HTTP, shaped like the OpenStack Ceilometer v2 API:
//   GET /v2/meters                          [{"name","unit"}], distinct, sorted; q filters
//   GET /v2/meters/{name}/statistics        q, period, groupby, aggregate.func/aggregate.param
// Plugged into the HTTP server as its `routes`; answers only paths under /v2/.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ApiError, parseMetersQuery, parseStatisticsQuery } from './params.js';
import { listMeters, queryStatistics, type Queryable, type QueryOptions } from './statistics.js';

export interface StatisticsApiOptions extends QueryOptions {
  pool: Queryable;
  logger: Logger;
}

export type Routes = (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;

const STATISTICS_PATH = /^\/v2\/meters\/([^/]+)\/statistics\/?$/;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(`${JSON.stringify(body)}\n`);
}

export function createStatisticsApi(opts: StatisticsApiOptions): Routes {
  const { pool, logger } = opts;
  return (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      return false;
    }
    if (url.pathname !== '/v2' && !url.pathname.startsWith('/v2/')) return false;
    return handle(url, req, res).then(
      () => true,
      (err: unknown) => {
        if (err instanceof ApiError) {
          send(res, err.status, { error: err.message });
        } else {
          logger.error({ err: (err as Error).message, path: url.pathname }, 'statistics api: query failed');
          send(res, 500, { error: 'the statistics query failed; see the server log' });
        }
        return true;
      },
    );
  };

  async function handle(url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = url.pathname;
    const known = path === '/v2/meters' || path === '/v2/meters/' || STATISTICS_PATH.test(path);
    if (!known) {
      send(res, 404, { error: `no such resource ${JSON.stringify(path)}: GET /v2/meters and GET /v2/meters/{name}/statistics are served` });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, { error: `method ${req.method ?? ''} is not allowed: GET` }, { allow: 'GET, HEAD' });
      return;
    }
    const started = performance.now();
    const m = STATISTICS_PATH.exec(path);
    if (m === null) {
      send(res, 200, await listMeters(pool, parseMetersQuery(url.searchParams)));
      return;
    }
    let meter: string;
    try {
      meter = decodeURIComponent(m[1]!);
    } catch {
      throw new ApiError(400, `meter name ${JSON.stringify(m[1])} is not valid percent-encoding`);
    }
    const stats = await queryStatistics(pool, parseStatisticsQuery(meter, url.searchParams), opts);
    logger.debug({ meter, query: url.search, results: stats.length, ms: Math.round(performance.now() - started) }, 'statistics api: query');
    send(res, 200, stats);
  }
}
