// Splits a byte stream into raw JSON messages without parsing them: NDJSON lines, or the elements of
// top-level JSON arrays (any size: nothing but the current element is held). Parsing stays in the
// workers; this only finds boundaries (strings and escapes respected, nesting counted by kind).
//
// A broken element of a top-level array costs that element only. An element is broken when a
// closing bracket does not match its opener, a string holds a raw control character (a line break:
// an unterminated string), a byte outside strings cannot be JSON (an unterminated string flipped
// what is inside and outside strings), or it nests deeper than MAX_DEPTH. The splitter then finds the
// next element boundary again: the first `}` `,` `{` (whitespace allowed between) after the element's
// start; the bytes before it are one message (rejected as malformed_json by the decoder), and
// scanning starts afresh at the `{`. A stray `}` between elements never ends the array (only `]`
// does). Elements are objects in every format the engine reads, which is what makes `},{` the
// boundary to look for.

const LF = 0x0a, CR = 0x0d, SP = 0x20, TAB = 0x09, COMMA = 0x2c, QUOTE = 0x22, BSLASH = 0x5c;
const LBRACK = 0x5b, RBRACK = 0x5d, LBRACE = 0x7b, RBRACE = 0x7d;

/** Deeper nesting than this is broken (JSON.parse gives up far earlier); bounds the splitter's stack. */
export const MAX_DEPTH = 10_000;

/** Bytes that can appear outside strings in JSON: whitespace, structure, numbers, true/false/null. */
const JSON_BARE = new Uint8Array(256);
for (const c of ' \t\r\n{}[],:"0123456789-+.eEtruefalsn') JSON_BARE[c.charCodeAt(0)] = 1;

/** Index of the `{` of the first `}` ws* `,` ws* `{` in buf at or after from; -1 if none. */
function findBoundary(buf: Buffer, from: number): { close: number; open: number } | null {
  for (let k = buf.indexOf(RBRACE, from); k !== -1; k = buf.indexOf(RBRACE, k + 1)) {
    let j = k + 1;
    while (j < buf.length && isWs(buf[j]!)) j++;
    if (buf[j] !== COMMA) continue;
    j++;
    while (j < buf.length && isWs(buf[j]!)) j++;
    if (buf[j] === LBRACE) return { close: k, open: j };
  }
  return null;
}

function isWs(b: number): boolean {
  return b === SP || b === LF || b === CR || b === TAB;
}

type Mode = 'detect' | 'ndjson' | 'array';

/**
 * Whole lines of one chunk: line k is chunk[spans[2k], spans[2k + 1]), trimmed and non-empty, exactly
 * the bytes onMessage would have been given; count lines. The chunk and spans are reused once the
 * call returns, so the lines are copied right away.
 */
export type OnLines = (chunk: Buffer, spans: Int32Array, count: number) => void;

/** Lines reported per onLines call at most (a 1 MiB chunk of 400-byte lines holds about 2,600). */
const LINE_SPANS = 4096;

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
  /** Opener (LBRACE or LBRACK) at each depth; [0] is the top-level array. */
  readonly #stack = new Uint8Array(MAX_DEPTH + 1);
  /** A broken element: scanning for the next `}` `,` `{` boundary; #rs = how much of it was seen. */
  #resync = false;
  #rs = 0;
  /** Bytes to scan again before the rest of the current chunk (an element boundary found inside a broken element). */
  #refeed: Buffer | null = null;
  /** Broken array elements seen (a resynchronisation each). */
  broken = 0;

  /** Start and end of each whole line found in the current chunk, in pairs (see OnLines). */
  readonly #spans = new Int32Array(2 * LINE_SPANS);

  /**
   * onLines: where given, the NDJSON lines that lie whole in one chunk go to it, many a call, as
   * spans of the chunk (no view object per line); everything else, and every message without it,
   * goes to onMessage. The two are called in input order.
   */
  constructor(
    private readonly maxBytes: number,
    private readonly onMessage: (msg: Buffer) => void,
    private readonly onLines?: OnLines,
  ) {}

  /**
   * Splits a chunk. The chunk may be overwritten once push returns (the file source reads into two
   * buffers in turn): whatever of it a message still to be finished holds is copied first.
   */
  push(chunk: Buffer): void {
    this.#split(chunk);
    const parts = this.#parts;
    for (let i = parts.length - 1; i >= 0 && parts[i]!.buffer === chunk.buffer; i--) parts[i] = Buffer.from(parts[i]!);
  }

  #split(chunk: Buffer): void {
    const pending: Buffer[] = [chunk];
    while (pending.length > 0) {
      const buf = pending.pop()!;
      let i = 0;
      while (i < buf.length) {
        if (this.#mode === 'detect') {
          while (i < buf.length && isWs(buf[i]!)) i++;
          if (i >= buf.length) break;
          if (buf[i] === LBRACK) {
            this.#mode = 'array';
            this.#depth = 1;
            this.#stack[0] = LBRACK;
            this.#inElement = false;
            i++;
          } else {
            this.#mode = 'ndjson';
          }
          continue;
        }
        i = this.#mode === 'ndjson' ? this.#ndjson(buf, i) : this.#array(buf, i);
        if (this.#refeed !== null) {
          // Scan the re-found element first, then the rest of this buffer.
          if (i < buf.length) pending.push(buf.subarray(i));
          pending.push(this.#refeed);
          this.#refeed = null;
          break;
        }
      }
    }
  }

  /** End of input: a trailing line without newline, or an unterminated array element, is emitted as is. */
  end(): void {
    if (this.#resync) this.#dropSeparator(RBRACK);
    if (this.#partLen > 0) this.#emit();
    this.#mode = 'detect';
    this.#inString = false;
    this.#escape = false;
    this.#inElement = false;
    this.#depth = 0;
    this.#lineStart = true;
    this.#resync = false;
    this.#rs = 0;
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
    // The chunk is reused after push(): onMessage copies the message into its batch right away.
    this.onMessage(msg);
  }

  #ndjson(chunk: Buffer, i: number): number {
    // Nothing held from an earlier chunk (so at a line start): the whole lines of the chunk go out
    // as they are found (to onLines as spans, else each one view of the chunk), without collecting
    // parts. A line too long for maxBytes, or the chunk's unfinished last line, is left to the
    // general path below.
    if (this.#partLen === 0) {
      const max = this.maxBytes + 1;
      const len = chunk.length;
      const onLines = this.onLines;
      const spans = this.#spans;
      let n = 0;
      for (;;) {
        let s = i;
        while (s < len && chunk[s] !== LF && isWs(chunk[s]!)) s++;
        const nl = chunk.indexOf(LF, s);
        if (nl === -1) break;
        let e = nl;
        while (e > s && isWs(chunk[e - 1]!)) e--;
        if (e - s > max) break;
        if (e > s) {
          if (onLines === undefined) {
            this.onMessage(chunk.subarray(s, e));
          } else {
            if (n === spans.length) {
              onLines(chunk, spans, n >> 1);
              n = 0;
            }
            spans[n++] = s;
            spans[n++] = e;
          }
        }
        i = nl + 1;
      }
      // Before any message of the general path below: the order of messages is the input's.
      if (n > 0) onLines!(chunk, spans, n >> 1);
      if (i >= len) return len;
    }
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
      if (this.#resync) {
        if (b === RBRACE) this.#rs = 1;
        else if (b === COMMA && this.#rs === 1) this.#rs = 2;
        else if (b === LBRACE && this.#rs === 2) {
          // The next element starts here: the broken one ends before it.
          this.#append(chunk, start, i);
          this.#dropSeparator();
          this.#emit();
          this.#resync = false;
          this.#rs = 0;
          this.#inString = false;
          this.#escape = false;
          this.#depth = 2;
          this.#stack[1] = LBRACE;
          this.#inElement = true;
          start = i;
        } else if (!isWs(b)) this.#rs = 0;
        continue;
      }
      if (this.#inString) {
        if (this.#escape) this.#escape = false;
        else if (b === BSLASH) this.#escape = true;
        else if (b === QUOTE) this.#inString = false;
        else if (b < 0x20) return this.#broken(chunk, start, i);
        continue;
      }
      if (b === QUOTE) {
        this.#inString = true;
      } else if (b === LBRACE || b === LBRACK) {
        if (this.#depth >= MAX_DEPTH) return this.#broken(chunk, start, i);
        this.#stack[this.#depth++] = b;
      } else if (b === RBRACE || b === RBRACK) {
        if (this.#depth === 1) {
          if (b === RBRACE) {
            // A stray `}` between elements: part of the (broken) element, never the end of the array.
            if (!this.#inElement) {
              this.#inElement = true;
              start = i;
            }
            continue;
          }
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
        if (this.#stack[this.#depth - 1] !== (b === RBRACE ? LBRACE : LBRACK)) return this.#broken(chunk, start, i);
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
      } else if (this.#depth > 1 && JSON_BARE[b] === 0) {
        return this.#broken(chunk, start, i);
      }
      if (!this.#inElement && !isWs(b)) {
        this.#inElement = true;
        start = i;
      }
    }
    if (this.#inElement) this.#append(chunk, start, chunk.length);
    return i;
  }

  /** Drops the `,` (or at the end, the `]`) and whitespace after a broken element's last `}`. */
  #dropSeparator(sep = COMMA): void {
    if (this.#overflow) return;
    let comma = false;
    while (this.#parts.length > 0) {
      const last = this.#parts[this.#parts.length - 1]!;
      let e = last.length;
      while (e > 0 && (isWs(last[e - 1]!) || (!comma && last[e - 1] === sep))) {
        if (last[e - 1] === sep) comma = true;
        e--;
      }
      this.#partLen -= last.length - e;
      if (e > 0) {
        this.#parts[this.#parts.length - 1] = last.subarray(0, e);
        return;
      }
      this.#parts.pop();
    }
  }

  /**
   * The element holding chunk[i] is broken. If a `}` `,` `{` boundary lies inside what was read of
   * it, the bytes before are one message and the rest is scanned again; otherwise the splitter skips
   * ahead (the bytes still count toward the broken message) to the next boundary.
   */
  #broken(chunk: Buffer, start: number, i: number): number {
    this.broken++;
    this.#append(chunk, start, i + 1);
    this.#inString = false;
    this.#escape = false;
    if (!this.#overflow && this.#partLen > 0) {
      const el = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#partLen);
      const at = findBoundary(el, 1);
      if (at !== null) {
        this.#parts = [el.subarray(0, at.close + 1)];
        this.#partLen = at.close + 1;
        this.#emit();
        this.#depth = 1;
        this.#inElement = false;
        this.#refeed = el.subarray(at.open);
        return i + 1;
      }
    }
    this.#resync = true;
    this.#rs = 0;
    // Continue in resync mode with this element still open (its bytes go on accumulating, capped).
    if (i + 1 >= chunk.length) return i + 1;
    return this.#array(chunk, i + 1);
  }
}
