// A record of the fast fetch decoder (./records.ts), shared with the record runs (./runs.ts) that make
// one on demand. Pure: no kafkajs, no I/O.

/** kafkajs's message object, as its decoders make it. */
export type KjsMessage = Record<string, unknown>;

/** A record batch's timestamp type (attributes bit 3). */
export const CREATE_TIME = 0;
export const LOG_APPEND_TIME = 1;

/**
 * A record of the fast path: reads as kafkajs's message object, field for field. Its offset string
 * and key view are made only when read, like its value: kafkajs reads a few offsets a batch, and the
 * source packs keys as ranges of the record set (PackedKeys), so a string and a Buffer per record
 * were made for nothing.
 */
export class FastRecord {
  declare readonly isControlRecord: false;
  constructor(
    readonly attributes: number,
    /** The offset as a number (a safe integer: the fast path takes no other). */
    readonly position: number,
    /** Where the key is in the record set, and how long (-1: null). */
    readonly keyAt: number,
    readonly keyLength: number,
    readonly batchContext: { readonly magicByte: number; readonly maxTimestamp: string; readonly timestampType: number },
    /** The record set the key and value are in; the value's place and length (-1: null). */
    readonly set: Buffer,
    private readonly valueAt: number,
    readonly valueLength: number,
    /** The record's own timestamp (a LOG_APPEND_TIME batch's records read its max timestamp instead). */
    private readonly createTime: number,
  ) {}

  get offset(): string {
    return String(this.position);
  }

  get key(): Buffer | null {
    return this.keyLength === -1 ? null : this.set.subarray(this.keyAt, this.keyAt + this.keyLength);
  }

  get magicByte(): number {
    return this.batchContext.magicByte;
  }

  get timestamp(): string {
    const b = this.batchContext;
    return b.timestampType === LOG_APPEND_TIME && b.maxTimestamp ? b.maxTimestamp : String(this.createTime);
  }

  get value(): Buffer | null {
    return this.valueLength === -1 ? null : this.set.subarray(this.valueAt, this.valueAt + this.valueLength);
  }

  get headers(): Record<string, never> {
    return {};
  }

  /**
   * Copies the first `n` bytes of the value to `target` at `at`; returns n. From the record set with
   * a source range: Buffer.copy of a part of a buffer is a native copy, while a whole view (a value's
   * own) goes through TypedArray set, byte by byte into shared memory (3x slower per 500-byte value).
   */
  copyValue(target: Buffer, at: number, n: number): number {
    return this.set.copy(target, at, this.valueAt, this.valueAt + n);
  }
}
Object.defineProperty(FastRecord.prototype, 'isControlRecord', { value: false });
