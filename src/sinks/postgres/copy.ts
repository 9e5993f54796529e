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
  /** The socket its messages go to (sendCopyFromChunk writes one CopyData message there). */
  readonly stream?: { readonly writable: boolean; write(b: Uint8Array): boolean };
}

class CopyIn {
  rowCount = 0;
  callback: ((err: Error | null) => void) | undefined;
  #failed = false;

  constructor(
    readonly text: string,
    readonly data: Buffer | readonly Buffer[],
    private readonly done: (err: Error | null, rows: number) => void,
  ) {}

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: Connection): void {
    const data = this.data;
    if (Buffer.isBuffer(data)) {
      if (data.length > 0) connection.sendCopyFromChunk(data);
    } else {
      // Parts (a header, runs of tuples as a worker made them, a trailer) as one CopyData message:
      // its 5-byte head, then each part written to the socket as it is. sendCopyFromChunk would copy
      // every part into a message buffer of its own, which the main thread allocates and collects.
      const parts = data;
      const stream = connection.stream;
      let bytes = 0;
      for (const p of parts) bytes += p.length;
      if (stream === undefined || bytes === 0) {
        for (const p of parts) if (p.length > 0) connection.sendCopyFromChunk(p);
      } else if (stream.writable) {
        const head = Buffer.allocUnsafe(5);
        head[0] = 0x64; // 'd': CopyData
        head.writeInt32BE(bytes + 4, 1);
        stream.write(head);
        for (const p of parts) if (p.length > 0) stream.write(p);
      }
    }
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

/** Runs `COPY <table> (<columns>) FROM STDIN` with `data` (in parts: one after the other); resolves with the rows copied. */
export function copyFrom(client: pg.ClientBase, text: string, data: Buffer | readonly Buffer[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const q = new CopyIn(text, data, (err, rows) => (err === null ? resolve(rows) : reject(err)));
    (client as unknown as { query(q: CopyIn): unknown }).query(q);
  });
}
