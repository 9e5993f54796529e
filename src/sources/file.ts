// File and stdin: NDJSON or top-level JSON arrays, streamed (only the current chunk and element are held).
import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { BatchBuilder } from '../core/batch.js';
import { StreamstatsError } from '../errors.js';
import { JsonSplitter } from './splitter.js';
import type { Progress, PullSource, SourceBatch } from './types.js';

export interface StreamSourceOptions {
  readonly batchSize: number;
  readonly batchMaxBytes: number;
  readonly maxMessageBytes: number;
}

export class StreamSource implements PullSource {
  #bytes = 0;
  #stopped = false;

  constructor(
    readonly describe: string,
    private readonly open: () => Readable,
    private readonly totalBytes: number | null,
    private readonly opts: StreamSourceOptions,
  ) {}

  static file(path: string, opts: StreamSourceOptions): StreamSource {
    let size: number;
    try {
      size = statSync(path).size;
    } catch (err) {
      throw new StreamstatsError('STREAMSTATS_SOURCE', `SOURCE=file:${path}: cannot read the file (${(err as Error).message})`, { cause: err });
    }
    return new StreamSource(`file:${path}`, () => createReadStream(path, { highWaterMark: 1 << 20 }), size, opts);
  }

  static stdin(opts: StreamSourceOptions): StreamSource {
    return new StreamSource('stdin', () => process.stdin, null, opts);
  }

  progress(): Progress {
    return { done: this.#bytes, total: this.totalBytes, unit: 'bytes' };
  }

  stop(): void {
    this.#stopped = true;
  }

  async *batches(): AsyncIterable<SourceBatch> {
    const builder = new BatchBuilder(Math.min(this.opts.batchMaxBytes, 1 << 20));
    const ready: SourceBatch[] = [];
    const splitter = new JsonSplitter(this.opts.maxMessageBytes, (msg) => {
      builder.push(msg);
      if (builder.count >= this.opts.batchSize || builder.bytes >= this.opts.batchMaxBytes) {
        ready.push({ partition: 0, ...builder.take() });
      }
    });
    const stream = this.open();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        this.#bytes += chunk.length;
        splitter.push(chunk);
        while (ready.length > 0) yield ready.shift()!;
        if (this.#stopped) return;
      }
      splitter.end();
      if (builder.count > 0) ready.push({ partition: 0, ...builder.take() });
      while (ready.length > 0) yield ready.shift()!;
    } finally {
      if (stream !== process.stdin) stream.destroy();
    }
  }
}
