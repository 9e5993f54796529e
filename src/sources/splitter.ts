// Splits a byte stream into raw JSON messages without parsing them: NDJSON lines, or the elements of
// top-level JSON arrays (any size: nothing but the current element is held). Parsing stays in the
// workers; this only finds boundaries (strings and escapes respected, nesting counted).

const LF = 0x0a, CR = 0x0d, SP = 0x20, TAB = 0x09, COMMA = 0x2c, QUOTE = 0x22, BSLASH = 0x5c;
const LBRACK = 0x5b, RBRACK = 0x5d, LBRACE = 0x7b, RBRACE = 0x7d;

function isWs(b: number): boolean {
  return b === SP || b === LF || b === CR || b === TAB;
}

type Mode = 'detect' | 'ndjson' | 'array';

/**
 * Feed chunks; each complete message is passed to onMessage(bytes). Messages longer than maxBytes are
 * cut to maxBytes + 1 bytes (enough for the decoder to reject them as too_large) and the rest skipped,
 * so one giant element cannot exhaust memory.
 */
export class JsonSplitter {
  #mode: Mode = 'detect';
  #parts: Buffer[] = [];
  #partLen = 0;
  #overflow = false;
  /** NDJSON: still in the leading whitespace of a line (not counted against maxBytes). */
  #lineStart = true;
  // array mode state
  #depth = 0;
  #inString = false;
  #escape = false;
  #inElement = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onMessage: (msg: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.#mode === 'detect') {
        while (i < chunk.length && isWs(chunk[i]!)) i++;
        if (i >= chunk.length) return;
        if (chunk[i] === LBRACK) {
          this.#mode = 'array';
          this.#depth = 1;
          this.#inElement = false;
          i++;
        } else {
          this.#mode = 'ndjson';
        }
        continue;
      }
      i = this.#mode === 'ndjson' ? this.#ndjson(chunk, i) : this.#array(chunk, i);
    }
  }

  /** End of input: a trailing line without newline, or an unterminated array element, is emitted as is. */
  end(): void {
    if (this.#partLen > 0) this.#emit();
    this.#mode = 'detect';
    this.#inString = false;
    this.#escape = false;
    this.#inElement = false;
    this.#depth = 0;
    this.#lineStart = true;
  }

  #append(chunk: Buffer, start: number, end: number): void {
    if (end <= start) return;
    const room = Math.max(0, this.maxBytes + 1 - this.#partLen);
    const take = Math.min(room, end - start);
    if (take > 0) {
      this.#parts.push(chunk.subarray(start, start + take));
      this.#partLen += take;
    }
    // Only content past the cut makes the message too large; trailing whitespace there does not.
    if (!this.#overflow) {
      for (let i = start + take; i < end; i++) {
        if (!isWs(chunk[i]!)) {
          this.#overflow = true;
          break;
        }
      }
    }
  }

  #emit(): void {
    let msg = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#partLen);
    // A message with content past the cut keeps exactly maxBytes + 1 bytes, untrimmed, so the decoder
    // still rejects it as too large.
    const capped = this.#overflow;
    this.#parts = [];
    this.#partLen = 0;
    this.#overflow = false;
    this.#lineStart = true;
    // Trim surrounding whitespace (and a CR before LF).
    let s = 0;
    let e = msg.length;
    while (s < e && isWs(msg[s]!)) s++;
    if (!capped) while (e > s && isWs(msg[e - 1]!)) e--;
    if (s === e) return; // blank line: no record there
    msg = msg.subarray(s, e);
    // The chunk buffers are reused by the stream; the engine copies into its batch right away.
    this.onMessage(msg);
  }

  #ndjson(chunk: Buffer, i: number): number {
    if (this.#lineStart) {
      while (i < chunk.length && chunk[i] !== LF && isWs(chunk[i]!)) i++;
      if (i >= chunk.length) return i;
      if (chunk[i] !== LF) this.#lineStart = false;
    }
    const nl = chunk.indexOf(LF, i);
    if (nl === -1) {
      this.#append(chunk, i, chunk.length);
      return chunk.length;
    }
    this.#append(chunk, i, nl);
    this.#emit();
    return nl + 1;
  }

  #array(chunk: Buffer, i: number): number {
    let start = this.#inElement ? i : -1;
    for (; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (b === BSLASH) this.#escape = true;
        else if (b === QUOTE) this.#inString = false;
        continue;
      }
      if (b === QUOTE) {
        this.#inString = true;
      } else if (b === LBRACE || b === LBRACK) {
        this.#depth++;
      } else if (b === RBRACE || b === RBRACK) {
        if (this.#depth === 1) {
          // End of the top-level array.
          if (this.#inElement) {
            this.#append(chunk, start, i);
            this.#emit();
          }
          this.#inElement = false;
          this.#depth = 0;
          this.#mode = 'detect';
          return i + 1;
        }
        this.#depth--;
        continue;
      } else if (b === COMMA && this.#depth === 1) {
        if (this.#inElement) {
          this.#append(chunk, start, i);
          this.#emit();
        }
        this.#inElement = false;
        start = -1;
        continue;
      }
      if (!this.#inElement && !isWs(b)) {
        this.#inElement = true;
        start = i;
      }
    }
    if (this.#inElement) this.#append(chunk, start, chunk.length);
    return i;
  }
}
