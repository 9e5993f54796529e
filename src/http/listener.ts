// One HTTP listener: listen with errors that name the operator's options, close once. Shared by the
// ops server (/metrics and the probes) and the statistics API, which listen on ports of their own so
// that each can be exposed (or firewalled) on its own.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamstatsError } from '../errors.js';

export interface ListenerOptions {
  readonly host: string;
  readonly port: number;
  /** The variables the operator set them with, for the error messages: METRICS_HOST/METRICS_PORT, API_HOST/API_PORT. */
  readonly hostOption: string;
  readonly portOption: string;
  /** Node's server limits; absent = Node's defaults (the ops server's). */
  readonly server?: { readonly headersTimeoutMs: number; readonly requestTimeoutMs: number; readonly maxConnections: number };
}

/**
 * Node's "listen EADDRINUSE: address already in use 0.0.0.0:9464" names neither the option nor the
 * way out; the operator knows this server only by its two variables.
 */
function listenError(err: NodeJS.ErrnoException, o: ListenerOptions): Error {
  const say = (what: string) => new StreamstatsError('STREAMSTATS_CONFIG', what, { cause: err });
  switch (err.code) {
    case 'EADDRINUSE':
      return say(`${o.portOption} (${o.port}) is already in use on ${o.host}: stop the other process, or set another ${o.portOption} (0 = any free port)`);
    case 'EACCES':
      return say(`${o.portOption} (${o.port}) on ${o.host} needs privileges this process lacks: a port from 1024 up is allowed (0 = any free port)`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return say(`${o.hostOption} (${o.host}) is not an address of this machine: 0.0.0.0 (all), 127.0.0.1 or a local interface's address is allowed`);
    default:
      return err;
  }
}

export class Listener {
  readonly #server: Server;
  #closing: Promise<void> | null = null;

  constructor(
    private readonly opts: ListenerOptions,
    handler: (req: IncomingMessage, res: ServerResponse) => void,
  ) {
    const limits = opts.server;
    this.#server = createServer(limits === undefined ? {} : { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.requestTimeoutMs }, handler);
    if (limits !== undefined) this.#server.maxConnections = limits.maxConnections;
  }

  /** Resolves with the port (the chosen one when the option is 0). */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => reject(listenError(err, this.opts));
      this.#server.once('error', onError);
      this.#server.listen(this.opts.port, this.opts.host, () => {
        this.#server.off('error', onError);
        resolve();
      });
    });
    return (this.#server.address() as AddressInfo).port;
  }

  /** Idempotent: a second call shares the first one's promise. */
  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      if (!this.#server.listening) {
        resolve();
        return;
      }
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }
}
