// The main thread's side of COPY tuples (./tuples.ts): the tuples of a transaction's writes, each
// with its series as this sink knows it, sent as they came (runs of a chunk's bytes) between a COPY
// header and trailer. Bisection reads a slice's values back from its tuples.
import type pg from 'pg';
import { TABLES } from './schema.js';
import { COPY_HEADER, COPY_TRAILER, qualityColumns } from './encode.js';
import type { SeriesRef } from './identity.js';
import { copyFrom } from './copy.js';
import { tupleValues } from './tuples.js';
import { FORMAT_OPTION, insertFreshSeries, KEY, STAGING, updateFor, upsertUnnestValues, type WriteSet } from './write.js';

/** Offset of the period (int4) in a tuple: after the fixed-size fields before it. */
const PERIOD_AT = 130;

export class TupleSet implements WriteSet {
  readonly #data: Buffer[] = [];
  readonly #from: number[] = [];
  readonly #to: number[] = [];
  readonly #series: SeriesRef[] = [];
  readonly #starts: number[] = [];
  readonly #batches: number[] = [];
  readonly #indexes: number[] = [];
  amends = false;

  constructor(readonly quality: boolean) {}

  get length(): number {
    return this.#data.length;
  }

  push(data: Buffer, from: number, to: number, series: SeriesRef, startMs: number, batch: number, index: number): void {
    this.#data.push(data);
    this.#from.push(from);
    this.#to.push(to);
    this.#series.push(series);
    this.#starts.push(startMs);
    this.#batches.push(batch);
    this.#indexes.push(index);
  }

  series(i: number): SeriesRef {
    return this.#series[i]!;
  }

  startMs(i: number): number {
    return this.#starts[i]!;
  }

  period(i: number): number {
    return this.#data[i]!.readInt32BE(this.#from[i]! + PERIOD_AT);
  }

  batchOf(i: number): number {
    return this.#batches[i]!;
  }

  indexOf(i: number): number {
    return this.#indexes[i]!;
  }

  /** The set without the tuples at these positions. */
  without(drop: ReadonlySet<number>): TupleSet {
    const out = new TupleSet(this.quality);
    out.amends = this.amends;
    for (let i = 0; i < this.length; i++) if (!drop.has(i)) out.#copy(this, i);
    return out;
  }

  slice(lo: number, hi: number): TupleSet {
    const out = new TupleSet(this.quality);
    out.amends = this.amends;
    for (let i = lo; i < hi; i++) out.#copy(this, i);
    return out;
  }

  #copy(from: TupleSet, i: number): void {
    this.push(from.#data[i]!, from.#from[i]!, from.#to[i]!, from.#series[i]!, from.#starts[i]!, from.#batches[i]!, from.#indexes[i]!);
  }

  /** The COPY data: header, each run of adjacent tuples of one chunk as one part, trailer. */
  #parts(): Buffer[] {
    const parts: Buffer[] = [COPY_HEADER];
    let run = -1;
    for (let i = 0; i < this.length; i++) {
      if (run >= 0 && this.#data[i] === this.#data[run] && this.#from[i] === this.#to[i - 1]) continue;
      if (run >= 0) parts.push(this.#data[run]!.subarray(this.#from[run], this.#to[i - 1]));
      run = i;
    }
    if (run >= 0) parts.push(this.#data[run]!.subarray(this.#from[run], this.#to[this.length - 1]));
    parts.push(COPY_TRAILER);
    return parts;
  }

  insertSeries(client: pg.ClientBase): Promise<void> {
    const fresh = new Map<string, SeriesRef>();
    for (const s of this.#series) if (!s.stored) fresh.set(s.id, s);
    return insertFreshSeries(client, fresh);
  }

  async insertCopy(client: pg.ClientBase): Promise<void> {
    await copyFrom(client, `COPY ${TABLES.windows} (${qualityColumns(this.quality)}) FROM STDIN${FORMAT_OPTION.binary}`, this.#parts());
  }

  async upsertCopy(client: pg.ClientBase): Promise<void> {
    const columns = qualityColumns(this.quality);
    await copyFrom(client, `COPY ${STAGING} (${columns}) FROM STDIN${FORMAT_OPTION.binary}`, this.#parts());
    await client.query(`INSERT INTO ${TABLES.windows} (${columns}) SELECT ${columns} FROM ${STAGING}
ON CONFLICT (${KEY}) ${updateFor(this.quality)}`);
  }

  upsertUnnest(client: pg.ClientBase): Promise<void> {
    const rows: unknown[][] = [];
    for (let i = 0; i < this.length; i++) rows.push(tupleValues(this.#data[i]!, this.#from[i]!));
    return upsertUnnestValues(client, this.quality, rows);
  }
}
