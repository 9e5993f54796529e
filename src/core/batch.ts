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

/**
 * Accumulates messages into one contiguous buffer; grows by doubling. The buffer is shared memory
 * (SharedArrayBuffer) and handed over whole by take(), never copied: the pool lets a worker read it
 * in place while the main thread keeps the same bytes for dead letters and retries (nobody writes to
 * a taken batch). Sources write messages straight into it, in parts (append* then end()).
 */
export class BatchBuilder {
  #buf: Buffer;
  #len = 0;
  #offsets: number[] = [0];
  /** Capacity of the next batch's buffer: what the last batch needed, so a steady stream never regrows. */
  #capacity: number;

  constructor(initialBytes = 64 * 1024) {
    this.#capacity = initialBytes;
    this.#buf = sharedBuffer(initialBytes);
  }

  get count(): number {
    return this.#offsets.length - 1;
  }

  get bytes(): number {
    return this.#len;
  }

  push(msg: Uint8Array, start = 0, end = msg.length): void {
    this.append(msg, start, end);
    this.end();
  }

  pushString(s: string): void {
    this.appendString(s);
    this.end();
  }

  /** Appends bytes to the current message. */
  append(bytes: Uint8Array, start = 0, end = bytes.length): void {
    this.#reserve(end - start);
    this.#buf.set(end - start === bytes.length ? bytes : bytes.subarray(start, end), this.#len);
    this.#len += end - start;
  }

  appendString(s: string): void {
    // 3 bytes per UTF-16 unit at most: reserve without measuring the string first.
    this.#reserve(s.length * 3);
    this.#len += this.#buf.write(s, this.#len);
  }

  /** Appends a non-negative safe integer in decimal, as JSON writes it. */
  appendUint(n: number): void {
    if (!(Number.isSafeInteger(n) && n >= 0)) {
      this.appendString(String(n));
      return;
    }
    this.#reserve(16);
    const buf = this.#buf;
    let end = this.#len;
    if (n < 10) {
      buf[end++] = 0x30 + n;
    } else {
      let digits = 0;
      for (let x = n; x >= 1; x = Math.floor(x / 10)) digits++;
      end += digits;
      for (let i = end - 1, x = n; i >= this.#len; i--, x = Math.floor(x / 10)) buf[i] = 0x30 + (x % 10);
    }
    this.#len = end;
  }

  /** Ends the current message. */
  end(): void {
    this.#offsets.push(this.#len);
  }

  /** Returns the packed messages (the builder's own buffer, not a copy) and starts a new buffer. */
  take(): { data: Buffer; offsets: Uint32Array } {
    const data = this.#buf.subarray(0, this.#len);
    const offsets = Uint32Array.from(this.#offsets);
    this.#capacity = Math.max(this.#capacity, this.#len + (this.#len >> 3));
    this.#buf = sharedBuffer(this.#capacity);
    this.#len = 0;
    this.#offsets = [0];
    return { data, offsets };
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const grown = sharedBuffer(size);
    this.#buf.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
  }
}

function sharedBuffer(bytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(bytes));
}
