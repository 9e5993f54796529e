// Batches as the main thread holds them: the message bytes back to back plus offsets.
// Kept on the main thread until the batch is applied, so a crashed worker never loses it.

export interface Batch {
  /** Source partition (0 for unpartitioned sources). Windows, watermark and commits are per partition. */
  readonly partition: number;
  /** Monotonic per partition; partials are applied in this order. */
  readonly seq: number;
  readonly data: Buffer;
  /** offsets[i]..offsets[i+1] is message i in data. */
  readonly offsets: Uint32Array;
  /** Source positions of the messages (e.g. Kafka offsets as strings), same order; optional. */
  readonly positions?: readonly string[];
  /** Optional per-message keys, kept for the dead-letter output. */
  readonly keys?: ReadonlyArray<Buffer | null>;
  /** Position (Kafka offset) of the first message, and the position after the last one. */
  readonly startPosition?: number;
  readonly endPosition?: number;
  /** Source timestamps (ms) of the first and last message, for lag in seconds. */
  readonly firstTimestampMs?: number;
  readonly lastTimestampMs?: number;
  /**
   * Messages the source cut or could not read whole (message index -> size in bytes, and why): their
   * dead letters are too_large, keep what the batch holds and say how big the original was.
   */
  readonly oversized?: ReadonlyMap<number, { readonly bytes: number; readonly detail?: string }>;
}

export function messageCount(b: Pick<Batch, 'offsets'>): number {
  return b.offsets.length - 1;
}

export function messageBytes(b: Pick<Batch, 'data' | 'offsets'>, i: number): Buffer {
  return b.data.subarray(b.offsets[i]!, b.offsets[i + 1]!);
}

/** Accumulates messages into one contiguous buffer; grows by doubling. */
export class BatchBuilder {
  #buf: Buffer;
  #len = 0;
  #offsets: number[] = [0];

  constructor(initialBytes = 64 * 1024) {
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  get count(): number {
    return this.#offsets.length - 1;
  }

  get bytes(): number {
    return this.#len;
  }

  push(msg: Uint8Array, start = 0, end = msg.length): void {
    this.#reserve(end - start);
    this.#buf.set(msg.subarray(start, end), this.#len);
    this.#len += end - start;
    this.#offsets.push(this.#len);
  }

  pushString(s: string): void {
    this.#reserve(Buffer.byteLength(s));
    this.#len += this.#buf.write(s, this.#len);
    this.#offsets.push(this.#len);
  }

  /** Returns the packed messages and resets the builder. */
  take(): { data: Buffer; offsets: Uint32Array } {
    const data = Buffer.from(this.#buf.subarray(0, this.#len));
    const offsets = Uint32Array.from(this.#offsets);
    this.#len = 0;
    this.#offsets = [0];
    return { data, offsets };
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.#buf.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
  }
}
