// /metrics, /healthz (process alive), /readyz (source connected and pipeline running). The statistics
// API listens elsewhere (src/http/api-server.ts): probes and scrapes stay unauthenticated, the API not.
import type { Registry } from 'prom-client';
import { Listener } from './listener.js';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  readonly ready: () => boolean;
  /**
   * Refresh gauges that are sampled, not pushed, right before a scrape; the scrape waits for it (it
   * must bound its own time) and goes on if it fails.
   */
  readonly beforeScrape?: () => void | Promise<void>;
}

export class HttpServer {
  readonly #listener: Listener;

  constructor(opts: HttpOptions) {
    this.#listener = new Listener({ host: opts.host, port: opts.port, hostOption: 'METRICS_HOST', portOption: 'METRICS_PORT' }, (req, res) => {
      const url = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (url === '/metrics') {
        Promise.resolve()
          .then(() => opts.beforeScrape?.())
          .catch(() => {})
          .then(() => opts.registry.metrics())
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
