// Buffers of produce requests and record batches, reused: a request of the statistics sink is up to
// 512 KiB per partition, built in buffers that live until the broker answered. Fresh ones are new
// ArrayBuffers each, whose external memory drives V8's full collections (marking the whole window
// store each time); a bounded free list hands the same memory out again. Pure (no I/O).

/** A free list of buffers, at most maxBytes in all; sizes rounded up to powers of two for reuse. */
export class BufferPool {
  readonly #free: Buffer[] = [];
  #bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** A buffer of at least n bytes (its contents are old bytes: write before reading). */
  take(n: number): Buffer {
    for (let i = 0; i < this.#free.length; i++) {
      const b = this.#free[i]!;
      if (b.length >= n) {
        this.#free.splice(i, 1);
        this.#bytes -= b.length;
        return b;
      }
    }
    return Buffer.allocUnsafeSlow(n <= 4096 ? 4096 : 2 ** Math.ceil(Math.log2(n)));
  }

  /** Hands b back for reuse; the caller must not touch it again. A view, or a buffer already here, is ignored. */
  give(b: Buffer): void {
    if (b.byteOffset !== 0 || b.length !== b.buffer.byteLength || this.#bytes + b.length > this.maxBytes || this.#free.includes(b)) return;
    this.#free.push(b);
    this.#bytes += b.length;
  }

  /** Bytes held for reuse. */
  get bytes(): number {
    return this.#bytes;
  }
}
