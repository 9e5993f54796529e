// The Kafka source's Batch (src/sources/kafka/batch.ts) against kafkajs's consumer Batch, on the same
// fetched messages: every field and method must read the same, whichever path built it.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { FastBatch, batchPaths, installFastBatch } from '../../src/sources/kafka/batch.js';
import { decodeMessages } from '../../src/sources/kafka/records.js';

const require = createRequire(import.meta.url);
const KJS = 'kafkajs/src/protocol/';
const kafkajsDecode = require(`${KJS}requests/fetch/v4/decodeMessages.js`) as (d: unknown) => Promise<unknown[]>;
const Decoder = require(`${KJS}decoder.js`) as new (b: Buffer) => unknown;
const { RecordBatch } = require(`${KJS}recordBatch/v0/index.js`) as { RecordBatch: (o: object) => Promise<{ buffer: Buffer }> };
const Record = require(`${KJS}recordBatch/record/v0/index.js`) as (o: object) => unknown;
const Long = require('kafkajs/src/utils/long.js') as { fromValue(v: unknown): unknown };
type B = Record<string, unknown> & Record<'isEmpty' | 'isEmptyIncludingFiltered' | 'isEmptyDueToFiltering' | 'isEmptyControlRecord' | 'isEmptyDueToLogCompactedMessages' | 'firstOffset' | 'lastOffset' | 'offsetLag' | 'offsetLagLow', () => unknown>;
type BatchClass = new (topic: string, fetched: string, p: object) => B;
const Batch = require('kafkajs/src/consumer/batch.js') as BatchClass;
const Fast = FastBatch as unknown as BatchClass;

async function recordSet(batches: Array<{ first: number; n: number; transactional?: boolean }>): Promise<Buffer> {
  const bufs: Buffer[] = [];
  for (const { first, n, transactional } of batches) {
    const records = Array.from({ length: n }, (_, i) => Record({ offsetDelta: i, timestampDelta: i, key: Buffer.from(`k${i}`), value: Buffer.from(`{"v":${i}}`) }));
    bufs.push((await RecordBatch({ firstOffset: Long.fromValue(first), firstTimestamp: 1_700_000_000_000, maxTimestamp: 1_700_000_000_000, lastOffsetDelta: n - 1, transactional: transactional ?? false, producerId: Long.fromValue(transactional === true ? 7 : -1), records })).buffer);
  }
  const body = Buffer.concat(bufs);
  const head = Buffer.alloc(4);
  head.writeInt32BE(body.length);
  return Buffer.concat([head, body]);
}

const offsets = (ms: unknown) => (ms as Array<{ offset: string }>).map((m) => m.offset);
function read(b: B) {
  return {
    fields: Object.keys(b),
    values: [b.fetchedOffset, b.topic, b.partition, b.highWatermark, offsets(b.rawMessages), offsets(b.messagesWithinOffset), offsets(b.messages)],
    methods: [b.isEmpty(), b.isEmptyIncludingFiltered(), b.isEmptyDueToFiltering(), b.isEmptyControlRecord(), b.isEmptyDueToLogCompactedMessages(), b.firstOffset(), b.lastOffset(), b.offsetLag(), b.offsetLagLow()],
    isBatch: b instanceof Batch,
  };
}

t.test('the same batch as kafkajs\'s for fetched offsets before, inside and after the fetched records', async (t) => {
  const set = await recordSet([{ first: 100, n: 20 }, { first: 120, n: 5 }]);
  const fast = await decodeMessages(new Decoder(set) as never);
  const before = batchPaths.fast;
  for (const fetched of ['90', '100', '107', '124', '125', '500']) {
    const p = { partition: 3, highWatermark: '130', abortedTransactions: [], messages: fast };
    t.same(read(new Fast('t', fetched, p)), read(new Batch('t', fetched, p)), `fetched offset ${fetched}`);
  }
  t.equal(batchPaths.fast - before, 6, 'every one was built by the number comparison');
  t.same(offsets(new Fast('t', '107', { partition: 0, highWatermark: '130', abortedTransactions: [], messages: fast }).messages), Array.from({ length: 18 }, (_, i) => String(107 + i)));
});

t.test('aborted transactions are filtered as kafkajs filters them', async (t) => {
  const set = await recordSet([{ first: 0, n: 10, transactional: true }, { first: 10, n: 4 }]);
  const fast = await decodeMessages(new Decoder(set) as never);
  const p = { partition: 0, highWatermark: '14', abortedTransactions: [{ producerId: '7', firstOffset: '3' }], messages: fast };
  const a = read(new Fast('t', '0', p));
  t.same(a, read(new Batch('t', '0', p)));
  t.same(a.values[6], ['0', '1', '2', '10', '11', '12', '13'], 'the aborted transaction\'s records from offset 3 are left out');
});

t.test('messages not of the fast decoder, and offsets beyond 2^53, are kafkajs\'s Batch', async (t) => {
  const set = await recordSet([{ first: 0, n: 5 }]);
  const before = batchPaths.kafkajs;
  const p = { partition: 0, highWatermark: '5', abortedTransactions: [], messages: await kafkajsDecode(new Decoder(set)) };
  t.same(read(new Fast('t', '2', p)), read(new Batch('t', '2', p)));
  const q = { partition: 0, highWatermark: '5', abortedTransactions: [], messages: await decodeMessages(new Decoder(set) as never) };
  t.same(read(new Fast('t', '9007199254740993', q)), read(new Batch('t', '9007199254740993', q)));
  t.equal(batchPaths.kafkajs - before, 2);
});

t.test('install: in place when it runs before kafkajs is loaded; refused once kafkajs\'s consumer is', async (t) => {
  const dir = fileURLToPath(new URL('../../src/sources/kafka/', import.meta.url));
  const script = `
    await import(${JSON.stringify(`${dir}preload.js`)});
    const { FastBatch } = await import(${JSON.stringify(`${dir}batch.js`)});
    const kafkajs = (await import('kafkajs')).default;
    const { createRequire } = await import('node:module');
    const require = createRequire(${JSON.stringify(`${dir}batch.js`)});
    process.stdout.write(String(typeof kafkajs.Kafka === 'function' && require('kafkajs/src/consumer/batch.js') === FastBatch));`;
  t.equal(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }), 'true');
  await import('kafkajs');
  t.equal(installFastBatch(), false, 'this process loaded kafkajs first');
});
