// The shared buffer the wire reader (wire.ts) copies a read's kept values into, and who owns it. It
// becomes the read's batches as it is (take(): they are views of it), so a value is copied once, from
// the socket's chunk; after that the reader never writes to it again and its next reply gets a
// buffer of its own.

/** Its first size, and above what it is cut back when a reply used a quarter of it. */
const INITIAL_BYTES = 64 * 1024;
const SHRINK_ABOVE = 4 << 20;

export class ValueBuffer {
  data: Uint8Array;
  used = 0;
  readonly #allocate: (bytes: number) => Uint8Array;
  /** data was handed on (take()): the next reply gets a buffer of its own, of this size. */
  #taken = false;
  #nextSize = INITIAL_BYTES;

  /** allocate: shared memory of at least the given size (a recycler's); default a new SharedArrayBuffer. */
  constructor(allocate: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(new SharedArrayBuffer(bytes))) {
    this.#allocate = allocate;
    this.data = allocate(INITIAL_BYTES);
  }

  get taken(): boolean {
    return this.#taken;
  }

  /** Empty, for the next reply. */
  reset(): void {
    if (this.#taken) {
      this.data = this.#allocate(this.#nextSize);
      this.#taken = false;
    } else if (this.data.length > SHRINK_ABOVE && this.used < this.data.length / 4) {
      // A burst of large entries grew the buffer to the bound; small ones after it do not keep that.
      this.data = this.#allocate(Math.max(INITIAL_BYTES, this.used * 2));
    }
    this.used = 0;
  }

  /** Hands data on; the next reply's buffer is sized by this one's use. */
  take(): Uint8Array {
    this.#taken = true;
    this.#nextSize = Math.max(INITIAL_BYTES, this.used + (this.used >> 3));
    return this.data;
  }

  /** Room for `bytes` more after those used. */
  reserve(bytes: number): void {
    if (this.used + bytes <= this.data.length) return;
    const grown = this.#allocate(Math.max(this.used + bytes, this.data.length * 2));
    // Buffer#copy is one memmove into shared memory, where set() copies element by element.
    Buffer.prototype.copy.call(this.data, grown, 0, 0, this.used);
    this.data = grown;
  }

  /** Appends chunk[p, p + n) (room reserved). */
  append(chunk: Uint8Array, p: number, n: number): void {
    // Buffer#copy: no view object per value, as set(subarray) would make.
    Buffer.prototype.copy.call(chunk, this.data, this.used, p, p + n);
    this.used += n;
  }
}
