// kafkajs's internal modules, which the engine replaces or patches in three places (the Kafka source's
// fetch decoder, records.ts, and Batch, batch.ts; the connection queue's timer, request-queue.ts):
// each was written against one kafkajs release and its file layout, so each loads them only on that
// release, and on any other (or another layout) leaves kafkajs as it is.
import { createRequire } from 'node:module';

/** The kafkajs release the replacements mirror. */
export const KAFKAJS_VERSION = '2.2.4';

export const kafkajsRequire = createRequire(import.meta.url);

/** What load() gives, on kafkajs KAFKAJS_VERSION; null on another release or when a file is not there. */
export function kafkajsInternals<T>(load: (require: NodeJS.Require) => T): T | null {
  try {
    if ((kafkajsRequire('kafkajs/package.json') as { version: string }).version !== KAFKAJS_VERSION) return null;
    return load(kafkajsRequire);
  } catch {
    return null;
  }
}
