// A lane's read connection: one socket of our own (TLS for rediss://), the URL's user, password and
// database, one request at a time (a lane's reads are serial), each with a deadline. Its replies go
// to a ReplyReader as the bytes arrive (wire.ts), so XREADGROUP's entries are never made into
// node-redis's Buffers and arrays. A lost connection fails the request in hand (the read loop backs
// off and retries); the next request connects again. Credentials refused are final: retrying cannot help.
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { StreamstatsError } from '../../errors.js';
import { redactedRedisUrl, type RedisConfig } from './config.js';
import { finalConnectError } from './client.js';
import { RespProtocolError, SimpleError, SimpleReader, encodeCommand, type ReplyReader } from './resp.js';

export const LANE_CONN_DEFAULTS = {
  connectTimeoutMs: 5000,
  /** A reply not complete this long after its request (beyond a BLOCK's own time): the connection is given up. */
  replyTimeoutMs: 30_000,
} as const;

interface Pending {
  readonly reader: ReplyReader;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly username: string;
  readonly password: string;
  readonly db: number;
}

function endpoint(cfg: RedisConfig): Endpoint {
  const u = new URL(cfg.url);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isSafeInteger(db) || db < 0) throw new StreamstatsError('STREAMSTATS_SOURCE', `redis: ${redactedRedisUrl(cfg)}: the database after the port must be a number`, { canRetry: false });
  // URL keeps IPv6 hosts in brackets; net.connect wants them bare.
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { host: host === '' ? '127.0.0.1' : host, port: u.port === '' ? 6379 : Number(u.port), tls: u.protocol === 'rediss:', username: decodeURIComponent(u.username), password: decodeURIComponent(u.password), db };
}

export class LaneConn {
  readonly #cfg: RedisConfig;
  readonly #name: string;
  readonly #ep: Endpoint;
  readonly #simple = new SimpleReader();
  #socket: Socket | null = null;
  #ready = false;
  #opening: Promise<void> | null = null;
  #pending: Pending | null = null;
  #closed = false;

  constructor(cfg: RedisConfig, name: string) {
    this.#cfg = cfg;
    this.#name = name;
    this.#ep = endpoint(cfg);
  }

  /** Connected and through the handshake (false while Redis is away: the lane counts as stalled). */
  get connected(): boolean {
    return this.#ready && !this.#closed;
  }

  /**
   * Sends the command and reads its reply into `reader` (reset first, or resumed: append). Connects
   * first when not connected. blockMs: the time Redis itself may take (XREADGROUP BLOCK), added to the deadline.
   */
  async request(args: readonly string[], reader: ReplyReader, blockMs = 0, append = false): Promise<void> {
    if (this.#closed) throw new Error('redis: the lane connection is closed');
    if (!this.#ready) await this.#open();
    await this.#send(args, reader, blockMs, append);
  }

  /** Ends the connection; a request in hand fails. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#drop(new Error('redis: the lane connection was closed'));
  }

  #open(): Promise<void> {
    this.#opening ??= this.#connect().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #connect(): Promise<void> {
    const ep = this.#ep;
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = ep.tls
        ? tlsConnect({
            host: ep.host,
            port: ep.port,
            ...(isIP(ep.host) === 0 ? { servername: ep.host } : {}),
            rejectUnauthorized: this.#cfg.tlsRejectUnauthorized,
            ...(this.#cfg.tlsCa === undefined ? {} : { ca: this.#cfg.tlsCa }),
          })
        : netConnect({ host: ep.host, port: ep.port });
      const timer = setTimeout(() => s.destroy(new Error(`redis: no connection to ${redactedRedisUrl(this.#cfg)} within ${LANE_CONN_DEFAULTS.connectTimeoutMs} ms`)), LANE_CONN_DEFAULTS.connectTimeoutMs);
      const fail = (err: Error) => {
        clearTimeout(timer);
        reject(finalConnectError(this.#cfg, err) ?? err);
      };
      s.once('error', fail);
      s.once(ep.tls ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        s.off('error', fail);
        resolve(s);
      });
    });
    if (this.#closed) {
      socket.destroy();
      throw new Error('redis: the lane connection was closed');
    }
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#data(socket, chunk));
    socket.on('error', (err) => this.#lost(socket, err));
    socket.on('close', () => this.#lost(socket, new Error('redis: the lane connection closed')));
    try {
      if (ep.password !== '') await this.#expectOk(ep.username === '' ? ['AUTH', ep.password] : ['AUTH', ep.username, ep.password], 'AUTH');
      if (ep.db !== 0) await this.#expectOk(['SELECT', String(ep.db)], 'SELECT');
      await this.#expectOk(['CLIENT', 'SETNAME', `streamstats:${this.#name}`], 'CLIENT SETNAME');
    } catch (err) {
      this.#lost(socket, err as Error);
      throw err;
    }
    this.#ready = true;
  }

  async #expectOk(args: readonly string[], what: string): Promise<void> {
    await this.#send(args, this.#simple, 0);
    const v = this.#simple.value;
    if (v instanceof SimpleError) {
      const err = new Error(v.message);
      throw finalConnectError(this.#cfg, err) ?? new Error(`redis: ${what} failed: ${v.message}`, { cause: err });
    }
  }

  /** append: the reply goes onto the reader's last one (resume), else it starts afresh (reset). */
  #send(args: readonly string[], reader: ReplyReader, blockMs: number, append = false): Promise<void> {
    const socket = this.#socket;
    if (socket === null) return Promise.reject(new Error('redis: the lane connection is down'));
    if (this.#pending !== null) return Promise.reject(new Error('redis: a lane connection takes one request at a time'));
    if (!append) reader.reset();
    else if (reader.resume !== undefined) reader.resume();
    else return Promise.reject(new Error('redis: this reply cannot be read onto the last one'));
    return new Promise<void>((resolve, reject) => {
      const ms = blockMs + LANE_CONN_DEFAULTS.replyTimeoutMs;
      const timer = setTimeout(() => this.#lost(socket, new Error(`redis: no reply within ${ms} ms (${args[0]})`)), ms);
      this.#pending = { reader, resolve, reject, timer };
      socket.write(encodeCommand(args));
    });
  }

  #data(socket: Socket, chunk: Buffer): void {
    const p = this.#pending;
    if (socket !== this.#socket) return;
    if (p === null) {
      this.#lost(socket, new RespProtocolError('redis: bytes from the server with no request in hand'));
      return;
    }
    let end: number;
    try {
      end = p.reader.feed(chunk, 0);
    } catch (err) {
      this.#lost(socket, err as Error);
      return;
    }
    if (end < 0) return;
    if (end !== chunk.length) {
      this.#lost(socket, new RespProtocolError('redis: bytes after the reply with no request in hand'));
      return;
    }
    this.#pending = null;
    clearTimeout(p.timer);
    p.resolve();
  }

  /** The socket is done (error, close, timeout, protocol error): the request in hand fails. */
  #lost(socket: Socket, err: Error): void {
    if (socket !== this.#socket) return;
    this.#drop(err);
  }

  #drop(err: Error): void {
    const socket = this.#socket;
    this.#socket = null;
    this.#ready = false;
    socket?.destroy();
    const p = this.#pending;
    this.#pending = null;
    if (p !== null) {
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}
