// A streaming reader of XREADGROUP's reply (RESP2, resp.ts), with no I/O, that keeps only what the
// source hands on. node-redis made a Buffer for every
// id, field name and value and an array per entry (3.4 us of main thread and as much of V8's GC per
// 550-byte entry); this reader copies each entry's REDIS_FIELD value into one buffer as the bytes
// arrive and keeps an id string, nothing else. That buffer is shared memory and becomes the read's
// batches as it is (take()): a value is copied once, from the socket's chunk, on the main thread.
//
// It also bounds a read by bytes on this side of the socket, which a Lua script did before inside
// Redis (XREADGROUP has no byte limit): entries past REDIS_READ_MAX_BYTES are parsed for their size
// and not kept (they are delivered, so pending: the source reads them from its PEL next, with a COUNT
// sized by the largest entry seen). Converting every reply to Lua tables and back cost Redis ~3 ms
// per 1,000 entries, on the read loop's critical path.
import { withLength } from '../../core/columns.js';
import { readIdNumbers } from './ids.js';
import { LineReader, RespProtocolError, type ReplyReader } from './resp.js';
import { ValueBuffer } from './values.js';

/** What the reader keeps of an entry. */
export const ENTRY = {
  /** Its REDIS_FIELD value is in data. */
  KEPT: 0,
  /** Deleted while pending: XREADGROUP gives its id and no fields. */
  DELETED: 1,
  /** No REDIS_FIELD: names holds its field names. */
  MISSING: 2,
} as const;

/** Field names kept of an entry without REDIS_FIELD (for its dead letter), and bytes of each. */
const NAMES_KEPT = 10;
const NAME_BYTES_KEPT = 256;
/** Longest entry id: two 20-digit numbers and a dash. */
const MAX_ID_BYTES = 41;

export interface XReadOptions {
  /** REDIS_FIELD: the field whose value is kept. */
  readonly field: Uint8Array;
  /** Bytes of a value kept at most (MAX_MESSAGE_BYTES + 1: a longer one is cut and marked). */
  readonly maxValueBytes: number;
  /** REDIS_READ_MAX_BYTES: entries are kept while the kept ones' bytes are below it. */
  readonly limitBytes: number;
  /**
   * A buffer of at least the given size for the kept values: shared memory, since take() hands it to
   * the pool as the batches' bytes (a recycler's, so that a steady stream writes into pages already
   * touched). Default: a new SharedArrayBuffer.
   */
  readonly allocate?: (bytes: number) => Uint8Array;
}

// Where a value of the reply stands: the reply, its streams, a stream, its entries, an entry, its fields.
const R_TOP = 0;
const R_STREAMS = 1;
const R_STREAM = 2;
const R_ENTRIES = 3;
const R_ENTRY = 4;
const R_FIELDS = 5;

// What a bulk string's bytes are for.
const B_SKIP = 0;
const B_ID = 1;
const B_NAME = 2;
const B_VALUE = 3;

/**
 * XREADGROUP's reply (RESP2: null, or [[stream, [[id, [field, value, ...] | null], ...]], ...]) read
 * as it arrives. After a reply: entries 0..count-1 in order, the prefix whose bytes (ids, field names
 * and values, as the Lua script counted them) stayed below the limit when each began, one entry at
 * least; `more` when the reply held entries after them. Reused: a reply's data is valid until the
 * next reset().
 */
export class XReadReader implements ReplyReader {
  count = 0;
  ids: string[] = [];
  /**
   * Entry i's id as numbers, read from its bytes as they arrived (the id's string is not parsed again
   * for its position and time): its milliseconds and sequence, each -1 when it has more than 15 digits.
   */
  idMs: Float64Array;
  idSeq: Float64Array;
  state: Uint8Array;
  /** Where entry i's kept value starts in data, how many bytes were kept, and its full size. */
  valueAt: Int32Array;
  valueLen: Int32Array;
  valueSize: Float64Array;
  /** Field names (JSON-quoted, as dead letters show them) of the MISSING entries, by entry. */
  readonly names = new Map<number, string[]>();
  more = false;
  /** The largest entry of the reply in bytes, kept or not (0: no entry). */
  largest = 0;
  /** Bytes of the kept entries. */
  keptBytes = 0;
  /** The error reply (NOGROUP ...), null when the reply is entries. */
  error: string | null = null;

  readonly #o: XReadOptions;
  readonly #values: ValueBuffer;
  readonly #line = new LineReader();
  // The stack of open arrays: role, elements left, index of the next element.
  readonly #role = new Int8Array(8);
  readonly #left = new Float64Array(8);
  readonly #index = new Float64Array(8);
  #depth = 0;
  // The bulk string being read: role, bytes left of it, its CRLF left, bytes read of it.
  #bulk = -1;
  #bulkLeft = 0;
  #bulkSize = 0;
  #bulkAt = 0;
  #crlf = 0;
  // The entry being read.
  #keeping = false;
  #entryBytes = 0;
  #found = false;
  #deleted = false;
  #nameIsField = false;
  #takeValue = false;
  readonly #id = Buffer.alloc(MAX_ID_BYTES);
  #idLen = 0;
  // The field names of the entry before REDIS_FIELD (first bytes of each): its dead letter's, if missing.
  readonly #nameBufs = Array.from({ length: NAMES_KEPT }, () => Buffer.alloc(NAME_BYTES_KEPT));
  readonly #nameLens = new Int32Array(NAMES_KEPT);
  #nameCount = 0;
  #nameAt = -1;

  constructor(o: XReadOptions, capacity = 1024) {
    this.#o = o;
    this.#values = new ValueBuffer(o.allocate);
    this.state = new Uint8Array(capacity);
    this.idMs = new Float64Array(capacity);
    this.idSeq = new Float64Array(capacity);
    this.valueAt = new Int32Array(capacity);
    this.valueLen = new Int32Array(capacity);
    this.valueSize = new Float64Array(capacity);
  }

  /**
   * Reads a second reply onto this one (a read's rest, after the entry that sized it): its entries
   * follow those kept, and the bound counts both.
   */
  resume(): void {
    if (this.#values.taken) throw new Error('XReadReader.resume(): the last reply\'s values were handed on (take())');
    this.error = null;
    this.#line.reset();
    this.#depth = 0;
    this.#bulk = -1;
    this.#crlf = 0;
  }

  reset(): void {
    this.#values.reset();
    this.count = 0;
    this.names.clear();
    this.more = false;
    this.largest = 0;
    this.keptBytes = 0;
    this.error = null;
    this.#line.reset();
    this.#depth = 0;
    this.#bulk = -1;
    this.#crlf = 0;
  }

  /**
   * Hands the kept values' buffer on (the read's batches are views of it): this reader never writes
   * to it again, and the next reply gets a buffer of its own, sized by this one's use.
   */
  take(): Uint8Array {
    return this.#values.take();
  }

  /** The kept values, back to back (valueAt, valueLen), in data[0, used). */
  get data(): Uint8Array {
    return this.#values.data;
  }

  get used(): number {
    return this.#values.used;
  }

  feed(chunk: Uint8Array, start: number): number {
    let p = start;
    const end = chunk.length;
    while (p < end) {
      if (this.#crlf > 0) {
        // A bulk string's CRLF.
        const c = chunk[p++]!;
        if (c !== (this.#crlf === 2 ? 0x0d : 0x0a)) throw new RespProtocolError('redis: a bulk string not followed by CRLF');
        if (--this.#crlf === 0) {
          this.#bulkDone();
          if (this.#elementDone()) return p;
        }
        continue;
      }
      if (this.#bulk >= 0) {
        const take = Math.min(this.#bulkLeft, end - p);
        this.#bulkBytes(chunk, p, take);
        p += take;
        this.#bulkLeft -= take;
        this.#bulkAt += take;
        if (this.#bulkLeft === 0) this.#crlf = 2;
        continue;
      }
      const q = this.#line.feed(chunk, p);
      if (q < 0) return -1;
      p = q;
      if (this.#header()) return p;
    }
    return -1;
  }

  /** A header line was read; true when it completes the reply. */
  #header(): boolean {
    const l = this.#line;
    const t = l.type;
    const parent = this.#depth === 0 ? R_TOP : this.#role[this.#depth - 1]!;
    const index = this.#depth === 0 ? 0 : this.#index[this.#depth - 1]!;
    if (t === 0x2d) {
      if (parent !== R_TOP) throw new RespProtocolError('redis: an error inside an XREADGROUP reply');
      this.error = l.text;
      return true;
    }
    const isNull = ((t === 0x2a || t === 0x24) && l.int < 0) || t === 0x5f;
    if (t === 0x2a && !isNull) {
      const n = l.int;
      let role: number;
      if (parent === R_TOP) role = R_STREAMS;
      else if (parent === R_STREAMS) role = R_STREAM;
      else if (parent === R_STREAM && index === 1) role = R_ENTRIES;
      else if (parent === R_ENTRIES) role = R_ENTRY;
      else if (parent === R_ENTRY && index === 1) role = R_FIELDS;
      else throw new RespProtocolError(`redis: an array where XREADGROUP's reply has none (in ${parent}, element ${index})`);
      if ((role === R_STREAM || role === R_ENTRY) && n !== 2) throw new RespProtocolError(`redis: an XREADGROUP ${role === R_STREAM ? 'stream' : 'entry'} of ${n} elements`);
      if (role === R_ENTRY) this.#beginEntry();
      if (n === 0) return this.#elementDone();
      if (this.#depth === this.#role.length) throw new RespProtocolError('redis: an XREADGROUP reply nested too deep');
      this.#role[this.#depth] = role;
      this.#left[this.#depth] = n;
      this.#index[this.#depth] = 0;
      this.#depth++;
      return false;
    }
    if (isNull) {
      // The reply (BLOCK timed out), a deleted entry's fields, or an empty stream's entries.
      if (parent === R_FIELDS) this.#takeValue = false;
      if (parent === R_ENTRY && index === 1) this.#deleted = true;
      else if (!(parent === R_TOP || (parent === R_STREAM && index === 1) || parent === R_FIELDS)) throw new RespProtocolError('redis: a null where XREADGROUP\'s reply has none');
      return this.#elementDone();
    }
    if (t !== 0x24) throw new RespProtocolError(`redis: unexpected reply type ${JSON.stringify(String.fromCharCode(t))} in an XREADGROUP reply`);
    const n = l.int;
    if (parent === R_ENTRY && index === 0) {
      if (n > MAX_ID_BYTES) throw new RespProtocolError(`redis: an entry id of ${n} bytes`);
      this.#bulk = B_ID;
      this.#idLen = 0;
    } else if (parent === R_FIELDS) {
      if (index % 2 === 0) {
        this.#bulk = B_NAME;
        this.#nameIsField = !this.#found && n === this.#o.field.length;
        this.#nameAt = -1;
        if (this.#keeping && !this.#found && this.#nameCount < NAMES_KEPT) {
          this.#nameAt = this.#nameCount++;
          this.#nameLens[this.#nameAt] = Math.min(n, NAME_BYTES_KEPT);
        }
      } else {
        this.#bulk = this.#takeValue ? B_VALUE : B_SKIP;
        if (this.#takeValue) this.#beginValue(n);
      }
    } else if (parent === R_STREAM && index === 0) {
      this.#bulk = B_SKIP;
    } else {
      throw new RespProtocolError('redis: a bulk string where XREADGROUP\'s reply has none');
    }
    this.#entryBytes += parent === R_STREAM ? 0 : n;
    this.#bulkLeft = n;
    this.#bulkSize = n;
    this.#bulkAt = 0;
    if (n === 0) this.#crlf = 2;
    return false;
  }

  #bulkBytes(chunk: Uint8Array, p: number, take: number): void {
    switch (this.#bulk) {
      case B_ID: {
        const id = this.#id;
        for (let i = 0; i < take; i++) id[this.#idLen++] = chunk[p + i]!;
        break;
      }
      case B_NAME: {
        if (this.#nameIsField) {
          const f = this.#o.field;
          for (let i = 0; i < take; i++) {
            if (chunk[p + i] !== f[this.#bulkAt + i]) {
              this.#nameIsField = false;
              break;
            }
          }
        }
        if (this.#nameAt >= 0) {
          const nb = this.#nameBufs[this.#nameAt]!;
          const stop = Math.min(this.#nameLens[this.#nameAt]!, this.#bulkAt + take);
          for (let i = this.#bulkAt; i < stop; i++) nb[i] = chunk[p + i - this.#bulkAt]!;
        }
        break;
      }
      case B_VALUE: {
        const room = this.#o.maxValueBytes - this.#bulkAt;
        if (room > 0) this.#values.append(chunk, p, Math.min(room, take));
        break;
      }
    }
  }

  #bulkDone(): void {
    if (this.#bulk === B_NAME) {
      this.#takeValue = this.#nameIsField;
      if (this.#nameIsField && this.#nameAt >= 0) this.#nameCount--;
    } else if (this.#bulk === B_VALUE) {
      this.#takeValue = false;
      this.#found = true;
    } else if (this.#bulk === B_SKIP) {
      this.#takeValue = false;
    }
    this.#bulk = -1;
  }

  #beginEntry(): void {
    this.#keeping = this.count === 0 || this.keptBytes < this.#o.limitBytes;
    if (!this.#keeping) this.more = true;
    this.#entryBytes = 0;
    this.#found = false;
    this.#deleted = false;
    this.#takeValue = false;
    this.#nameCount = 0;
    if (this.#keeping && this.count === this.state.length) this.#grow();
  }

  #beginValue(n: number): void {
    if (!this.#keeping) {
      this.#takeValue = false;
      this.#bulk = B_SKIP;
      return;
    }
    const keep = Math.min(n, this.#o.maxValueBytes);
    this.#values.reserve(keep);
    const i = this.count;
    this.valueAt[i] = this.#values.used;
    this.valueLen[i] = keep;
    this.valueSize[i] = n;
  }

  /** The element just read is complete; true when that completes the reply. */
  #elementDone(): boolean {
    for (;;) {
      if (this.#depth === 0) return true;
      const d = this.#depth - 1;
      this.#index[d]!++;
      if (--this.#left[d]! > 0) return false;
      this.#depth--;
      if (this.#role[d] === R_ENTRY) this.#endEntry();
    }
  }

  #endEntry(): void {
    if (this.#entryBytes > this.largest) this.largest = this.#entryBytes;
    if (!this.#keeping) return;
    const i = this.count++;
    this.ids[i] = this.#id.toString('latin1', 0, this.#idLen);
    readIdNumbers(this.#id, this.#idLen, this, i);
    if (this.#deleted) this.state[i] = ENTRY.DELETED;
    else if (this.#found) this.state[i] = ENTRY.KEPT;
    else {
      this.state[i] = ENTRY.MISSING;
      const names: string[] = [];
      for (let k = 0; k < this.#nameCount; k++) names.push(JSON.stringify(this.#nameBufs[k]!.toString('utf8', 0, this.#nameLens[k]!).slice(0, 64)));
      this.names.set(i, names);
    }
    this.keptBytes += this.#entryBytes;
  }

  #grow(): void {
    const n = this.state.length * 2;
    this.state = withLength(this.state, n);
    this.idMs = withLength(this.idMs, n);
    this.idSeq = withLength(this.idSeq, n);
    this.valueAt = withLength(this.valueAt, n);
    this.valueLen = withLength(this.valueLen, n);
    this.valueSize = withLength(this.valueSize, n);
  }

  /** Entry i's kept value (a view of data: valid until the next reset). */
  value(i: number): Uint8Array {
    const at = this.valueAt[i]!;
    return this.data.subarray(at, at + this.valueLen[i]!);
  }
}
