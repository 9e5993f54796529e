// Our record-batch encoder (./record-batch.ts) under kafkajs 2.2.4's producer, so the bytes sent are
// ours while kafkajs keeps doing what it does well: metadata, leaders, retries, the idempotent
// producer's sequence numbers, transactions. Two of its modules are replaced in its CommonJS module
// cache:
// - producer/groupMessagesPerPartition.js, which copied a partition's whole message list for every
//   message it added (`[...current, message]`: quadratic in a request's messages) and ran the
//   partitioner per message. Ours is linear, and takes a PreparedBatch (a partition's records,
//   already written by the caller) as that partition's messages: kafkajs then counts its records for
//   the sequence numbers (`messages.length`) and hands it to the request encoder untouched.
//   sendMessages.js takes it when kafkajs is first loaded, so it must be in the cache before that
//   (./preload.ts, imported first by the entry points).
// - protocol/requests/produce/v3/request.js (which v4-v7 extend): the request, written into one
//   buffer. A PreparedBatch is sealed (header, producer id/epoch/sequence, CRC32C) and copied in; a
//   partition of kafkajs messages (the dead-letter output, streamstats-produce) is encoded by
//   encodeMessages(). kafkajs loads it on the first produce, so installing it any time before is enough.
// - protocol/request.js, the framing of every request (size, api key and version, correlation id,
//   client id): kafkajs copied each request twice into buffers it grew by doubling with Buffer.alloc
//   (zero-filled), a produce request of 1 MiB included. Ours writes the frame into the headroom a
//   produce body leaves before itself (no copy at all), and copies any other body once.
//   connection.js takes it when kafkajs is first loaded, as sendMessages.js takes the grouping.
// On another kafkajs release (./internals.ts) nothing is replaced.
import Module from 'node:module';
import { BufferPool } from './buffer-pool.js';
import { kafkajsInternals, kafkajsRequire } from './internals.js';
import { BATCH_HEADER_BYTES, encodeMessages, RecordBatchWriter, type BatchProducer, type PlainMessage } from './record-batch.js';

/**
 * One partition's records for one produce request, written by the caller: passed to kafkajs's
 * send() as one "message" of `messages`. `length` is its record count (kafkajs's sequence numbers
 * advance by it); `value` is there because kafkajs refuses a message whose value is undefined.
 * A batch of a RequestLayout lies in that layout's buffer at `entry` (its partition and size fields,
 * then the batch).
 */
export class PreparedBatch {
  readonly value = null;
  /** The request buffer it was last copied into (for releasePrepared()). */
  request: Buffer | null = null;
  constructor(
    readonly partition: number,
    readonly writer: RecordBatchWriter,
    readonly layout: RequestLayout | null = null,
    readonly entry = -1,
  ) {}

  get length(): number {
    return this.writer.count;
  }
}

/** Produce request buffers, reused once their broker answered (releasePrepared). */
const REQUESTS = new BufferPool(16 * 1024 * 1024);

/** Room for the frame before a request body (size, api key, version, correlation id, a client id of up to 242 bytes). */
const HEADROOM = 256;
/** Room before a laid-out request's first batch: the frame, then the request's own fields (transactional id, acks, timeout, topic). */
const LAYOUT_ROOM = HEADROOM + 1024;
/** A partition's entry in a produce request before its batch: partition int32, batch size int32. */
const ENTRY_BYTES = 8;

/**
 * A produce request laid out before its records are written: one buffer, each partition's batch at
 * its place, so that encoding only seals the batches where they lie and writes the request's fields
 * and frame before the first (no copy of the records). Only a first encoding writes in place: kafkajs
 * encodes again when it retries, while the first request may still be queued on its socket, and
 * then the batches are copied out first.
 */
export class RequestLayout {
  readonly batches: PreparedBatch[] = [];
  encoded = false;
  released = false;
  constructor(readonly buf: Buffer) {}
}

/**
 * Writers for one request's partitions (ascending, as kafkajs orders a request's partitions), each
 * at its place in one buffer: recordBytes[j] is the exact size of partition j's records
 * (rangeRecordBytes summed); a writer given more moves to a buffer of its own and its request is
 * then copied as before.
 */
export function layoutRequest(partitions: readonly number[], recordBytes: readonly number[]): PreparedBatch[] {
  let size = LAYOUT_ROOM;
  for (const n of recordBytes) size += ENTRY_BYTES + BATCH_HEADER_BYTES + n;
  const layout = new RequestLayout(REQUESTS.take(size));
  let at = LAYOUT_ROOM;
  for (let j = 0; j < partitions.length; j++) {
    const w = new RecordBatchWriter(recordBytes[j]!, REQUESTS, layout.buf, at + ENTRY_BYTES);
    layout.batches.push(new PreparedBatch(partitions[j]!, w, layout, at));
    at += ENTRY_BYTES + BATCH_HEADER_BYTES + recordBytes[j]!;
  }
  return layout.batches;
}

/**
 * After the send of these batches succeeded (the broker answered, so the request was written): their
 * writers' buffers and the request's go back to their pools. Not after a failure: a request that
 * timed out may still be queued on its socket.
 */
export function releasePrepared(batches: readonly unknown[]): void {
  for (const b of batches) {
    if (!(b instanceof PreparedBatch)) continue;
    b.writer.release();
    if (b.layout !== null && !b.layout.released) {
      b.layout.released = true;
      REQUESTS.give(b.layout.buf);
    }
    if (b.request !== null) REQUESTS.give(b.request);
    b.request = null;
  }
}

/** Evidence for the tests that our encoder wrote what was sent: batches by kind (sections: laid out from a worker's records). */
export const producePaths = { prepared: 0, messages: 0, inPlace: 0, sections: 0 };

type Partitioner = (a: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;

/** kafkajs's groupMessagesPerPartition, linear, with PreparedBatch as a partition's messages. */
export function groupMessagesPerPartition({ topic, partitionMetadata, messages, partitioner }: { topic: string; partitionMetadata: unknown[]; messages: readonly unknown[]; partitioner: Partitioner }): Record<number, unknown> {
  if (partitionMetadata.length === 0) return {};
  const out: Record<number, unknown[] | PreparedBatch> = {};
  for (const message of messages) {
    if (message instanceof PreparedBatch) {
      if (out[message.partition] !== undefined) throw new Error(`kafka: two record sets for ${topic}/${message.partition} in one send`);
      out[message.partition] = message;
      continue;
    }
    const partition = partitioner({ topic, partitionMetadata, message });
    const list = out[partition];
    if (list instanceof PreparedBatch) throw new Error(`kafka: messages and a record set for ${topic}/${partition} in one send`);
    if (list === undefined) out[partition] = [message];
    else list.push(message);
  }
  return out;
}

interface PartitionData {
  readonly partition: number | string;
  readonly firstSequence?: number;
  readonly messages: PreparedBatch | readonly PlainMessage[];
}
interface ProduceArgs {
  readonly acks: number;
  readonly timeout: number;
  readonly transactionalId?: string | null;
  readonly producerId?: unknown;
  readonly producerEpoch?: number;
  readonly compression?: number;
  readonly topicData: ReadonlyArray<{ readonly topic: string; readonly partitions: readonly PartitionData[] }>;
}

/** What kafkajs's request framing (protocol/request.js) reads of an encoded request body. */
interface EncodedBody {
  readonly buf: Buffer;
  readonly buffer: Buffer;
}

/** A request body at buf[start, end), with room for its frame before it. */
class BodyWithHeadroom implements EncodedBody {
  constructor(readonly buf: Buffer, readonly start: number, readonly end: number) {}

  get buffer(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }
}

/** kafkajs's protocol/request.js: the request framed; a body with headroom is framed in place. */
export async function createRequest({ correlationId, clientId, request }: { correlationId: number; clientId: string | null; request: { apiKey: number; apiVersion: number; encode(): Promise<EncodedBody> } }): Promise<EncodedBody> {
  const body = await request.encode();
  const id = clientId === null || clientId === undefined ? null : Buffer.from(clientId);
  const head = 4 + 2 + 2 + 4 + 2 + (id === null ? 0 : id.length);
  let buf: Buffer;
  let o: number;
  let end: number;
  if (body instanceof BodyWithHeadroom && head <= body.start) {
    buf = body.buf;
    o = body.start - head;
    end = body.end;
  } else {
    const b = body.buffer;
    buf = Buffer.allocUnsafe(head + b.length);
    b.copy(buf, head);
    o = 0;
    end = buf.length;
  }
  const start = o;
  o = buf.writeInt32BE(end - start - 4, o);
  o = buf.writeInt16BE(request.apiKey, o);
  o = buf.writeInt16BE(request.apiVersion, o);
  o = buf.writeInt32BE(correlationId, o);
  if (id === null) {
    buf.writeInt16BE(-1, o);
  } else {
    o = buf.writeInt16BE(id.length, o);
    id.copy(buf, o);
  }
  const framed = start === 0 && end === buf.length ? buf : buf.subarray(start, end);
  return { buf: framed, buffer: framed };
}

/** kafkajs's Produce v3 request (transactional_id, acks, timeout, [topic [partition record_set]]). */
export function produceRequestV3({ acks, timeout, transactionalId = null, producerId = -1, producerEpoch = 0, compression = 0, topicData }: ProduceArgs) {
  return {
    apiKey: 0,
    apiVersion: 3,
    apiName: 'Produce',
    expectResponse: () => acks !== 0,
    encode: async (): Promise<EncodedBody> => {
      const now = Date.now();
      const pid = BigInt(String(producerId));
      const transactional = transactionalId !== null && transactionalId !== undefined && transactionalId !== '';
      const tid = transactionalId === null || transactionalId === undefined ? null : Buffer.from(transactionalId);
      const producerOf = (p: PartitionData): BatchProducer => ({ producerId: pid, producerEpoch, firstSequence: p.firstSequence ?? 0, transactional });
      const layout = inPlace(topicData, compression);
      if (layout !== null) {
        const name = Buffer.from(topicData[0]!.topic);
        const parts = topicData[0]!.partitions;
        const start = layout.batches[0]!.entry - (2 + (tid === null ? 0 : tid.length) + 2 + 4 + 4 + 2 + name.length + 4);
        if (start >= HEADROOM) {
          layout.encoded = true;
          const buf = layout.buf;
          let o = start;
          o = writeString(buf, o, tid);
          o = buf.writeInt16BE(acks, o);
          o = buf.writeInt32BE(timeout, o);
          o = buf.writeInt32BE(1, o);
          o = writeString(buf, o, name);
          o = buf.writeInt32BE(parts.length, o);
          for (const p of parts) {
            const b = p.messages as PreparedBatch;
            const sealed = b.writer.sealUncompressed(now, producerOf(p));
            o = buf.writeInt32BE(b.partition, o);
            o = buf.writeInt32BE(sealed.length, o);
            o += sealed.length;
            producePaths.prepared++;
            producePaths.inPlace++;
          }
          return new BodyWithHeadroom(buf, start, o);
        }
      }
      const batches: Buffer[][] = [];
      const topics: Buffer[] = [];
      const prepared: PreparedBatch[] = [];
      let size = 2 + 2 + 4 + 4;
      size += tid === null ? 0 : tid.length;
      for (const t of topicData) {
        const name = Buffer.from(t.topic);
        topics.push(name);
        size += 2 + name.length + 4;
        const list: Buffer[] = [];
        for (const p of t.partitions) {
          let b: Buffer;
          if (p.messages instanceof PreparedBatch) {
            const l = p.messages.layout;
            // Bytes of a request encoded in place may still be on their way: seal elsewhere.
            if (l !== null && l.encoded) p.messages.writer.detach();
            if (l !== null) l.encoded = true;
            b = await p.messages.writer.seal(compression, now, producerOf(p));
            prepared.push(p.messages);
            producePaths.prepared++;
          } else {
            b = await encodeMessages(p.messages, compression, producerOf(p), now);
            producePaths.messages++;
          }
          list.push(b);
          size += 4 + 4 + b.length;
        }
        batches.push(list);
      }
      const buf = REQUESTS.take(HEADROOM + size);
      let o = HEADROOM;
      o = writeString(buf, o, tid);
      o = buf.writeInt16BE(acks, o);
      o = buf.writeInt32BE(timeout, o);
      o = buf.writeInt32BE(topicData.length, o);
      for (let i = 0; i < topicData.length; i++) {
        const t = topicData[i]!;
        o = writeString(buf, o, topics[i]!);
        o = buf.writeInt32BE(t.partitions.length, o);
        for (let j = 0; j < t.partitions.length; j++) {
          const b = batches[i]![j]!;
          o = buf.writeInt32BE(Number(t.partitions[j]!.partition), o);
          o = buf.writeInt32BE(b.length, o);
          o += b.copy(buf, o);
        }
      }
      for (const p of prepared) p.request = buf;
      return new BodyWithHeadroom(buf, HEADROOM, o);
    },
  };
}

/** A Kafka string (int16 length, -1 for null) at o; returns the offset after it. */
function writeString(buf: Buffer, o: number, s: Buffer | null): number {
  if (s === null) return buf.writeInt16BE(-1, o);
  o = buf.writeInt16BE(s.length, o);
  return o + s.copy(buf, o);
}

/**
 * The layout a request can be encoded in: one topic, no codec (a compressed batch is a new buffer
 * anyway), exactly the layout's batches in its order (kafkajs sends a leader's partitions
 * ascending; a cluster that splits them over leaders gets the copy), each still where it was laid
 * out and directly after the one before, and never encoded before.
 */
function inPlace(topicData: ProduceArgs['topicData'], compression: number): RequestLayout | null {
  if ((compression & 0x07) !== 0 || topicData.length !== 1) return null;
  const parts = topicData[0]!.partitions;
  const first = parts[0]?.messages;
  if (!(first instanceof PreparedBatch) || first.layout === null || first.layout.encoded) return null;
  const layout = first.layout;
  if (parts.length !== layout.batches.length) return null;
  let at = layout.batches[0]!.entry;
  for (let j = 0; j < parts.length; j++) {
    const b = parts[j]!.messages;
    if (b !== layout.batches[j] || Number(parts[j]!.partition) !== b.partition || b.entry !== at || !b.writer.isAt(layout.buf, at + ENTRY_BYTES)) return null;
    at += ENTRY_BYTES + b.writer.size;
  }
  return layout;
}

interface Parts {
  readonly groupPath: string;
  readonly sendMessagesPath: string;
  readonly requestV3Path: string;
  readonly requestPath: string;
  readonly connectionPath: string;
}

const K = kafkajsInternals<Parts>((r) => ({
  groupPath: r.resolve('kafkajs/src/producer/groupMessagesPerPartition.js'),
  sendMessagesPath: r.resolve('kafkajs/src/producer/sendMessages.js'),
  requestV3Path: r.resolve('kafkajs/src/protocol/requests/produce/v3/request.js'),
  requestPath: r.resolve('kafkajs/src/protocol/request.js'),
  connectionPath: r.resolve('kafkajs/src/network/connection.js'),
}));

function cached(path: string, exports: unknown): void {
  const m = new Module(path);
  m.filename = path;
  m.loaded = true;
  m.exports = exports;
  kafkajsRequire.cache[path] = m;
}

/** True when kafkajs's producer takes PreparedBatch (the grouping and the request are ours). */
export function preparedBatchesAccepted(): boolean {
  return K !== null && kafkajsRequire.cache[K.groupPath]?.exports === groupMessagesPerPartition && kafkajsRequire.cache[K.requestV3Path]?.exports === produceRequestV3;
}

/** True when kafkajs's connections frame requests with createRequest. */
export function requestFramingInstalled(): boolean {
  return K !== null && kafkajsRequire.cache[K.requestPath]?.exports === createRequest;
}

/** True when kafkajs's produce requests are encoded by produceRequestV3 (plain messages included). */
export function produceRequestInstalled(): boolean {
  return K !== null && kafkajsRequire.cache[K.requestV3Path]?.exports === produceRequestV3;
}

/**
 * Puts the replacements in kafkajs's module cache where it still can: the produce request before the
 * first produce, the grouping and the framing before kafkajs is loaded. Returns preparedBatchesAccepted().
 */
export function installProduceEncoder(): boolean {
  if (K === null) return false;
  if (kafkajsRequire.cache[K.requestV3Path] === undefined) cached(K.requestV3Path, produceRequestV3);
  if (kafkajsRequire.cache[K.groupPath] === undefined && kafkajsRequire.cache[K.sendMessagesPath] === undefined) cached(K.groupPath, groupMessagesPerPartition);
  if (kafkajsRequire.cache[K.requestPath] === undefined && kafkajsRequire.cache[K.connectionPath] === undefined) cached(K.requestPath, createRequest);
  return preparedBatchesAccepted();
}
