// A JSON scanner over message bytes, for the decoder's fast path (see scan/index.ts). It accepts a
// plain subset of JSON and says "not plain" (-1) for everything else, which then goes to JSON.parse:
// so it never has to produce an error message, only to be sure that what it accepts is valid JSON
// that JSON.parse reads the same way. Outside the subset: any backslash (escapes), raw control
// characters, nesting deeper than MAX_SCAN_DEPTH, any grammar error. Bytes >= 0x80 inside strings are
// allowed and flagged (`high`): the caller checks such a message with isUtf8.
// Every method takes the position of what it reads and returns the position after it, or -1.

/** Deeper messages go to JSON.parse (the subset never needs more; the recursion stays shallow). */
export const MAX_SCAN_DEPTH = 32;

const POW10 = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];
const EXACT_MANTISSA = 2 ** 53;

export class JsonScanner {
  buf: Uint8Array = new Uint8Array(0);
  /** End of the message: bytes at and after it belong to the next one and are never read. */
  end = 0;
  /** A byte >= 0x80 was seen inside a string since reset(). */
  high = false;
  /** The value of the last number() read. */
  num = 0;
  /** Where the key member() read last ends. */
  keyEnd = 0;

  /** buf as a DataView, for reading four bytes a step. */
  view: DataView = new DataView(new ArrayBuffer(0));

  reset(buf: Uint8Array, end: number): void {
    if (buf !== this.buf) {
      this.buf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    this.end = end;
    this.high = false;
  }

  /**
   * Whether the bytes at p are text[at..at+n) (n at least 4), compared four at a time: returns the
   * position after them, or -1. When `text` is a complete JSON value, a match is that value,
   * without scanning it (what follows is for the caller to check).
   */
  known(p: number, text: DataView, at: number, n: number): number {
    if (p + n > this.end) return -1;
    const v = this.view;
    let i = 0;
    for (; i + 4 <= n; i += 4) if (v.getInt32(p + i, true) !== text.getInt32(at + i, true)) return -1;
    // The last word again, ending at n (it overlaps: no byte loop for the tail).
    if (i < n && v.getInt32(p + n - 4, true) !== text.getInt32(at + n - 4, true)) return -1;
    return p + n;
  }

  /** Skips JSON whitespace (space, tab, LF, CR). */
  ws(p: number): number {
    const buf = this.buf;
    const end = this.end;
    while (p < end) {
      const c = buf[p]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      p++;
    }
    return p;
  }

  /** p at the opening quote; returns the position after the closing one. */
  string(p: number): number {
    const buf = this.buf;
    const end = this.end;
    const v = this.view;
    p++;
    for (;;) {
      // Four bytes a step while none of them is a quote, a backslash, a control character or >= 0x80
      // (a zero byte of x ^ c, or of x - 0x20 borrowing, sets that byte's top bit): most of a message
      // is plain string text, and the byte loop below cost a comparison chain per byte.
      while (p + 4 <= end) {
        const x = v.getInt32(p, true);
        const q = x ^ 0x22222222;
        const b = x ^ 0x5c5c5c5c;
        if ((((q - 0x01010101) & ~q) | ((b - 0x01010101) & ~b) | ((x - 0x20202020) & ~x) | x) & 0x80808080) break;
        p += 4;
      }
      if (p >= end) return -1;
      // The word that stopped the step (or the message's last bytes), one byte at a time.
      const stop = p + 4 < end ? p + 4 : end;
      for (; p < stop; p++) {
        const c = buf[p]!;
        if (c === 0x22) return p + 1;
        if (c === 0x5c || c < 0x20) return -1;
        if (c >= 0x80) this.high = true;
      }
    }
  }

  /**
   * A number (JSON grammar exactly) into `num`, as JSON.parse reads it: converted here when the
   * digits form an integer below 2^53 and the power of ten is within 10^±22 (both exact doubles, so
   * one multiplication or division rounds correctly, Clinger's fast path), else by Number() of the text.
   */
  number(p: number): number {
    const buf = this.buf;
    const end = this.end;
    const start = p;
    let neg = false;
    if (p < end && buf[p] === 0x2d) {
      neg = true;
      p++;
    }
    if (p >= end) return -1;
    let c = buf[p]!;
    let m = 0;
    if (c === 0x30) {
      p++;
    } else if (c >= 0x31 && c <= 0x39) {
      while (p < end && (c = buf[p]!) >= 0x30 && c <= 0x39) {
        m = m * 10 + (c - 0x30);
        p++;
      }
    } else {
      return -1;
    }
    let exp = 0;
    if (p < end && buf[p] === 0x2e) {
      p++;
      const first = p;
      while (p < end && (c = buf[p]!) >= 0x30 && c <= 0x39) {
        m = m * 10 + (c - 0x30);
        exp--;
        p++;
      }
      if (p === first) return -1;
    }
    if (p < end && (buf[p] === 0x65 || buf[p] === 0x45)) {
      p++;
      let eneg = false;
      if (p < end && (buf[p] === 0x2b || buf[p] === 0x2d)) {
        eneg = buf[p] === 0x2d;
        p++;
      }
      const first = p;
      let e = 0;
      while (p < end && (c = buf[p]!) >= 0x30 && c <= 0x39) {
        // Beyond this the text decides (Number() below); only the grammar matters here.
        if (e < 100_000) e = e * 10 + (c - 0x30);
        p++;
      }
      if (p === first) return -1;
      exp += eneg ? -e : e;
    }
    // m stops being exact only at or above 2^53, and never comes back below it.
    if (m < EXACT_MANTISSA && exp >= -22 && exp <= 22) {
      const v = exp >= 0 ? m * POW10[exp]! : m / POW10[-exp]!;
      this.num = neg ? -v : v;
    } else {
      this.num = Number(latin1(buf, start, p));
    }
    return p;
  }

  /** Any JSON value at p (no whitespace before it). depth = containers already open around it. */
  value(p: number, depth: number): number {
    if (p >= this.end) return -1;
    const c = this.buf[p]!;
    if (c === 0x22) return this.string(p);
    if (c === 0x7b) return this.object(p, depth + 1);
    if (c === 0x5b) return this.array(p, depth + 1);
    if (c === 0x74) return this.#word(p, TRUE);
    if (c === 0x66) return this.#word(p, FALSE);
    if (c === 0x6e) return this.#word(p, NULL);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number(p);
    return -1;
  }

  /** An object whose values are skipped; depth counts this object. */
  object(p: number, depth: number): number {
    if (depth > MAX_SCAN_DEPTH) return -1;
    const buf = this.buf;
    p = this.ws(p + 1);
    if (p < this.end && buf[p] === 0x7d) return p + 1;
    for (;;) {
      if (p >= this.end || buf[p] !== 0x22) return -1;
      p = this.string(p);
      if (p < 0) return -1;
      p = this.colon(p);
      if (p < 0) return -1;
      p = this.value(p, depth);
      if (p < 0) return -1;
      p = this.ws(p);
      if (p >= this.end) return -1;
      const c = buf[p]!;
      if (c === 0x7d) return p + 1;
      if (c !== 0x2c) return -1;
      p = this.ws(p + 1);
    }
  }

  array(p: number, depth: number): number {
    if (depth > MAX_SCAN_DEPTH) return -1;
    const buf = this.buf;
    p = this.ws(p + 1);
    if (p < this.end && buf[p] === 0x5d) return p + 1;
    for (;;) {
      p = this.value(p, depth);
      if (p < 0) return -1;
      p = this.ws(p);
      if (p >= this.end) return -1;
      const c = buf[p]!;
      if (c === 0x5d) return p + 1;
      if (c !== 0x2c) return -1;
      p = this.ws(p + 1);
    }
  }

  /** After a key: whitespace, ':', whitespace; returns the position of the value. */
  /**
   * k at a member's key (what open() or next() returned, -1 included): reads `"key":` and returns
   * where its value starts, or -1. The key's end (after its closing quote) is left in keyEnd.
   */
  member(k: number): number {
    if (k < 0) return -1;
    const ke = this.string(k);
    if (ke < 0) return -1;
    this.keyEnd = ke;
    return this.colon(ke);
  }

  colon(p: number): number {
    p = this.ws(p);
    if (p >= this.end || this.buf[p] !== 0x3a) return -1;
    return this.ws(p + 1);
  }

  /**
   * After a member's value: returns the position of the next key (after ',' and whitespace),
   * CLOSED (the object's '}' was read; `closedAt` is the position after it), or -1.
   */
  next(p: number): number {
    p = this.ws(p);
    if (p >= this.end) return -1;
    const c = this.buf[p]!;
    if (c === 0x7d) {
      this.closedAt = p + 1;
      return CLOSED;
    }
    if (c !== 0x2c) return -1;
    p = this.ws(p + 1);
    return p < this.end && this.buf[p] === 0x22 ? p : -1;
  }

  closedAt = 0;

  /**
   * At '{': returns the position of its first key, CLOSED for an empty object (closedAt set), or -1.
   * depth is the nesting of the object itself.
   */
  open(p: number, depth: number): number {
    if (depth > MAX_SCAN_DEPTH || p >= this.end || this.buf[p] !== 0x7b) return -1;
    p = this.ws(p + 1);
    if (p >= this.end) return -1;
    const c = this.buf[p]!;
    if (c === 0x7d) {
      this.closedAt = p + 1;
      return CLOSED;
    }
    return c === 0x22 ? p : -1;
  }

  #word(p: number, w: Uint8Array): number {
    const buf = this.buf;
    if (p + w.length > this.end) return -1;
    for (let i = 1; i < w.length; i++) if (buf[p + i] !== w[i]) return -1;
    return p + w.length;
  }
}

/** Returned by next() and open() when the object has ended. */
export const CLOSED = -2;

const TRUE = bytes('true');
const FALSE = bytes('false');
const NULL = bytes('null');

export function bytes(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** Whether buf[s..e) holds the quoted key k (the quotes included in s..e). */
export function keyIs(buf: Uint8Array, s: number, e: number, k: Uint8Array): boolean {
  if (e - s !== k.length + 2) return false;
  for (let i = 0; i < k.length; i++) if (buf[s + 1 + i] !== k[i]) return false;
  return true;
}

function latin1(buf: Uint8Array, s: number, e: number): string {
  let out = '';
  for (let i = s; i < e; i++) out += String.fromCharCode(buf[i]!);
  return out;
}
