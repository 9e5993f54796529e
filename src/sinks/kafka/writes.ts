// The at-least-once write of a group (one idempotent producer per lane, acks=-1), and what both modes
// share: requests cut per partition, and rows the broker refuses returned as rejected.
import type { Message } from 'kafkajs';
import type { Logger } from 'pino';
import { StreamstatsError } from '../../errors.js';
import { rowLevelRefusal } from '../../kafka/errors.js';
import type { ProducerSet } from '../../kafka/producer.js';
import { SECTION_STRIDE } from '../../core/messages.js';
import { layoutRequest, preparedBatchesAccepted, producePaths, type PreparedBatch, releasePrepared } from '../../kafka/produce-request.js';
import { rangeRecordBytes } from '../../kafka/record-batch.js';
import { RecordsRefused, sendRefusingOversizeBy } from '../../kafka/refusals.js';
import { RECORD_OVERHEAD_BYTES, requestBudget } from '../../kafka/requests.js';
import type { TopicLimits } from '../../kafka/topics.js';
import type { RowRejection } from '../types.js';
import { GroupMessages, type SinkWrite } from './lanes.js';

/** What a group write needs of the sink. */
export interface GroupWriteContext {
  readonly topic: string;
  readonly groupId: string;
  readonly codec: number;
  readonly maxRequestBytes: number;
  readonly producers: ProducerSet;
  readonly limits: TopicLimits;
  readonly logger: Logger;
}

/** One produce request of a group: how many of its messages, and what kafkajs's send() takes. */
export interface SinkRequest {
  readonly count: number;
  readonly messages: Array<PreparedBatch | Message>;
}

/**
 * The group's messages `ids` (in order) as requests of at most maxRequestBytes, and at most the
 * topic's max.message.bytes, per partition (a larger message goes alone), made one by one as they are
 * sent. Each partition's share is a PreparedBatch written here from the rows' bytes; only where
 * kafkajs's producer does not take those (kafkajs was loaded before src/kafka/preload.ts) or a
 * partition is not known yet (a topic created on first use) are they kafkajs messages.
 */
export function* requests(c: GroupWriteContext, g: GroupMessages, ids: readonly number[]): Generator<SinkRequest> {
  const budget = requestBudget(c.maxRequestBytes, c.limits.maxMessageBytes);
  if (ids.length === g.all.length && preparedBatchesAccepted() && g.writes.every((w) => w.sections != null && w.budget === budget)) {
    yield* sectionRequests(g);
    return;
  }
  let maxPartition = -1;
  let prepared = preparedBatchesAccepted();
  for (const k of ids) {
    const p = g.writes[g.write[k]!]!.partition[g.msg[k]!]!;
    if (p > maxPartition) maxPartition = p;
    if (p < 0) prepared = false;
  }
  // Per partition (index p + 1; 0 for "not known"): bytes counted against the budget.
  const used = new Float64Array(maxPartition + 2);
  let touched: number[] = [];
  let from = 0;
  for (let x = 0; x <= ids.length; x++) {
    let p = 0;
    let size = 0;
    if (x < ids.length) {
      const k = ids[x]!;
      p = g.writes[g.write[k]!]!.partition[g.msg[k]!]! + 1;
      size = g.size(k) + RECORD_OVERHEAD_BYTES;
    }
    if (x === ids.length ? x > from : x > from && used[p]! > 0 && used[p]! + size > budget) {
      yield prepared ? preparedRequest(g, ids, from, x, touched, maxPartition + 2) : plainRequest(g, ids, from, x);
      for (const q of touched) used[q] = 0;
      touched = [];
      from = x;
    }
    if (x === ids.length) break;
    if (used[p] === 0) touched.push(p);
    used[p]! += size;
  }
}

/**
 * The request of messages ids[from, to): each partition's exact record bytes counted first, so the
 * request is laid out in one buffer (layoutRequest) and every record written straight from the
 * rows' bytes to its place in the request that is sent.
 */
function preparedRequest(g: GroupMessages, ids: readonly number[], from: number, to: number, touched: readonly number[], slots: number): SinkRequest {
  const records = new Int32Array(slots);
  const bytes = new Float64Array(slots);
  for (let x = from; x < to; x++) {
    const k = ids[x]!;
    const w = g.writes[g.write[k]!]!;
    const i = g.msg[k]!;
    const p = w.partition[i]! + 1;
    bytes[p]! += rangeRecordBytes(w.keyEnd[i]! - w.keyStart[i]!, w.valueEnd[i]! - w.valueStart[i]!, records[p]!++);
  }
  const order = [...touched].sort((a, b) => a - b);
  const batches = layoutRequest(order.map((p) => p - 1), order.map((p) => bytes[p]!));
  const writers = new Array<PreparedBatch['writer'] | undefined>(slots);
  for (let j = 0; j < order.length; j++) writers[order[j]!] = batches[j]!.writer;
  for (let x = from; x < to; x++) {
    const k = ids[x]!;
    const w = g.writes[g.write[k]!]!;
    const i = g.msg[k]!;
    writers[w.partition[i]! + 1]!.appendRange(w.keys, w.keyStart[i]!, w.keyEnd[i]!, w.values, w.valueStart[i]!, w.valueEnd[i]!);
  }
  return { count: to - from, messages: batches };
}

/**
 * Requests of whole sections (batch bodies a worker wrote), in message order: a request takes the
 * next section unless it already holds one of that partition (one batch per partition a request).
 * Each section is copied into its place in one piece.
 */
function* sectionRequests(g: GroupMessages): Generator<SinkRequest> {
  let parts: Array<{ readonly w: SinkWrite; readonly at: number }> = [];
  let held = new Set<number>();
  let count = 0;
  for (const w of g.writes) {
    const s = w.sections!;
    for (let at = 0; at < s.length; at += SECTION_STRIDE) {
      const p = s[at]!;
      if (held.has(p)) {
        yield sectionRequest(parts, count);
        parts = [];
        held = new Set();
        count = 0;
      }
      parts.push({ w, at });
      held.add(p);
      count += s[at + 2]!;
    }
  }
  if (parts.length > 0) yield sectionRequest(parts, count);
}

function sectionRequest(parts: Array<{ readonly w: SinkWrite; readonly at: number }>, count: number): SinkRequest {
  parts.sort((a, b) => a.w.sections![a.at]! - b.w.sections![b.at]!);
  const batches = layoutRequest(parts.map((x) => x.w.sections![x.at]!), parts.map((x) => x.w.sections![x.at + 4]! - x.w.sections![x.at + 3]!));
  for (let j = 0; j < parts.length; j++) {
    const { w, at } = parts[j]!;
    const s = w.sections!;
    batches[j]!.writer.appendRecords(w.values, s[at + 3]!, s[at + 4]!, s[at + 2]!, s[at + 5]!);
  }
  producePaths.sections += parts.length;
  return { count, messages: batches };
}

function plainRequest(g: GroupMessages, ids: readonly number[], from: number, to: number): SinkRequest {
  const messages: Message[] = [];
  for (let x = from; x < to; x++) {
    const k = ids[x]!;
    const w = g.writes[g.write[k]!]!;
    const i = g.msg[k]!;
    const p = w.partition[i]!;
    const m = { key: w.keys.subarray(w.keyStart[i]!, w.keyEnd[i]!), value: w.values.subarray(w.valueStart[i]!, w.valueEnd[i]!) };
    messages.push(p >= 0 ? { ...m, partition: p } : m);
  }
  return { count: to - from, messages };
}

/**
 * Runs a write of the group's messages (by number); when the broker refuses records (the topic's
 * max.message.bytes was lowered since it was read), the rows now over the limit are returned as
 * rejected and the rest written once more.
 */
export async function withRefusals(c: GroupWriteContext, group: readonly SinkWrite[], run: (g: GroupMessages, ids: readonly number[]) => Promise<void>): Promise<Map<SinkWrite, RowRejection[]>> {
  const refused = new Map<SinkWrite, RowRejection[]>();
  const g = new GroupMessages(group);
  await sendRefusingOversizeBy(g.all, c.limits, (ids) => run(g, ids), (k) => g.size(k), (k, why, max) => {
    const w = group[g.write[k]!]!;
    const list = refused.get(w) ?? [];
    list.push({ index: w.rowIndex[g.msg[k]!]!, detail: `kafka: ${c.topic} refused the row (${why}): ${g.size(k)} bytes (key and value) is over max.message.bytes=${max}` });
    refused.set(w, list);
  });
  return refused;
}

export function writeIdempotent(c: GroupWriteContext, id: string, group: readonly SinkWrite[]): Promise<Map<SinkWrite, RowRejection[]>> {
  const rows = group.reduce((a, w) => a + w.rows, 0);
  return withRefusals(c, group, (g, ids) => c.producers.run(id, async (producer, slot) => {
    let sent = 0;
    try {
      for (const r of requests(c, g, ids)) {
        await producer.send({ topic: c.topic, acks: -1, compression: c.codec, messages: r.messages as Message[] });
        releasePrepared(r.messages);
        sent += r.count;
      }
    } catch (err) {
      // A failed idempotent send leaves kafkajs's sequence numbers out of step: start afresh.
      void c.producers.discard(slot);
      const why = rowLevelRefusal(err);
      const failure = new StreamstatsError('STREAMSTATS_SINK', `kafka: writing ${rows} rows to ${c.topic} failed: ${(err as Error).message}`, { cause: err, canRetry: true });
      // At least once: what went out before the refusal stays written; the rest is retried.
      throw why === null ? failure : new RecordsRefused(why, failure, sent);
    }
  }));
}
