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
import { encodeMessages, type BatchProducer, type PlainMessage, type RecordBatchWriter } from './record-batch.js';

/**
 * One partition's records for one produce request, written by the caller: passed to kafkajs's
 * send() as one "message" of `messages`. `length` is its record count (kafkajs's sequence numbers
 * advance by it); `value` is there because kafkajs refuses a message whose value is undefined.
 */
export class PreparedBatch {
  readonly value = null;
  /** The request buffer it was last encoded into (for releasePrepared()). */
  request: Buffer | null = null;
  constructor(
    readonly partition: number,
    readonly writer: RecordBatchWriter,
  ) {}

  get length(): number {
    return this.writer.count;
  }
}

/** Produce request buffers, reused once their broker answered (releasePrepared). */
const REQUESTS = new BufferPool(16 * 1024 * 1024);

/**
 * After the send of these batches succeeded (the broker answered, so the request was written): their
 * writers' buffers and the request's go back to their pools. Not after a failure: a request that
 * timed out may still be queued on its socket.
 */
export function releasePrepared(batches: readonly unknown[]): void {
  for (const b of batches) {
    if (!(b instanceof PreparedBatch)) continue;
    b.writer.release();
    if (b.request !== null) REQUESTS.give(b.request);
    b.request = null;
  }
}

/** Evidence for the tests that our encoder wrote what was sent: batches by kind. */
export const producePaths = { prepared: 0, messages: 0 };

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

/** Room before a produce body for the frame: size, api key, version, correlation id, and a client id of up to 242 bytes. */
const HEADROOM = 256;

/** A request body at buf[HEADROOM, end), with room for its frame before it. */
class BodyWithHeadroom implements EncodedBody {
  constructor(readonly buf: Buffer, readonly end: number) {}

  get buffer(): Buffer {
    return this.buf.subarray(HEADROOM, this.end);
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
  if (body instanceof BodyWithHeadroom && head <= HEADROOM) {
    buf = body.buf;
    o = HEADROOM - head;
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
      const batches: Buffer[][] = [];
      const topics: Buffer[] = [];
      const prepared: PreparedBatch[] = [];
      let size = 2 + 2 + 4 + 4;
      const tid = transactionalId === null || transactionalId === undefined ? null : Buffer.from(transactionalId);
      size += tid === null ? 0 : tid.length;
      for (const t of topicData) {
        const name = Buffer.from(t.topic);
        topics.push(name);
        size += 2 + name.length + 4;
        const list: Buffer[] = [];
        for (const p of t.partitions) {
          const producer: BatchProducer = { producerId: pid, producerEpoch, firstSequence: p.firstSequence ?? 0, transactional };
          let b: Buffer;
          if (p.messages instanceof PreparedBatch) {
            b = await p.messages.writer.seal(compression, now, producer);
            prepared.push(p.messages);
            producePaths.prepared++;
          } else {
            b = await encodeMessages(p.messages, compression, producer, now);
            producePaths.messages++;
          }
          list.push(b);
          size += 4 + 4 + b.length;
        }
        batches.push(list);
      }
      const buf = REQUESTS.take(HEADROOM + size);
      let o = HEADROOM;
      if (tid === null) {
        o = buf.writeInt16BE(-1, o);
      } else {
        o = buf.writeInt16BE(tid.length, o);
        o += tid.copy(buf, o);
      }
      o = buf.writeInt16BE(acks, o);
      o = buf.writeInt32BE(timeout, o);
      o = buf.writeInt32BE(topicData.length, o);
      for (let i = 0; i < topicData.length; i++) {
        const t = topicData[i]!;
        o = buf.writeInt16BE(topics[i]!.length, o);
        o += topics[i]!.copy(buf, o);
        o = buf.writeInt32BE(t.partitions.length, o);
        for (let j = 0; j < t.partitions.length; j++) {
          const b = batches[i]![j]!;
          o = buf.writeInt32BE(Number(t.partitions[j]!.partition), o);
          o = buf.writeInt32BE(b.length, o);
          o += b.copy(buf, o);
        }
      }
      for (const p of prepared) p.request = buf;
      return new BodyWithHeadroom(buf, o);
    },
  };
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
