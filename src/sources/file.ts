// File and stdin: NDJSON or top-level JSON arrays, streamed (only the current chunk and element are held).
import { statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { BatchBuilder } from '../core/batch.js';
import { StreamstatsError } from '../errors.js';
import { BufferRecycler } from './recycle.js';
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
    private readonly open: () => AsyncIterable<Buffer> & { destroy?: () => void },
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
    return new StreamSource(`file:${path}`, () => readChunks(path), size, opts);
  }

  static stdin(opts: StreamSourceOptions): StreamSource {
    return new StreamSource('stdin', () => process.stdin as AsyncIterable<Buffer>, null, opts);
  }

  progress(): Progress {
    return { done: this.#bytes, total: this.totalBytes, unit: 'bytes' };
  }

  stop(): void {
    this.#stopped = true;
  }

  async *batches(): AsyncIterable<SourceBatch> {
    const recycler = new BufferRecycler();
    const builder = new BatchBuilder(Math.min(this.opts.batchMaxBytes, 1 << 20), recycler.allocate);
    const ready: SourceBatch[] = [];
    const { batchSize, batchMaxBytes } = this.opts;
    const full = (): void => {
      if (builder.count >= batchSize || builder.bytes >= batchMaxBytes) ready.push(recycler.track({ lane: 0, ...builder.take() }));
    };
    // A chunk's whole lines come as spans, copied straight from the chunk: a view object per line
    // cost the main thread more than the copy itself, and its garbage a collection every few chunks.
    const splitter = new JsonSplitter(
      this.opts.maxMessageBytes,
      (msg) => {
        builder.push(msg);
        full();
      },
      (chunk, spans, count) => {
        for (let k = 0; k < 2 * count; ) {
          k = builder.pushSpans(chunk, spans, k, 2 * count, batchSize, batchMaxBytes);
          full();
        }
      },
    );
    const stream = this.open();
    try {
      for await (const chunk of stream) {
        this.#bytes += chunk.length;
        splitter.push(chunk);
        while (ready.length > 0) yield ready.shift()!;
        if (this.#stopped) return;
      }
      splitter.end();
      if (builder.count > 0) ready.push(recycler.track({ lane: 0, ...builder.take() }));
      while (ready.length > 0) yield ready.shift()!;
    } finally {
      if (stream !== process.stdin) stream.destroy?.();
    }
  }
}

const CHUNK_BYTES = 1 << 20;

/**
 * The file in 1 MiB chunks read into two buffers taken in turn, the next read under way while the
 * splitter works on the current chunk. A stream would allocate a fresh buffer per read: 1 MiB of
 * external memory a chunk, which the main thread's GC answers with full collections (measured by hand:
 * docs/history/measurements-2026-11.md, "Seed 001 at 15 M"). The splitter copies what it keeps of a chunk,
 * so a buffer is refilled only after its chunk has been pushed.
 */
async function* readChunks(path: string): AsyncGenerator<Buffer> {
  const fh: FileHandle = await open(path, 'r');
  const bufs = [Buffer.allocUnsafeSlow(CHUNK_BYTES), Buffer.allocUnsafeSlow(CHUNK_BYTES)];
  let pending: Promise<{ bytesRead: number }> | null = null;
  try {
    let k = 0;
    pending = fh.read(bufs[0]!, 0, CHUNK_BYTES, null);
    for (;;) {
      const { bytesRead } = await pending;
      pending = null;
      if (bytesRead === 0) return;
      const cur = bufs[k]!;
      k ^= 1;
      // Reads of one FileHandle go in order (null position: the file's own), one at a time here.
      pending = fh.read(bufs[k]!, 0, CHUNK_BYTES, null);
      yield cur.subarray(0, bytesRead);
    }
  } finally {
    // A read still under way must finish before the handle closes.
    if (pending !== null) await pending.catch(() => undefined);
    await fh.close();
  }
}
