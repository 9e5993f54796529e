// Statistics sinks (contracts in ./types.ts). Each gets whole groups of rows and applies backpressure through its promise.
import type { Logger } from 'pino';
import type { SinkSpec } from '../config/index.js';
import { WRITTEN_ALL, type Sink } from './types.js';
import { NdjsonWriter } from './ndjson.js';
import type { KafkaConfig } from '../config/index.js';

export async function createSink(spec: SinkSpec, deps: { logger: Logger; groupId: string; kafka: KafkaConfig }): Promise<Sink> {
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
      const w = spec.kind === 'stdout' ? new NdjsonWriter(process.stdout, false, 'stdout') : NdjsonWriter.toFile(spec.path);
      return {
        describe: w.describe,
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
