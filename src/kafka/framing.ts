// Kafka responses cut from a connection's bytes, each read from the socket into a buffer of its own.
// kafkajs takes a socket's chunks (64 KiB reads, a Buffer each) and joins a response's chunks with
// Buffer.concat once all are in: every fetched byte copied once more on the main thread (`concat`
// 0.35 s of a million records on Kafka -> file, 8 % of its busy time). Every Kafka response starts
// with its length (int32; the legacy SASL handshake's tokens too), so once a response's first bytes
// are in, the rest can be read by the kernel straight into a buffer of that length (net.Socket's
// `onread`): kafkajs then receives whole responses, one a 'data' event, and has nothing to join.
// Pure: no I/O, no sockets.

/** Bytes the small reads go into: responses that fit are copied out of it, one at a time. */
export const SCRATCH_BYTES = 64 * 1024;
/**
 * Responses longer than this are not read into a buffer of their own, since their length is only
 * what the peer says: a broken or hostile peer's 2 GiB length would be 2 GiB allocated at once. Such
 * a response's bytes are passed on as they arrive (kafkajs joins them, as without this module), so
 * nothing beyond what arrived is held. A fetch response is bounded by the consumer's maxBytes, 10 MiB
 * by default, or one record batch where a batch is larger.
 */
export const OWN_BUFFER_MAX_BYTES = 64 * 1024 * 1024;

/** What the framer did, for the tests and the metrics: whole responses, and bytes passed on as they came. */
export const framingCounts = { responses: 0, ownBuffers: 0, passedBytes: 0 };

/**
 * Cuts a byte stream into length-prefixed frames (4-byte big-endian length, then that many bytes).
 * The reader asks target() where the next read goes and reports read(n) for n bytes put there;
 * each whole frame (its length prefix included) goes to `emit` in a Buffer the framer never writes
 * again. A frame whose length is negative or over OWN_BUFFER_MAX_BYTES is passed on in pieces as it
 * arrives (`maxOwnBytes`: the tests'), the framing resuming after it; a negative length leaves the stream unframed from there
 * on (every byte passed on as it comes: the receiver sees the stream as it is, and fails it).
 */
export class ResponseFramer {
  readonly #emit: (frame: Buffer) => void;
  readonly #scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  /** The bytes of scratch not yet framed: [#from, #to). */
  #from = 0;
  #to = 0;
  /** The frame being read in place, and how much of it is in. */
  #own: Buffer | null = null;
  #ownAt = 0;
  /** Bytes of an oversized frame still to pass on; Infinity once the stream is unframed. */
  #pass = 0;
  readonly #maxOwnBytes: number;
  readonly #allocate: (bytes: number) => Buffer;

  /** allocate: where a frame read in place goes (the plaintext sockets give a pool of shared memory, ./frame-pool.ts). */
  constructor(emit: (frame: Buffer) => void, maxOwnBytes = OWN_BUFFER_MAX_BYTES, allocate: (bytes: number) => Buffer = (n) => Buffer.allocUnsafe(n)) {
    this.#emit = emit;
    this.#maxOwnBytes = maxOwnBytes;
    this.#allocate = allocate;
  }

  /** Where the next read goes: the rest of the frame being read in place, or scratch. */
  target(): Buffer {
    if (this.#own !== null) return this.#own.subarray(this.#ownAt);
    return this.#scratch.subarray(this.#to);
  }

  /** n bytes were read into the last target(). */
  read(n: number): void {
    if (this.#own !== null) {
      this.#ownAt += n;
      if (this.#ownAt === this.#own.length) {
        const frame = this.#own;
        this.#own = null;
        this.#ownAt = 0;
        framingCounts.responses++;
        this.#emit(frame);
      }
      return;
    }
    this.#to += n;
    this.#frame();
  }

  #frame(): void {
    const s = this.#scratch;
    while (this.#to > this.#from) {
      if (this.#pass > 0) {
        const n = Math.min(this.#pass, this.#to - this.#from);
        this.#pass -= n;
        this.#out(this.#from, this.#from + n);
        framingCounts.passedBytes += n;
        this.#from += n;
        continue;
      }
      const have = this.#to - this.#from;
      if (have < 4) break;
      const length = s.readInt32BE(this.#from);
      if (length < 0 || length > this.#maxOwnBytes - 4) {
        this.#pass = length < 0 ? Infinity : 4 + length;
        continue;
      }
      const total = 4 + length;
      if (have >= total) {
        framingCounts.responses++;
        this.#out(this.#from, this.#from + total);
        this.#from += total;
        continue;
      }
      // A frame longer than what is in: the rest is read into a buffer of its length.
      const own = this.#allocate(total);
      s.copy(own, 0, this.#from, this.#to);
      this.#own = own;
      this.#ownAt = have;
      this.#from = this.#to = 0;
      framingCounts.ownBuffers++;
      return;
    }
    // What is left is under 4 bytes (a length not all in): moved to the front for the next read.
    if (this.#from === this.#to) this.#from = this.#to = 0;
    else if (this.#from > 0) {
      s.copy(s, 0, this.#from, this.#to);
      this.#to -= this.#from;
      this.#from = 0;
    }
  }

  /** scratch[from, to) to the receiver, copied: scratch is read into again. */
  #out(from: number, to: number): void {
    const b = Buffer.allocUnsafe(to - from);
    this.#scratch.copy(b, 0, from, to);
    this.#emit(b);
  }
}
