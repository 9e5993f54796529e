// The statistics API's own listener (API_HOST, API_PORT): apart from /metrics and the probes, so the
// ops port can stay open to the cluster while the API is exposed (or not) on its own terms.
import { Listener } from './listener.js';
import { API_DEFAULTS } from '../api/config.js';
import type { Routes } from '../api/routes.js';

export interface ApiServerOptions {
  readonly host: string;
  readonly port: number;
  readonly routes: Routes;
  /** HTTP connections open at once (API_MAX_CONNECTIONS); more are closed on arrival. */
  readonly maxConnections?: number;
}

export class ApiServer {
  readonly #listener: Listener;

  constructor(opts: ApiServerOptions) {
    // A request head that trickles in (slow-loris) or a body that never ends holds a connection only so long.
    const server = { headersTimeoutMs: API_DEFAULTS.headersTimeoutMs, requestTimeoutMs: API_DEFAULTS.requestTimeoutMs, maxConnections: opts.maxConnections ?? API_DEFAULTS.maxConnections };
    this.#listener = new Listener({ host: opts.host, port: opts.port, hostOption: 'API_HOST', portOption: 'API_PORT', server }, opts.routes);
  }

  listen(): Promise<number> {
    return this.#listener.listen();
  }

  close(): Promise<void> {
    return this.#listener.close();
  }
}
