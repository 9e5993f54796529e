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
    readonly data: Buffer | readonly Buffer[],
    private readonly done: (err: Error | null, rows: number) => void,
  ) {}

  submit(connection: Connection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: Connection): void {
    // Parts (a header, runs of tuples from several chunks, a trailer) as one CopyData message each.
    for (const part of Array.isArray(this.data) ? this.data : [this.data]) if (part.length > 0) connection.sendCopyFromChunk(part);
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
