// /metrics, /healthz (process alive), /readyz (source connected and pipeline running).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { StreamstatsError } from '../errors.js';

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

/**
 * Node's "listen EADDRINUSE: address already in use 0.0.0.0:9464" names neither the option nor the
 * way out; the operator knows this server only as METRICS_PORT and METRICS_HOST.
 */
function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const say = (what: string) => new StreamstatsError('STREAMSTATS_CONFIG', what, { cause: err });
  switch (err.code) {
    case 'EADDRINUSE':
      return say(`METRICS_PORT (${port}) is already in use on ${host}: stop the other process, or set another METRICS_PORT (0 = any free port)`);
    case 'EACCES':
      return say(`METRICS_PORT (${port}) on ${host} needs privileges this process lacks: a port from 1024 up is allowed (0 = any free port)`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return say(`METRICS_HOST (${host}) is not an address of this machine: 0.0.0.0 (all), 127.0.0.1 or a local interface's address is allowed`);
    default:
      return err;
  }
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
      const onError = (err: NodeJS.ErrnoException) => reject(listenError(err, this.opts.host, this.opts.port));
      this.#server.once('error', onError);
      this.#server.listen(this.opts.port, this.opts.host, () => {
        this.#server.off('error', onError);
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
