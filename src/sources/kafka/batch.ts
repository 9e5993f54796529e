// kafkajs's consumer Batch (consumer/batch.js, 2.2.4) keeps the fetched messages at or after the
// fetched offset by parsing every message's offset string into a BigInt and comparing
// (Long.fromValue(offset).gte(fetched)): about 0.15 us of the main thread a message, the most of
// kafkajs's own per-message work after ./records.ts. When every message of a fetch is a FastRecord
// (whose offset is a safe integer) and so is the fetched offset, FastBatch keeps the same messages by
// comparing numbers, and is otherwise kafkajs's Batch: its prototype (every method), its fields in
// its order, its aborted-transaction and control-record filters. Any other fetch gets kafkajs's own.
// kafkajs's consumerGroup.js takes Batch from require('./batch') once, when kafkajs is first loaded,
// so the replacement must be in the CommonJS module cache before any module imports kafkajs:
// installFastBatch() must run in a module evaluated before all of them (an entry point's first
// import); once kafkajs's consumer is loaded it refuses, and kafkajs's Batch stays.
import { kafkajsInternals, kafkajsRequire as require } from '../../kafka/internals.js';
import { FastRecord } from './fast-record.js';
import { enableRuns, runOf, runsFor, type RecordRun } from './runs.js';

interface PartitionData {
  readonly partition: number;
  readonly highWatermark: string;
  readonly abortedTransactions?: unknown[];
  readonly messages: readonly unknown[];
}
type BatchClass = new (topic: string, fetchedOffset: string, p: PartitionData) => object;
type Filter = (o: { messages: unknown[]; abortedTransactions?: unknown[] }) => Array<{ isControlRecord?: boolean }>;

interface Parts {
  readonly batchPath: string;
  readonly consumerGroupPath: string;
  readonly filterAbortedMessages: Filter;
}

function kafkajsParts(): Parts | null {
  return kafkajsInternals((r) => ({
    batchPath: r.resolve('kafkajs/src/consumer/batch.js'),
    consumerGroupPath: r.resolve('kafkajs/src/consumer/consumerGroup.js'),
    filterAbortedMessages: r('kafkajs/src/consumer/filterAbortedMessages.js') as Filter,
  }));
}

const K = kafkajsParts();
let Original: BatchClass | null = null;

/** Batches made by the number comparison (the tests' evidence that it ran). */
export const batchPaths = { fast: 0, kafkajs: 0, runs: 0 };

/** kafkajs's Batch, built without a BigInt per message where it can be (used with `new`). */
export function FastBatch(topic: string, fetchedOffset: string, p: PartitionData): object {
  const Batch = Original ?? (require(K!.batchPath) as BatchClass);
  const from = Number(fetchedOffset);
  const run = runOf(p.messages);
  if (run !== undefined) {
    const b = runsFor(topic) ? runBatch(Batch, topic, fetchedOffset, from, p, run) : null;
    if (b !== null) return b;
    // Any other case reads every record, as FastRecords: kafkajs's Batch, and a reader that is not
    // the source, would take a run's holes for records.
    p = { ...p, messages: run.materialize() };
  }
  if (!Number.isSafeInteger(from)) return slow(Batch, topic, fetchedOffset, p);
  const msgs = p.messages;
  const within: unknown[] = [];
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (!(m instanceof FastRecord)) return slow(Batch, topic, fetchedOffset, p);
    if (m.position >= from) within.push(m);
  }
  batchPaths.fast++;
  // kafkajs's constructor, field by field, with the filter above in place of its BigInt one.
  const b = Object.create(Batch.prototype) as Record<string, unknown>;
  b.fetchedOffset = fetchedOffset;
  b.topic = topic;
  b.partition = p.partition;
  b.highWatermark = p.highWatermark;
  b.rawMessages = msgs;
  b.messagesWithinOffset = within;
  b.messages = K!.filterAbortedMessages({ messages: within, ...(p.abortedTransactions === undefined ? {} : { abortedTransactions: p.abortedTransactions }) }).filter((m) => !m.isControlRecord);
  return b;
}

/**
 * A batch of a RecordRun (./records.ts) without a record object each: its messages are the run's
 * records at or after the fetched offset, as an array of their number whose first and last elements
 * are records and the rest holes. kafkajs reads only those two and the length (firstOffset,
 * lastOffset, isEmpty, the batch's instrumentation, eachBatch's resolveOffset); the source cuts from
 * the run (`run`, from `runFrom`). Null where the run must be read record by record: a fetched offset
 * that is no safe integer, aborted transactions to filter (they name records by producer and offset),
 * or records at or after the offset that are not one tail of the run.
 */
function runBatch(Batch: BatchClass, topic: string, fetchedOffset: string, from: number, p: PartitionData, run: RecordRun): object | null {
  if (!Number.isSafeInteger(from) || (p.abortedTransactions !== undefined && p.abortedTransactions.length > 0)) return null;
  const positions = run.positions;
  const n = run.count;
  let k = 0;
  while (k < n && positions[k]! < from) k++;
  for (let i = k + 1; i < n; i++) if (positions[i]! < from) return null;
  batchPaths.fast++;
  batchPaths.runs++;
  const within = new Array<unknown>(n - k);
  if (k < n) {
    within[0] = k === 0 ? p.messages[0] : run.record(k);
    within[n - k - 1] = p.messages[n - 1];
  }
  // kafkajs's constructor, field by field (as FastBatch), then the run.
  const b = Object.create(Batch.prototype) as Record<string, unknown>;
  b.fetchedOffset = fetchedOffset;
  b.topic = topic;
  b.partition = p.partition;
  b.highWatermark = p.highWatermark;
  b.rawMessages = p.messages;
  b.messagesWithinOffset = within;
  b.messages = within;
  b.run = run;
  b.runFrom = k;
  return b;
}

function slow(Batch: BatchClass, topic: string, fetchedOffset: string, p: PartitionData): object {
  batchPaths.kafkajs++;
  return new Batch(topic, fetchedOffset, p);
}

/**
 * Puts FastBatch in the place of kafkajs's Batch; true when it is (now or already) in place, false
 * when kafkajs's consumer was loaded first (it holds its Batch already) or kafkajs is another release.
 */
export function installFastBatch(): boolean {
  if (K === null) return false;
  const cached = require.cache[K.batchPath];
  if (cached !== undefined && cached.exports === FastBatch) {
    enableRuns();
    return true;
  }
  if (require.cache[K.consumerGroupPath] !== undefined) return false;
  Original = require(K.batchPath) as BatchClass;
  FastBatch.prototype = Original.prototype;
  require.cache[K.batchPath]!.exports = FastBatch;
  enableRuns();
  return true;
}
