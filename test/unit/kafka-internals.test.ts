// Our replacements of kafkajs internals (the fetch decoder, the consumer's Batch, the request queue's
// timer, the produce request, its per-partition grouping and the request framing) are written against one kafkajs release
// and its module layout, and step aside on any other: this fails if kafkajs is not exactly that
// release (package.json pins it), or if any replacement is not in place after the engine's load order
// (the pipeline module, its two preloads, then kafkajs), so a kafkajs upgrade or a new import that
// loads kafkajs first cannot silently bring back the slow paths.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { KAFKAJS_VERSION } from '../../src/kafka/internals.js';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

t.test('kafkajs is pinned to exactly the release the replacements mirror, and that release is installed', async (t) => {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { dependencies: Record<string, string> };
  t.equal(pkg.dependencies['kafkajs'], KAFKAJS_VERSION, 'package.json names the exact version (no range)');
  t.equal((require('kafkajs/package.json') as { version: string }).version, KAFKAJS_VERSION, 'node_modules has it');
});

t.test('every replacement is installed in the engine\'s load order', async (t) => {
  const script = `
    const { createRequire } = await import('node:module');
    const r = createRequire(${JSON.stringify(`${SRC}kafka/internals.js`)});
    await import(${JSON.stringify(`${SRC}pipeline.js`)});
    const kafkajsFirst = r.cache[r.resolve('kafkajs')] !== undefined;
    // What Pipeline.run() imports before it opens the sink, the dead-letter output and the source.
    await import(${JSON.stringify(`${SRC}kafka/preload.js`)});
    await import(${JSON.stringify(`${SRC}sources/kafka/preload.js`)});
    const { kafkajsConfig } = await import(${JSON.stringify(`${SRC}kafka/client.js`)});
    const kafkajs = (await import('kafkajs')).default;
    const kafka = new kafkajs.Kafka({ brokers: ['127.0.0.1:1'], logLevel: kafkajs.logLevel.NOTHING });
    kafka.consumer({ groupId: 'g' });
    kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    const { installFastRecords } = await import(${JSON.stringify(`${SRC}sources/kafka/records.js`)});
    const { FastBatch } = await import(${JSON.stringify(`${SRC}sources/kafka/batch.js`)});
    const { preparedBatchesAccepted, groupMessagesPerPartition, requestFramingInstalled } = await import(${JSON.stringify(`${SRC}kafka/produce-request.js`)});
    const queue = r('kafkajs/src/network/requestQueue/index.js').prototype;
    process.stdout.write(JSON.stringify({
      kafkajsLoadedByThePipelineModule: kafkajsFirst,
      clientModule: typeof kafkajsConfig === 'function',
      fetchDecoder: installFastRecords(),
      consumerBatch: r('kafkajs/src/consumer/batch.js') === FastBatch,
      requestQueueTimer: queue[Symbol.for('streamstats.requestQueuePatched')] === true,
      produceGrouping: r('kafkajs/src/producer/groupMessagesPerPartition.js') === groupMessagesPerPartition,
      produceRequest: preparedBatchesAccepted(),
      requestFraming: requestFramingInstalled(),
    }));`;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as Record<string, boolean>;
  t.same(out, {
    kafkajsLoadedByThePipelineModule: false,
    clientModule: true,
    fetchDecoder: true,
    consumerBatch: true,
    requestQueueTimer: true,
    produceGrouping: true,
    produceRequest: true,
    requestFraming: true,
  });
});
