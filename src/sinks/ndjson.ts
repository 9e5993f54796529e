// NDJSON writer over a Writable with backpressure: write() resolves once the stream can take more.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { StreamstatsError } from '../errors.js';

export class NdjsonWriter {
  readonly #out: Writable;
  readonly #ownsStream: boolean;
  #error: Error | null = null;
  #closing: Promise<void> | null = null;

  constructor(out: Writable, ownsStream: boolean, readonly describe: string) {
    this.#out = out;
    this.#ownsStream = ownsStream;
    out.on('error', (err: Error) => {
      this.#error = err;
    });
  }

  static toFile(path: string): NdjsonWriter {
    return new NdjsonWriter(createWriteStream(path, { flags: 'a' }), true, `file:${path}`);
  }

  async writeLines(objs: readonly unknown[]): Promise<void> {
    let chunk = '';
    for (const o of objs) chunk += `${JSON.stringify(o)}\n`;
    await this.writeText(chunk);
  }

  /** Text that is already NDJSON (ends with a newline). */
  async writeText(chunk: string): Promise<void> {
    this.#throwIfFailed();
    if (chunk.length === 0) return;
    if (!this.#out.write(chunk)) await Promise.race([once(this.#out, 'drain'), once(this.#out, 'error')]);
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    const err = this.#error;
    if (err !== null) throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: ${err.message}`, { cause: err });
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      if (!this.#ownsStream) {
        // stdout/stderr stay open for the logger; wait until what we wrote is flushed.
        if (this.#out.writableNeedDrain) this.#out.once('drain', () => resolve());
        else resolve();
        return;
      }
      this.#out.end(() => resolve());
    });
    return this.#closing;
  }
}
