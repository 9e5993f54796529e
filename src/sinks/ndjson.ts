// NDJSON writer over a Writable. A write resolves once its text has left the stream's buffer (handed
// to the file or pipe), not merely queued: the engine moves a commit point after this resolves, so
// rows still in our memory must never count as written. Waiting for it is also the backpressure.
import { createWriteStream } from 'node:fs';
import type { Writable } from 'node:stream';
import { StreamstatsError } from '../errors.js';

export class NdjsonWriter {
  #out: Writable | null;
  readonly #open: (() => Writable) | null;
  readonly #ownsStream: boolean;
  #error: Error | null = null;
  #closing: Promise<void> | null = null;

  /** out: a stream, or a function that opens one on the first write (a file that is never needed is never created). */
  constructor(out: Writable | (() => Writable), ownsStream: boolean, readonly describe: string) {
    this.#out = typeof out === 'function' ? null : out;
    this.#open = typeof out === 'function' ? out : null;
    this.#ownsStream = ownsStream;
    if (this.#out !== null) this.#watch(this.#out);
  }

  static toFile(path: string): NdjsonWriter {
    return new NdjsonWriter(() => createWriteStream(path, { flags: 'a' }), true, `file:${path}`);
  }

  #watch(out: Writable): void {
    out.on('error', (err: Error) => {
      this.#error = err;
    });
  }

  #stream(): Writable {
    if (this.#out === null) {
      this.#out = this.#open!();
      this.#watch(this.#out);
    }
    return this.#out;
  }

  async writeLines(objs: readonly unknown[]): Promise<void> {
    let chunk = '';
    for (const o of objs) chunk += `${JSON.stringify(o)}\n`;
    await this.writeText(chunk);
  }

  /** Text that is already NDJSON (ends with a newline), as a string or as its UTF-8 bytes. */
  async writeText(chunk: string | Uint8Array): Promise<void> {
    this.#throwIfFailed();
    if (chunk.length === 0) return;
    const out = this.#stream();
    await new Promise<void>((resolve) => {
      out.write(chunk, (err) => {
        if (err !== null && err !== undefined) this.#error ??= err;
        resolve();
      });
    });
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    const err = this.#error;
    // The I/O error's message once, no cause: a logged cause is appended to the message again.
    if (err !== null) throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: ${err.message}`);
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      const out = this.#out;
      if (out === null || this.#error !== null) {
        // Nothing written, or the stream is broken (EPIPE): nothing more will drain.
        resolve();
      } else if (!this.#ownsStream) {
        // stdout/stderr stay open for the logger; wait until what we wrote is flushed.
        if (!out.writableNeedDrain) resolve();
        else void drained(out).then(resolve);
      } else {
        out.once('error', () => resolve());
        out.end(() => resolve());
      }
    });
    return this.#closing;
  }
}

/** Resolves on the stream's next 'drain' or 'error' (the error itself is kept by #watch). */
function drained(out: Writable): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('error', done);
      resolve();
    };
    out.on('drain', done);
    out.on('error', done);
  });
}
