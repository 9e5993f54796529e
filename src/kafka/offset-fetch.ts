// Stable committed offsets (KIP-447's require_stable) for kafkajs 2.2.4, which frames OffsetFetch up to
// version 4 only. An exactly-once restore reads the group's committed offsets right after fencing the
// previous owner; the coordinator applies a transaction's offsets a moment after its commit markers
// are written, so a plain read can still show the commit before. OffsetFetch v7 with require_stable
// makes the coordinator answer UNSTABLE_OFFSET_COMMIT (retriable) for a partition while a transaction
// holds offsets for it, instead of the old offset: the reader retries until the answer is final, as
// Java's read_committed consumer does.
//
// kafkajs picks a request's version as the highest that both it and the broker know; its OffsetFetch
// definition is given version 7, and a fetch made inside stableOffsets() goes out as ours (v7,
// require_stable), while every other fetch (the consumer's, an admin's) is framed by kafkajs at the
// version it used before (at most 4). v7 is a "flexible" version (compact strings and arrays, tagged
// fields): kafkajs writes the v1 request header and reads the v0 response header, so the body starts
// with the request header's empty tagged fields and the response's begin with the response header's.
// Pure encode/decode below; the patch loads kafkajs's modules only on the release they mirror.
import { AsyncLocalStorage } from 'node:async_hooks';
import { kafkajsInternals } from './internals.js';

/** Kafka's api key of OffsetFetch, and the version that can ask for stable offsets. */
const OFFSET_FETCH = 9;
export const STABLE_OFFSET_FETCH_VERSION = 7;
/** The highest version kafkajs 2.2.4 frames itself. */
const KAFKAJS_MAX_VERSION = 4;

export interface OffsetFetchTopic {
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number }>;
}

/** The decoded answer, shaped as kafkajs's v4 decoder gives it (its parse and admin read these fields). */
export interface OffsetFetchAnswer {
  readonly throttleTime: number;
  readonly clientSideThrottleTime: number;
  readonly responses: Array<{ topic: string; partitions: Array<{ partition: number; offset: string; metadata: string | null; errorCode: number }> }>;
  readonly errorCode: number;
}

class Writer {
  #buf = Buffer.allocUnsafe(256);
  #at = 0;

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + n));
    this.#buf.copy(next, 0, 0, this.#at);
    this.#buf = next;
  }

  uvarint(v: number): this {
    this.#room(5);
    while (v >= 0x80) {
      this.#buf[this.#at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.#buf[this.#at++] = v;
    return this;
  }

  int8(v: number): this {
    this.#room(1);
    this.#buf[this.#at++] = v;
    return this;
  }

  int32(v: number): this {
    this.#room(4);
    this.#at = this.#buf.writeInt32BE(v, this.#at);
    return this;
  }

  compactString(s: string): this {
    const n = Buffer.byteLength(s);
    this.uvarint(n + 1);
    this.#room(n);
    this.#at += this.#buf.write(s, this.#at, 'utf8');
    return this;
  }

  bytes(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

/**
 * The body of an OffsetFetch v7 request with require_stable, after a v1 request header: the v2
 * header's empty tagged fields, then group_id, topics ([name, [partition_indexes]]), require_stable.
 */
export function encodeStableOffsetFetch(groupId: string, topics: readonly OffsetFetchTopic[]): Buffer {
  const w = new Writer().uvarint(0).compactString(groupId).uvarint(topics.length + 1);
  for (const t of topics) {
    w.compactString(t.topic).uvarint(t.partitions.length + 1);
    for (const p of t.partitions) w.int32(p.partition);
    w.uvarint(0);
  }
  return w.int8(1).uvarint(0).bytes();
}

/** A flexible response's bytes, read with every length checked against what is there. */
class Reader {
  #at = 0;
  constructor(private readonly buf: Buffer) {}

  #need(n: number, what: string): void {
    if (n < 0 || this.#at + n > this.buf.length) {
      throw new Error(`OffsetFetch v${STABLE_OFFSET_FETCH_VERSION} response: ${what} at byte ${this.#at} runs past its ${this.buf.length} bytes`);
    }
  }

  uvarint(what: string): number {
    let v = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      this.#need(1, what);
      const b = this.buf[this.#at++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
    }
    throw new Error(`OffsetFetch v${STABLE_OFFSET_FETCH_VERSION} response: ${what} at byte ${this.#at} is a varint longer than 5 bytes`);
  }

  int16(): number {
    this.#need(2, 'an int16');
    const v = this.buf.readInt16BE(this.#at);
    this.#at += 2;
    return v;
  }

  int32(): number {
    this.#need(4, 'an int32');
    const v = this.buf.readInt32BE(this.#at);
    this.#at += 4;
    return v;
  }

  int64(): string {
    this.#need(8, 'an int64');
    const v = this.buf.readBigInt64BE(this.#at);
    this.#at += 8;
    return v.toString();
  }

  /** A compact nullable string: null for length 0. */
  string(what: string): string | null {
    const n = this.uvarint(what) - 1;
    if (n < 0) return null;
    this.#need(n, what);
    const s = this.buf.toString('utf8', this.#at, this.#at + n);
    this.#at += n;
    return s;
  }

  /** A compact array's length (a null array reads as empty). */
  count(what: string): number {
    const n = this.uvarint(what) - 1;
    // Every element takes at least one byte: a count beyond the bytes left is a broken frame.
    this.#need(Math.max(n, 0), what);
    return Math.max(n, 0);
  }

  /** Tagged fields: skipped (none of this version's are read). */
  tags(): void {
    for (let n = this.uvarint('tagged fields'); n > 0; n--) {
      this.uvarint('a tag');
      const size = this.uvarint('a tagged field size');
      this.#need(size, 'a tagged field');
      this.#at += size;
    }
  }
}

/** An OffsetFetch v7 response after its correlation id (the v1 response header's tagged fields first). */
export function decodeStableOffsetFetch(buf: Buffer): OffsetFetchAnswer {
  const r = new Reader(buf);
  r.tags();
  const throttleTime = r.int32();
  const responses: OffsetFetchAnswer['responses'] = [];
  for (let t = r.count('topics'); t > 0; t--) {
    const topic = r.string('a topic name') ?? '';
    const partitions: OffsetFetchAnswer['responses'][number]['partitions'] = [];
    for (let p = r.count('partitions'); p > 0; p--) {
      const partition = r.int32();
      const offset = r.int64();
      r.int32(); // committed_leader_epoch
      const metadata = r.string('metadata');
      const errorCode = r.int16();
      r.tags();
      partitions.push({ partition, offset, metadata, errorCode });
    }
    r.tags();
    responses.push({ topic, partitions });
  }
  const errorCode = r.int16();
  r.tags();
  return { throttleTime: 0, clientSideThrottleTime: throttleTime, responses, errorCode };
}

/** What a fetch inside stableOffsets() went out as: the version, 0 until sent. */
interface StableFetch {
  version: number;
}

const asking = new AsyncLocalStorage<StableFetch>();

/**
 * Runs `read` (an admin's fetchOffsets) with its OffsetFetch asking for stable offsets where the
 * broker can be asked (v7+). `stable` says whether it was: false on a broker older than Kafka 2.5, on
 * another kafkajs release, or when `read` sent no OffsetFetch. A partition with a transaction's
 * offsets still pending fails the read with kafkajs's UNSTABLE_OFFSET_COMMIT (retriable).
 */
export async function stableOffsets<T>(read: () => Promise<T>): Promise<{ result: T; stable: boolean }> {
  const probe: StableFetch = { version: 0 };
  const result = await asking.run(probe, read);
  return { result, stable: probe.version >= STABLE_OFFSET_FETCH_VERSION };
}

/** True for the coordinator's answer that a transaction still holds offsets for a partition. */
export function isUnstableOffsets(err: unknown): boolean {
  const x = err as { type?: unknown; code?: unknown } | null;
  return x !== null && typeof x === 'object' && (x.type === 'UNSTABLE_OFFSET_COMMIT' || x.code === 88);
}

const PATCHED = Symbol.for('streamstats.stableOffsetFetchPatched');

interface OffsetFetchDefinition {
  versions: string[];
  protocol: (a: { version: number }) => unknown;
  [PATCHED]?: true;
}

interface Kafkajs {
  definition: OffsetFetchDefinition;
  Encoder: new () => { writeBuffer(b: Buffer): unknown };
  parseV4: (data: OffsetFetchAnswer) => Promise<OffsetFetchAnswer>;
}

/** Gives kafkajs 2.2.4's OffsetFetch our v7 (idempotent); false for another release or layout (left as it is). */
export function patchStableOffsetFetch(): boolean {
  const k = kafkajsInternals<Kafkajs>((r) => ({
    definition: r('kafkajs/src/protocol/requests/offsetFetch/index.js') as OffsetFetchDefinition,
    Encoder: r('kafkajs/src/protocol/encoder.js') as Kafkajs['Encoder'],
    parseV4: (r('kafkajs/src/protocol/requests/offsetFetch/v4/response.js') as { parse: Kafkajs['parseV4'] }).parse,
  }));
  if (k === null) return false;
  const { definition, Encoder, parseV4 } = k;
  if (definition[PATCHED] === true) return true;
  const framed = definition.protocol;
  if (typeof framed !== 'function' || !Array.isArray(definition.versions) || typeof parseV4 !== 'function') return false;
  definition.versions.push(String(STABLE_OFFSET_FETCH_VERSION));
  definition.protocol = ({ version }: { version: number }) => {
    const probe = asking.getStore();
    if (probe === undefined || version < STABLE_OFFSET_FETCH_VERSION) {
      const v = Math.min(version, KAFKAJS_MAX_VERSION);
      if (probe !== undefined) probe.version = v;
      return framed({ version: v });
    }
    probe.version = STABLE_OFFSET_FETCH_VERSION;
    return ({ groupId, topics }: { groupId: string; topics: OffsetFetchTopic[] }) => ({
      request: {
        apiKey: OFFSET_FETCH,
        apiVersion: STABLE_OFFSET_FETCH_VERSION,
        apiName: 'OffsetFetch',
        encode: async () => new Encoder().writeBuffer(encodeStableOffsetFetch(groupId, topics)),
      },
      response: {
        decode: async (payload: Buffer) => decodeStableOffsetFetch(payload),
        // kafkajs's v2-v4 parse: the first error (the group's, else a partition's) thrown as its error.
        parse: parseV4,
      },
    });
  };
  definition[PATCHED] = true;
  return true;
}
