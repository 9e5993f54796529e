// /metrics, /healthz (process alive), /readyz (source connected and pipeline running).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HttpOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  readonly ready: () => boolean;
  /** Refresh gauges that are sampled, not pushed, right before a scrape. */
  readonly beforeScrape?: () => void;
  /** More routes (the statistics API), consulted before the 404: true when the request was handled. */
  readonly routes?: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean>;
}

export class HttpServer {
  readonly #server: Server;
  #closing: Promise<void> | null = null;

  constructor(private readonly opts: HttpOptions) {
    this.#server = createServer((req, res) => {
      const url = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
        return;
      }
      if (url === '/metrics') {
        opts.beforeScrape?.();
        opts.registry.metrics().then(
          (body) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(body),
          (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
        );
      } else if (url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (url === '/readyz') {
        const ok = opts.ready();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : 'not ready\n');
      } else {
        const notFound = () => res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /healthz, /readyz\n');
        const handled = opts.routes?.(req, res) ?? false;
        if (handled === false) notFound();
        else if (handled !== true) {
          handled.then(
            (h) => {
              if (!h) notFound();
            },
            (err: Error) => {
              if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
              res.end(`request failed: ${err.message}\n`);
            },
          );
        }
      }
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.opts.port, this.opts.host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    return (this.#server.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }
}
