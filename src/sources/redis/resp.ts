// RESP2 as the Redis lanes speak it, with no I/O: commands as arrays of bulk strings, reply lines
// read in place or across chunks, and a small whole-reply reader for the handshake (AUTH, SELECT,
// CLIENT SETNAME). XREADGROUP's replies have a streaming reader of their own (wire.ts).

/** Longest header line (`*`, `$`, `:` and a number); an error line may be longer, up to this. */
const MAX_LINE_BYTES = 64 * 1024;

export class RespProtocolError extends Error {}

/** `*n $len arg ...`: a command as Redis reads it. */
export function encodeCommand(args: readonly string[]): Buffer {
  let n = 16;
  for (const a of args) n += Buffer.byteLength(a) + 16;
  const out = Buffer.allocUnsafe(n);
  let p = out.write(`*${args.length}\r\n`, 0, 'latin1');
  for (const a of args) {
    const len = Buffer.byteLength(a);
    p += out.write(`$${len}\r\n`, p, 'latin1');
    p += out.write(a, p, 'utf8');
    out[p++] = 0x0d;
    out[p++] = 0x0a;
  }
  return out.subarray(0, p);
}

/** A reply read from chunks: feed() returns the index after the reply's last byte, or -1 for more. */
export interface ReplyReader {
  reset(): void;
  /** Reads the next reply onto what the last one left (XReadReader); absent: every reply starts afresh. */
  resume?(): void;
  feed(chunk: Uint8Array, start: number): number;
}

/**
 * Reads one header line (type byte, text, CRLF). Read in place when the chunk holds it whole (no
 * copy, no view: a reply has five lines an entry); copied only when it spans chunks.
 */
export class LineReader {
  #buf = new Uint8Array(128);
  #len = 0;
  type = 0;
  text = '';
  int = 0;

  reset(): void {
    this.#len = 0;
  }

  /** Returns the index after the line's LF, or -1 when the chunk ends inside it. */
  feed(chunk: Uint8Array, start: number): number {
    let p = start;
    const end = chunk.length;
    while (p < end && chunk[p] !== 0x0a) p++;
    if (this.#len === 0 && p < end) {
      if (p - start > MAX_LINE_BYTES) throw new RespProtocolError(`redis: a reply line over ${MAX_LINE_BYTES} bytes`);
      this.#parse(chunk, start, p);
      return p + 1;
    }
    const need = this.#len + (p - start);
    if (need > MAX_LINE_BYTES) throw new RespProtocolError(`redis: a reply line over ${MAX_LINE_BYTES} bytes`);
    if (need > this.#buf.length) {
      const grown = new Uint8Array(Math.min(MAX_LINE_BYTES, Math.max(need, this.#buf.length * 2)));
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    const b = this.#buf;
    for (let i = start; i < p; i++) b[this.#len++] = chunk[i]!;
    if (p === end) return -1;
    this.#parse(b, 0, this.#len);
    this.#len = 0;
    return p + 1;
  }

  /** The line in b[s..lf) (lf: its LF). */
  #parse(b: Uint8Array, s: number, lf: number): void {
    const e = lf > s && b[lf - 1] === 0x0d ? lf - 1 : lf;
    if (e === s) throw new RespProtocolError('redis: an empty reply line');
    this.type = b[s]!;
    if (this.type === 0x2a || this.type === 0x24 || this.type === 0x3a) {
      let i = s + 1;
      let neg = false;
      if (b[i] === 0x2d) {
        neg = true;
        i++;
      }
      if (i >= e || e - i > 15) throw new RespProtocolError('redis: a reply length that is not a number');
      let v = 0;
      for (; i < e; i++) {
        const d = b[i]! - 0x30;
        if (d < 0 || d > 9) throw new RespProtocolError('redis: a reply length that is not a number');
        v = v * 10 + d;
      }
      this.int = neg ? -v : v;
      this.text = '';
    } else {
      this.text = Buffer.from(b.buffer, b.byteOffset + s + 1, e - s - 1).toString('utf8');
      this.int = 0;
    }
  }
}

export type SimpleReply = string | number | null | Buffer | SimpleError | SimpleReply[];

export class SimpleError {
  constructor(readonly message: string) {}
}

/**
 * Any small reply (AUTH, SELECT, CLIENT SETNAME: +OK or an error), whole: at most `maxBytes` of bulk
 * data, so a confused server cannot make it buffer without end.
 */
export class SimpleReader implements ReplyReader {
  value: SimpleReply = null;
  readonly #line = new LineReader();
  readonly #maxBytes: number;
  #stack: Array<{ items: SimpleReply[]; left: number }> = [];
  #bulk: Buffer | null = null;
  #bulkAt = 0;
  #crlf = 0;
  #bytes = 0;

  constructor(maxBytes = 1 << 20) {
    this.#maxBytes = maxBytes;
  }

  reset(): void {
    this.value = null;
    this.#line.reset();
    this.#stack = [];
    this.#bulk = null;
    this.#crlf = 0;
    this.#bytes = 0;
  }

  feed(chunk: Uint8Array, start: number): number {
    let p = start;
    while (p < chunk.length) {
      if (this.#crlf > 0) {
        p++;
        if (--this.#crlf === 0 && this.#done(this.#bulk!)) return p;
        continue;
      }
      if (this.#bulk !== null) {
        const take = Math.min(this.#bulk.length - this.#bulkAt, chunk.length - p);
        this.#bulk.set(chunk.subarray(p, p + take), this.#bulkAt);
        this.#bulkAt += take;
        p += take;
        if (this.#bulkAt === this.#bulk.length) this.#crlf = 2;
        continue;
      }
      const q = this.#line.feed(chunk, p);
      if (q < 0) return -1;
      p = q;
      const l = this.#line;
      let v: SimpleReply | undefined;
      if (l.type === 0x2b) v = l.text;
      else if (l.type === 0x2d) v = new SimpleError(l.text);
      else if (l.type === 0x3a) v = l.int;
      else if (l.type === 0x24) {
        if (l.int < 0) v = null;
        else {
          this.#bytes += l.int;
          if (this.#bytes > this.#maxBytes) throw new RespProtocolError(`redis: a reply over ${this.#maxBytes} bytes where a short one was expected`);
          this.#bulk = Buffer.alloc(l.int);
          this.#bulkAt = 0;
          if (l.int === 0) this.#crlf = 2;
          continue;
        }
      } else if (l.type === 0x2a) {
        if (l.int < 0) v = null;
        else if (l.int > 0) {
          this.#stack.push({ items: [], left: l.int });
          continue;
        } else v = [];
      } else if (l.type === 0x5f) v = null;
      else throw new RespProtocolError(`redis: unexpected reply type ${JSON.stringify(String.fromCharCode(l.type))}`);
      if (this.#done(v)) return p;
    }
    return -1;
  }

  /** A value is complete: into its array, or the reply. True when the reply is complete. */
  #done(v: SimpleReply): boolean {
    this.#bulk = null;
    for (;;) {
      const top = this.#stack[this.#stack.length - 1];
      if (top === undefined) {
        this.value = v;
        return true;
      }
      top.items.push(v);
      if (--top.left > 0) return false;
      this.#stack.pop();
      v = top.items;
    }
  }
}
