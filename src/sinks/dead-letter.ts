// Dead-letter outputs (contract in ./types.ts): every rejected record, with its reason and where it
// came from, to a file, stderr or a Kafka topic.
import type { Logger } from 'pino';
import type { DeadLetterSpec, KafkaConfig } from '../config/index.js';
import { StreamstatsError } from '../errors.js';
import type { Metrics } from '../metrics/index.js';
import { NdjsonWriter } from './ndjson.js';
import { RotatingNdjsonFile } from './rotating-file.js';
import type { DeadLetter } from './types.js';

export type { DeadLetter, DeadLetterEntry } from './types.js';

type DeadLetterDeps = { logger: Logger; kafka: KafkaConfig; metrics: Pick<Metrics, 'deadLetterRotations' | 'deadLetterDeletedBytes'> };

/** Any dead-letter output; the Kafka client is loaded only when the output is a topic. */
export async function openDeadLetter(spec: DeadLetterSpec, deps: DeadLetterDeps): Promise<DeadLetter> {
  if (spec.kind !== 'kafka') return createDeadLetter(spec, deps);
  const { KafkaDeadLetter } = await import('./dead-letter-kafka.js');
  return new KafkaDeadLetter({ kafka: deps.kafka, topic: spec.topic, compression: spec.compression, logger: deps.logger });
}

/** A file or stderr dead-letter output (openDeadLetter opens a Kafka one). */
export function createDeadLetter(spec: DeadLetterSpec, deps: DeadLetterDeps): DeadLetter {
  if (spec.kind === 'kafka') throw new StreamstatsError('STREAMSTATS_SINK', 'DEAD_LETTER=kafka: open it with openDeadLetter(), which loads the Kafka client');
  const w = spec.kind === 'stderr' ? new NdjsonWriter(process.stderr, false, 'stderr') : rotatingFile(spec, deps);
  return {
    describe: w.describe,
    write: (entries) => w.writeLines(entries),
    close: () => w.close(),
  };
}

function rotatingFile(spec: Extract<DeadLetterSpec, { kind: 'file' }>, deps: Parameters<typeof createDeadLetter>[1]): RotatingNdjsonFile {
  const { logger, metrics } = deps;
  return new RotatingNdjsonFile(spec.path, spec, {
    rotated: () => metrics.deadLetterRotations.inc(),
    deleted: (bytes) => {
      metrics.deadLetterDeletedBytes.inc(bytes);
      // Once per full file at most: not a flood, and an operator must know dead letters were let go.
      logger.warn({ path: `${spec.path}.${spec.files - 1}`, bytes, maxBytes: spec.maxBytes, files: spec.files }, 'dead-letter files full: the oldest was deleted (raise DEAD_LETTER_FILES or DEAD_LETTER_MAX_BYTES, or use DEAD_LETTER=kafka)');
    },
    unrotated: (kind) => logger.warn({ path: spec.path, kind }, `dead-letter path is a ${kind}, not a regular file: written as it is, never rotated or deleted (DEAD_LETTER_MAX_BYTES and DEAD_LETTER_FILES do not apply)`),
    replaced: (detail) => logger.warn({ path: spec.path, detail }, 'dead-letter file is no longer the one being written (moved, deleted or replaced by someone else): nothing renamed or deleted, the path reopened as it is now'),
  });
}
