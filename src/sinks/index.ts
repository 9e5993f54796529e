// Statistics sinks (contracts in ./types.ts). Each gets whole groups of rows and applies backpressure through its promise.
import { closeSync, openSync } from 'node:fs';
import type { Logger } from 'pino';
import { StreamstatsError } from '../errors.js';
import type { SinkSpec } from '../config/index.js';
import { WRITTEN_ALL, type Sink } from './types.js';
import { NdjsonWriter } from './ndjson.js';
import type { KafkaConfig } from '../config/index.js';

export async function createSink(spec: SinkSpec, deps: { logger: Logger; groupId: string; kafka: KafkaConfig; maxSeries?: number }): Promise<Sink> {
  switch (spec.kind) {
    // The Kafka and PostgreSQL clients are loaded only by the jobs that write there.
    case 'kafka': {
      const { KafkaSink } = await import('./kafka/index.js');
      return new KafkaSink({
        kafka: deps.kafka,
        topic: spec.topic,
        exactlyOnce: spec.exactlyOnce,
        groupId: deps.groupId,
        compression: spec.compression,
        logger: deps.logger,
      });
    }
    case 'postgres': {
      const { PostgresSink } = await import('./postgres/sink.js');
      return PostgresSink.open(spec.url, deps);
    }
    case 'stdout':
    case 'file': {
      // Opened once here, so a path that cannot be written fails the start, before anything is read.
      if (spec.kind === 'file') {
        try {
          closeSync(openSync(spec.path, 'a'));
        } catch (err) {
          throw new StreamstatsError('STREAMSTATS_SINK', `SINK=file:${spec.path}: cannot open it for appending: ${(err as Error).message}`);
        }
      }
      const w = spec.kind === 'stdout' ? new NdjsonWriter(process.stdout, false, 'stdout') : NdjsonWriter.toFile(spec.path);
      return {
        describe: w.describe,
        readsRowBytes: true,
        write: async (batch) => {
          // The bytes straight from the per-series prefixes: no NDJSON string to build and encode again.
          await w.writeText(batch.ndjsonBytes?.() ?? batch.ndjson());
          return WRITTEN_ALL;
        },
        close: () => w.close(),
      };
    }
  }
}

export type { DeadLetter, DeadLetterEntry, RowRejection, Sink, SinkCommit, SinkWriteResult } from './types.js';
