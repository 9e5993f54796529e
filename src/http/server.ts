// /metrics, /healthz (process alive), /readyz (source connected and pipeline running). The statistics
// API listens elsewhere (src/http/api-server.ts): probes and scrapes stay unauthenticated, the API not.
// /metrics?name=A&name=B renders only those metric families: a script or bench that polls progress
// every few ms would otherwise pay a whole exposition (~500 lines, 2-4 ms of the main thread) and,
// on Kafka, a high-watermark round trip to the brokers per poll.
import type { Registry } from 'prom-client';
import { Listener } from './listener.js';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  readonly ready: () => boolean;
  /**
   * Refresh gauges that are sampled, not pushed, right before a scrape; the scrape waits for it (it
   * must bound its own time) and goes on if it fails. names: the families asked for, null for all.
   */
  readonly beforeScrape?: (names: ReadonlySet<string> | null) => void | Promise<void>;
}

/** At most this many `name` parameters in one scrape (a URL is bounded anyway; the error says so). */
export const MAX_SCRAPE_NAMES = 64;

/**
 * The metric families a scrape asks for (`name`, repeatable), null for all; a string for a request
 * that cannot be answered: a name not registered, or too many.
 */
export function scrapeNames(query: string, registry: Registry): ReadonlySet<string> | null | string {
  if (query === '') return null;
  const asked = new URLSearchParams(query).getAll('name');
  if (asked.length === 0) return null;
  if (asked.length > MAX_SCRAPE_NAMES) return `at most ${MAX_SCRAPE_NAMES} name parameters in one scrape (got ${asked.length})`;
  for (const n of asked) {
    if (registry.getSingleMetric(n) === undefined) {
      return `no metric family named ${JSON.stringify(n.slice(0, 200))}: name= takes a family as /metrics lists it after # TYPE (a histogram without _bucket, _sum or _count)`;
    }
  }
  return new Set(asked);
}

async function render(registry: Registry, names: ReadonlySet<string> | null): Promise<string> {
  if (names === null) return registry.metrics();
  const parts = await Promise.all([...names].map((n) => registry.getSingleMetricAsString(n)));
  return `${parts.join('\n\n')}\n`;
}

export class HttpServer {
  readonly #listener: Listener;

  constructor(opts: HttpOptions) {
    this.#listener = new Listener({ host: opts.host, port: opts.port, hostOption: 'METRICS_HOST', portOption: 'METRICS_PORT' }, (req, res) => {
      const raw = req.url ?? '/';
      const q = raw.indexOf('?');
      const url = q < 0 ? raw : raw.slice(0, q);
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (url === '/metrics') {
        const names = scrapeNames(q < 0 ? '' : raw.slice(q + 1), opts.registry);
        if (typeof names === 'string') {
          res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad scrape: ${names}\n`);
          return;
        }
        Promise.resolve()
          .then(() => opts.beforeScrape?.(names))
          .catch(() => {})
          .then(() => render(opts.registry, names))
          .then(
            (body) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(body),
            (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
          );
      } else if (url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (url === '/readyz') {
        const ok = opts.ready();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /healthz, /readyz (the statistics API listens on API_PORT)\n');
      }
    });
  }

  listen(): Promise<number> {
    return this.#listener.listen();
  }

  close(): Promise<void> {
    return this.#listener.close();
  }
}
