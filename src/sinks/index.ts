// Statistics sinks. Each gets whole batches of rows and applies backpressure through its promise.
import type { SinkSpec } from '../config/index.js';
import type { RowBatch } from '../windows/row.js';
import { NdjsonWriter } from './ndjson.js';

export interface Sink {
  readonly describe: string;
  write(batch: RowBatch): Promise<void>;
  close(): Promise<void>;
}

export function createSink(spec: SinkSpec): Sink {
  const w = spec.kind === 'stdout' ? new NdjsonWriter(process.stdout, false, 'stdout') : NdjsonWriter.toFile(spec.path);
  return {
    describe: w.describe,
    write: (batch) => w.writeText(batch.ndjson()),
    close: () => w.close(),
  };
}
