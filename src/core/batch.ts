// Batches as the main thread holds them: the message bytes back to back plus offsets.
// Kept on the main thread until the batch is applied, so a crashed worker never loses it.

export interface Batch {
  /**
   * The lane the batch belongs to: the number its source gave it (a Kafka source one per held
   * partition and generation, a Redis source one per stream consumer, 0 for a pull source). Windows,
   * watermark and commit points are per lane.
   */
  readonly lane: number;
  /** Monotonic per lane; partials are applied in this order. */
  readonly seq: number;
  readonly data: Buffer;
  /** offsets[i]..offsets[i+1] is message i in data (but see ends). */
  readonly offsets: Uint32Array;
  /**
   * Where given, message i ends at ends[i] instead, and the bytes from there to offsets[i + 1] are
   * no message's: what separated the messages where the source read them (a line break), copied
   * with them so that a run of messages is one copy instead of one a message.
   */
  readonly ends?: Uint32Array;
  /** Source positions of the messages (Kafka offsets, Redis positions), same order; optional. */
  readonly positions?: readonly string[] | Float64Array;
  /** Optional per-message keys, kept for the dead-letter output (keyOf reads one). */
  readonly keys?: ReadonlyArray<Buffer | null> | PackedKeys;
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
  /**
   * Called by the engine once it is done with the batch's bytes (applied, dead letters made), so the
   * source may reuse the memory; at most once, and not at all is fine (the memory is then collected).
   */
  readonly release?: () => void;
}

/**
 * Keys that are ranges of one buffer (a Kafka fetch's record set), made into Buffers only when a dead
 * letter reads one: a view per message was an object per record on the main thread, for keys that
 * hardly any message ever shows. at[i] = -1: no key (null).
 */
export class PackedKeys {
  constructor(
    readonly set: Buffer,
    readonly at: Int32Array,
    readonly len: Int32Array,
  ) {}

  get length(): number {
    return this.at.length;
  }

  get(i: number): Buffer | null {
    const a = this.at[i];
    return a === undefined || a < 0 ? null : this.set.subarray(a, a + this.len[i]!);
  }

  slice(lo: number, hi: number): PackedKeys {
    return new PackedKeys(this.set, this.at.slice(lo, hi), this.len.slice(lo, hi));
  }
}

/** Message i's key (null: none, undefined: the batch keeps no keys). */
export function keyOf(keys: Batch['keys'], i: number): Buffer | null | undefined {
  if (keys === undefined) return undefined;
  return keys instanceof PackedKeys ? keys.get(i) : keys[i];
}

/**
 * A copy of a batch's offsets (it moves to the worker) made to count from the start of the batch's
 * buffer: a batch that is a view into a shared buffer (a Redis read's second batch) is read in place too.
 */
export function inBuffer(offsets: Uint32Array, byteOffset: number): Uint32Array {
  const out = offsets.slice();
  if (byteOffset !== 0) for (let i = 0; i < out.length; i++) out[i]! += byteOffset;
  return out;
}

/**
 * The batch's offsets and ends as copies that can move to a worker: counted from the start of the
 * batch's buffer where the worker reads that buffer in place (shared memory), else from the batch's
 * first byte (its bytes are copied into a buffer of their own).
 */
export function movableOffsets(b: Pick<Batch, 'data' | 'offsets' | 'ends'>, inPlace: boolean): { offsets: Uint32Array; ends?: Uint32Array } {
  const at = b.data.byteOffset;
  const offsets = inPlace ? inBuffer(b.offsets, at) : b.offsets.slice();
  if (b.ends === undefined) return { offsets };
  return { offsets, ends: inPlace ? inBuffer(b.ends, at) : b.ends.slice() };
}

export function messageCount(b: Pick<Batch, 'offsets'>): number {
  return b.offsets.length - 1;
}

export function messageBytes(b: Pick<Batch, 'data' | 'offsets' | 'ends'>, i: number): Buffer {
  return b.data.subarray(b.offsets[i]!, b.ends === undefined ? b.offsets[i + 1]! : b.ends[i]!);
}

/**
 * Messages lo..hi of a batch's offsets (and ends) made to count from the first one's start: the
 * bytes base..end of the batch's data hold them, the separator after the last one left out.
 */
export function messageRange(offsets: Uint32Array, ends: Uint32Array | undefined, lo: number, hi: number): { base: number; end: number; offsets: Uint32Array; ends?: Uint32Array } {
  const base = offsets[lo]!;
  const out = new Uint32Array(hi - lo + 1);
  for (let i = lo; i <= hi; i++) out[i - lo] = offsets[i]! - base;
  if (ends === undefined) return { base, end: offsets[hi]!, offsets: out };
  const e = new Uint32Array(hi - lo);
  for (let i = lo; i < hi; i++) e[i - lo] = ends[i]! - base;
  // The last message's separator is no part of the range: its end is where the range ends.
  const end = hi > lo ? ends[hi - 1]! : base;
  out[hi - lo] = end - base;
  return { base, end, offsets: out, ends: e };
}

/**
 * Accumulates messages into one contiguous buffer; grows by doubling. The buffer is shared memory
 * (SharedArrayBuffer) and handed over whole by take(), never copied: the pool lets a worker read it
 * in place while the main thread keeps the same bytes for dead letters and retries (nobody writes to
 * a taken batch). Sources write messages straight into it, in parts (append* then end()).
 */
export class BatchBuilder {
  /** Made on the first append (EMPTY until then). */
  #buf: Buffer;
  #len = 0;
  #offsets: number[] = [0];
  /** Each message's end, once a run of messages was copied with what separates them (pushSpans); null until then. */
  #ends: number[] | null = null;
  /** Bytes of the buffer between messages (pushSpans): no message's, so not counted by `bytes`. */
  #between = 0;
  /** Capacity of the next batch's buffer: what the last batch needed, so a steady stream never regrows. */
  #capacity: number;

  /** allocate: a fresh or reused shared buffer of at least the given size (a source may recycle them). */
  constructor(
    initialBytes = 64 * 1024,
    private readonly allocate: (bytes: number) => Buffer = sharedBuffer,
  ) {
    this.#capacity = Math.max(16, initialBytes);
    this.#buf = EMPTY;
  }

  get count(): number {
    return this.#offsets.length - 1;
  }

  /** Message bytes so far (what separates messages not counted: the batch's limits are on messages). */
  get bytes(): number {
    return this.#len - this.#between;
  }

  push(msg: Uint8Array, start = 0, end = msg.length): void {
    this.append(msg, start, end);
    this.end();
  }

  /**
   * Pushes messages src[spans[k], spans[k + 1]) for k = from, from + 2, ... below to, and stops after
   * the one that brings the batch to maxCount messages or maxBytes bytes (the check push-then-test
   * makes, on message bytes). Returns the k after the last one pushed. The run is
   * copied at once, with what lies between its messages (Batch.ends says where each one ends): a copy
   * a message cost the main thread about as much as all the rest of a line's handling.
   */
  pushSpans(src: Uint8Array, spans: Int32Array, from: number, to: number, maxCount: number, maxBytes: number): number {
    if (from >= to) return from;
    const offsets = this.#offsets;
    const ends = (this.#ends ??= offsets.slice(1));
    let count = offsets.length - 1;
    let k = from;
    for (;;) {
      // One run: messages whose separators are short, copied at once. A long separator (a megabyte of
      // blank lines between two records) ends the run instead of filling the batch with whitespace.
      const first = spans[k]!;
      const len = this.#len;
      // Where the run goes in the batch: position p of src is at p + shift.
      const shift = len - first;
      let between = this.#between;
      let full = false;
      let last = first;
      while (k < to) {
        const end = spans[k + 1]!;
        k += 2;
        ends.push(end + shift);
        full = ++count >= maxCount || end + shift - between >= maxBytes;
        // The next message starts where this one's separator ends; the run's last one ends at its end.
        const next = k < to ? spans[k]! : -1;
        if (full || next < 0 || next - end > MAX_SEPARATOR_BYTES) {
          offsets.push(end + shift);
          last = end;
          break;
        }
        offsets.push(next + shift);
        between += next - end;
      }
      this.#reserve(last - first);
      Buffer.prototype.copy.call(src, this.#buf, len, first, last);
      this.#len = len + (last - first);
      this.#between = between;
      if (full || k >= to) return k;
    }
  }

  pushString(s: string): void {
    this.appendString(s);
    this.end();
  }

  /** Appends bytes to the current message. */
  append(bytes: Uint8Array, start = 0, end = bytes.length): void {
    const n = end - start;
    this.#reserve(n);
    const buf = this.#buf;
    if (n <= 16) {
      // A call costs more than a few stores.
      let j = this.#len;
      for (let i = start; i < end; i++) buf[j++] = bytes[i]!;
    } else {
      // Buffer's copy() of a sub-range is one native memmove, also into shared memory (where set()
      // copies byte by byte as atomics): 43-54 ns a 400-byte message on Node 24, against fill()'s
      // 133-164 ns and set()'s 110 (measured by hand: docs/history/measurements-2026-11.md). Any Uint8Array will do as the source.
      Buffer.prototype.copy.call(bytes, buf, this.#len, start, end);
    }
    this.#len += n;
  }

  /** Appends a string of Latin-1 characters only (e.g. ASCII JSON built by a source), one byte each. */
  appendLatin1(s: string): void {
    this.#reserve(s.length);
    this.#len += this.#buf.write(s, this.#len, 'latin1');
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
    if (n <= 0x7fffffff) {
      this.#len = writeSmall(this.#buf, this.#len, n);
      return;
    }
    // Millisecond timestamps: two halves in 31-bit integer arithmetic rather than float division per digit.
    const hi = Math.floor(n / 1e8);
    this.#len = writeSmall(this.#buf, this.#len, hi);
    let lo = n - hi * 1e8;
    const buf = this.#buf;
    for (let i = this.#len + 7; i >= this.#len; i--) {
      const q = (lo / 10) | 0;
      buf[i] = 0x30 + lo - q * 10;
      lo = q;
    }
    this.#len += 8;
  }

  /** Ends the current message. */
  end(): void {
    this.#offsets.push(this.#len);
    this.#ends?.push(this.#len);
  }

  /** Returns the packed messages (the builder's own buffer, not a copy) and starts a new buffer. */
  take(): { data: Buffer; offsets: Uint32Array; ends?: Uint32Array } {
    const data = this.#buf.subarray(0, this.#len);
    const offsets = Uint32Array.from(this.#offsets);
    const ends = this.#ends === null ? undefined : Uint32Array.from(this.#ends);
    this.#ends = null;
    this.#between = 0;
    this.#capacity = Math.max(this.#capacity, this.#len + (this.#len >> 3));
    // The next buffer is made on the next append: a builder whose last batch this was (one per Kafka
    // fetch) allocates nothing more.
    this.#buf = EMPTY;
    this.#len = 0;
    this.#offsets = [0];
    return ends === undefined ? { data, offsets } : { data, offsets, ends };
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = Math.max(this.#buf.length * 2, this.#capacity);
    while (size < this.#len + n) size *= 2;
    const grown = this.allocate(size);
    this.#buf.copy(grown, 0, 0, this.#len);
    this.#buf = grown;
  }
}

/** Writes n (0 <= n < 2^31) in decimal at pos; returns the position after it. */
function writeSmall(buf: Buffer, pos: number, n: number): number {
  let digits = 1;
  for (let x = n; x >= 10; x = (x / 10) | 0) digits++;
  for (let i = pos + digits - 1; i >= pos; i--) {
    const q = (n / 10) | 0;
    buf[i] = 0x30 + n - q * 10;
    n = q;
  }
  return pos + digits;
}

const EMPTY = Buffer.alloc(0);

/** Bytes between two messages that pushSpans copies with them at most (a line break, indentation); a longer gap ends the run. */
export const MAX_SEPARATOR_BYTES = 64;

function sharedBuffer(bytes: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(bytes));
}
