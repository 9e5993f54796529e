// Statistics sinks. Each gets whole groups of rows and applies backpressure through its promise.
import type { Logger } from 'pino';
import type { SinkSpec } from '../config/index.js';
import type { CommitPoint } from '../engine.js';
import type { RowBatch } from '../windows/row.js';
import { NdjsonWriter } from './ndjson.js';
import { PostgresSink } from './postgres/sink.js';
import { KafkaSink } from './kafka.js';
import type { KafkaConfig } from '../config/index.js';

/** For a Kafka source: the partition's commit point, written in the same transaction as the rows. */
export interface SinkCommit {
  readonly topic: string;
  readonly partition: number;
  readonly point: CommitPoint;
}

export interface PartitionPositions {
  readonly position: number;
  readonly watermarkMs: number;
  readonly appliedEnd: number;
}

export interface Sink {
  readonly describe: string;
  /**
   * True when the sink stores partition positions with its rows (exactly-once on its own): the Kafka
   * source then resumes from readPositions() rather than from the group's committed offsets.
   */
  readonly ownsPositions?: boolean;
  write(batch: RowBatch, commit?: SinkCommit): Promise<void>;
  readPositions?(topic: string, partitions: readonly number[]): Promise<Map<number, PartitionPositions>>;
  close(): Promise<void>;
}

export async function createSink(spec: SinkSpec, deps: { logger: Logger; groupId: string; kafka: KafkaConfig }): Promise<Sink> {
  switch (spec.kind) {
    case 'kafka':
      return new KafkaSink({
        kafka: deps.kafka,
        topic: spec.topic,
        exactlyOnce: spec.exactlyOnce,
        groupId: deps.groupId,
        compression: spec.compression,
        logger: deps.logger,
      });
    case 'postgres':
      return PostgresSink.open(spec.url, deps);
    case 'stdout':
    case 'file': {
      const w = spec.kind === 'stdout' ? new NdjsonWriter(process.stdout, false, 'stdout') : NdjsonWriter.toFile(spec.path);
      return {
        describe: w.describe,
        write: (batch) => w.writeText(batch.ndjson()),
        close: () => w.close(),
      };
    }
  }
}
