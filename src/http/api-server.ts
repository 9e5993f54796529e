// The statistics API's own listener (API_HOST, API_PORT): apart from /metrics and the probes, so the
// ops port can stay open to the cluster while the API is exposed (or not) on its own terms.
import { Listener } from './listener.js';
import type { Routes } from '../api/routes.js';

export interface ApiServerOptions {
  readonly host: string;
  readonly port: number;
  readonly routes: Routes;
}

export class ApiServer {
  readonly #listener: Listener;

  constructor(opts: ApiServerOptions) {
    this.#listener = new Listener({ host: opts.host, port: opts.port, hostOption: 'API_HOST', portOption: 'API_PORT' }, opts.routes);
  }

  listen(): Promise<number> {
    return this.#listener.listen();
  }

  close(): Promise<void> {
    return this.#listener.close();
  }
}
