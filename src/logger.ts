// Structured JSON logs on stderr: stdout belongs to the statistics sink.
//
// Logging must never block the process: a stuck log pipe (a reader that stopped reading) would stall
// a synchronous write forever, and with it the event loop, the SIGTERM handling and the
// SHUTDOWN_TIMEOUT_SECONDS timer. So on a pipe, lines go through a bounded queue written without
// blocking: lines that do not fit are dropped and counted (streamstats_log_lines_dropped_total).
import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs';
import { pino, type DestinationStream, type Logger } from 'pino';
import { redactSecrets } from './config/redact.js';

export const LOGGER_DEFAULTS = {
  /** Log bytes waiting for a slow or stuck stderr before further lines are dropped. */
  maxQueuedBytes: 1024 * 1024,
  /** How often a full pipe is tried again. */
  retryMs: 100,
} as const;

let dropped = 0;

/** Log lines dropped because stderr did not take them (a stuck or slow reader), since start. */
export function logLinesDropped(): number {
  return dropped;
}

/**
 * A pino destination writing to a non-blocking descriptor: what the pipe does not take now waits in
 * a queue of at most maxQueuedBytes (retried on an unref'd timer, so it never keeps the process
 * alive); a line that does not fit is dropped and counted. Nothing here ever waits for the reader.
 */
export class BoundedDestination implements DestinationStream {
  readonly #fd: number;
  readonly #max: number;
  readonly #retryMs: number;
  #queue: Buffer[] = [];
  #queued = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(fd: number, opts: { maxQueuedBytes?: number; retryMs?: number } = {}) {
    this.#fd = fd;
    this.#max = opts.maxQueuedBytes ?? LOGGER_DEFAULTS.maxQueuedBytes;
    this.#retryMs = opts.retryMs ?? LOGGER_DEFAULTS.retryMs;
  }

  /** Bytes waiting for the pipe. */
  get queuedBytes(): number {
    return this.#queued;
  }

  write(line: string): boolean {
    const b = Buffer.from(line);
    if (this.#queued + b.length > this.#max) {
      dropped++;
      return true;
    }
    this.#queue.push(b);
    this.#queued += b.length;
    if (this.#timer === null) this.#flush();
    return true;
  }

  /** pino calls this on fatal logs: one more attempt, still without blocking. */
  flushSync(): void {
    this.#flush();
  }

  #flush(): void {
    while (this.#queue.length > 0) {
      const b = this.#queue[0]!;
      let n: number;
      try {
        n = writeSync(this.#fd, b);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          this.#retryLater();
          return;
        }
        // The reader is gone (EPIPE) or the descriptor is broken: nothing queued can be written.
        dropped += this.#queue.length;
        this.#queue = [];
        this.#queued = 0;
        return;
      }
      this.#queued -= n;
      if (n < b.length) this.#queue[0] = b.subarray(n);
      else this.#queue.shift();
    }
  }

  #retryLater(): void {
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#flush();
    }, this.#retryMs);
    this.#timer.unref();
  }
}

/**
 * A non-blocking descriptor for stderr when it is a pipe or a socket, else null (a file or a terminal,
 * written synchronously). A FIFO is re-opened through /proc: a descriptor of its own with O_NONBLOCK,
 * leaving fd 2 as it is. A socket (what a Node parent or journald gives) cannot be re-opened; opening
 * process.stderr on it sets O_NONBLOCK on fd 2 (libuv does, as for every stream it drives).
 */
export function nonBlockingStderr(): number | null {
  try {
    const st = fstatSync(2);
    if (st.isFIFO()) return openSync('/proc/self/fd/2', constants.O_WRONLY | constants.O_NONBLOCK);
    if (st.isSocket()) {
      void process.stderr;
      return 2;
    }
  } catch {
    // no /proc, or stderr closed: the synchronous destination below
  }
  return null;
}

/**
 * Logs to stderr; on a pipe or socket never blocking (bounded, dropped lines counted), else synchronously.
 * `secrets` (the config's, see configSecrets) and the credentials of any URL are cut from every line,
 * whatever field or error message they turn up in.
 */
export function createLogger(level: string, secrets: readonly string[] = []): Logger {
  const options = { level, base: { name: 'streamstats' }, hooks: { streamWrite: (line: string) => redactSecrets(line, secrets) } };
  const fd = nonBlockingStderr();
  if (fd === null) return pino(options, pino.destination({ dest: 2, sync: true }));
  if (fd !== 2) {
    process.once('exit', () => {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    });
  }
  return pino(options, new BoundedDestination(fd));
}
