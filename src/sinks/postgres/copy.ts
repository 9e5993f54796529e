// COPY ... FROM STDIN with the pg driver alone. The driver runs any object with submit() as a query
// (the "submittable" protocol pg-cursor and pg-query-stream use) and hands it the server's
// CopyInResponse; pg-copy-streams adds a stream interface on top of this, which a sink that has its
// whole batch in memory does not need. Data goes in one CopyData message per call.
import type pg from 'pg';

/** What the driver's Connection offers a submittable (not in @types/pg). */
interface Connection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

class CopyIn {
  rowCount = 0;
  callback: ((err: Error | null) => void) | undefined;
  #failed = false;

  constructor(
    readonly text: string,
    readonly data: Buffer,
    private readonly done: (err: Error | null, rows: number) => void,
  ) {}

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: Connection): void {
    if (this.data.length > 0) connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }

  handleCommandComplete(msg: { text?: string }): void {
    const m = /^COPY (\d+)/.exec(msg.text ?? '');
    if (m !== null) this.rowCount = Number(m[1]);
  }

  handleReadyForQuery(): void {
    if (!this.#failed) this.done(null, this.rowCount);
  }

  // The client drops its active query on an error, so no ReadyForQuery reaches this object after one.
  handleError(err: Error): void {
    this.#failed = true;
    this.done(err, 0);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}
}

/** Runs `COPY <table> (<columns>) FROM STDIN` with `data` in text format; resolves with the rows copied. */
export function copyFrom(client: pg.ClientBase, text: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const q = new CopyIn(text, data, (err, rows) => (err === null ? resolve(rows) : reject(err)));
    (client as unknown as { query(q: CopyIn): unknown }).query(q);
  });
}

const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES = /[\\\n\r\t]/g;
const ESCAPED: Readonly<Record<string, string>> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A text value as COPY's text format wants it (backslash, newline, CR and tab escaped). */
export function copyText(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(ESCAPES, (c) => ESCAPED[c]!) : s;
}

export const COPY_NULL = '\\N';

// ---- COPY's binary format: no text parsing on the server (timestamps, floats, uuids arrive as bytes).

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const TWO_32 = 2 ** 32;
/** 2000-01-01T00:00:00Z in ms since the Unix epoch: PostgreSQL's timestamp epoch. */
const PG_EPOCH_MS = 946_684_800_000;

/**
 * Builds binary COPY data row by row into one buffer that grows by doubling. Integers must be exact
 * (safe integers; int4 in range): the caller checks them, this writes what it is given.
 */
export class BinaryCopyWriter {
  #buf: Buffer;
  #at = 0;

  constructor(sizeHint = 64 * 1024) {
    this.#buf = Buffer.allocUnsafe(Math.max(sizeHint, 64));
    SIGNATURE.copy(this.#buf, 0);
    this.#buf.writeInt32BE(0, 11); // flags
    this.#buf.writeInt32BE(0, 15); // header extension length
    this.#at = 19;
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#at + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.#buf.copy(next, 0, 0, this.#at);
    this.#buf = next;
  }

  row(fields: number): void {
    this.#room(2);
    this.#buf.writeInt16BE(fields, this.#at);
    this.#at += 2;
  }

  uuid(hex: string): void {
    this.#room(20);
    this.#buf.writeInt32BE(16, this.#at);
    this.#buf.write(hex, this.#at + 4, 16, 'hex');
    this.#at += 20;
  }

  /** An exact integer as int8, without BigInt: high and low 32-bit halves. */
  #int64(n: number): void {
    const hi = Math.floor(n / TWO_32);
    this.#buf.writeInt32BE(hi, this.#at);
    this.#buf.writeUInt32BE(n - hi * TWO_32, this.#at + 4);
    this.#at += 8;
  }

  int8(n: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    this.#at += 4;
    this.#int64(n);
  }

  int4(n: number): void {
    this.#room(8);
    this.#buf.writeInt32BE(4, this.#at);
    this.#buf.writeInt32BE(n, this.#at + 4);
    this.#at += 8;
  }

  float8(n: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    this.#buf.writeDoubleBE(n, this.#at + 4);
    this.#at += 12;
  }

  /**
   * timestamptz: microseconds since 2000-01-01 as int8. ms * 1000 can exceed 2^53 (beyond ~2285), so
   * the product is formed on 32-bit halves to stay exact for every date a Date can hold.
   */
  timestamp(ms: number): void {
    this.#room(12);
    this.#buf.writeInt32BE(8, this.#at);
    const d = ms - PG_EPOCH_MS;
    const dHi = Math.floor(d / TWO_32);
    const lo = (d - dHi * TWO_32) * 1000; // < 2^42: exact
    const carry = Math.floor(lo / TWO_32);
    this.#buf.writeInt32BE(dHi * 1000 + carry, this.#at + 4);
    this.#buf.writeUInt32BE(lo - carry * TWO_32, this.#at + 8);
    this.#at += 12;
  }

  text(s: string | null, jsonb = false): void {
    if (s === null) {
      this.#room(4);
      this.#buf.writeInt32BE(-1, this.#at);
      this.#at += 4;
      return;
    }
    const extra = jsonb ? 1 : 0;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: reserve that, then write the length actually used.
    this.#room(5 + 3 * s.length);
    if (jsonb) this.#buf[this.#at + 4] = 1; // jsonb binary format version
    const n = this.#buf.write(s, this.#at + 4 + extra, 'utf8');
    this.#buf.writeInt32BE(n + extra, this.#at);
    this.#at += 4 + extra + n;
  }

  /** A bytea field (null: SQL NULL). */
  bytes(b: Buffer | null): void {
    if (b === null) {
      this.#room(4);
      this.#buf.writeInt32BE(-1, this.#at);
      this.#at += 4;
      return;
    }
    this.#room(4 + b.length);
    this.#buf.writeInt32BE(b.length, this.#at);
    b.copy(this.#buf, this.#at + 4);
    this.#at += 4 + b.length;
  }

  /** The data with its trailer. */
  finish(): Buffer {
    this.#room(2);
    this.#buf.writeInt16BE(-1, this.#at);
    this.#at += 2;
    return this.#buf.subarray(0, this.#at);
  }
}
