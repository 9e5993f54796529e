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
  /** The chunks' tuple bytes; tuple i is chunks[chunk[i]] from..to. */
  readonly #chunks: Buffer[] = [];
  readonly #chunk: Int32Array;
  readonly #from: Int32Array;
  readonly #to: Int32Array;
  readonly #series: SeriesRef[];
  readonly #starts: Float64Array;
  readonly #batches: Int32Array;
  readonly #indexes: Int32Array;
  #length = 0;
  amends = false;

  /** `capacity`: the tuples it will hold at most (one typed array each, no growing per tuple). */
  constructor(readonly quality: boolean, capacity: number) {
    this.#chunk = new Int32Array(capacity);
    this.#from = new Int32Array(capacity);
    this.#to = new Int32Array(capacity);
    this.#series = new Array<SeriesRef>(capacity);
    this.#starts = new Float64Array(capacity);
    this.#batches = new Int32Array(capacity);
    this.#indexes = new Int32Array(capacity);
  }

  get length(): number {
    return this.#length;
  }

  /** A chunk's tuple bytes, for the tuples pushed after it. */
  addChunk(data: Buffer): void {
    this.#chunks.push(data);
  }

  /** A tuple of the last chunk added. */
  push(from: number, to: number, series: SeriesRef, startMs: number, batch: number, index: number): void {
    const i = this.#length++;
    this.#chunk[i] = this.#chunks.length - 1;
    this.#from[i] = from;
    this.#to[i] = to;
    this.#series[i] = series;
    this.#starts[i] = startMs;
    this.#batches[i] = batch;
    this.#indexes[i] = index;
  }

  series(i: number): SeriesRef {
    return this.#series[i]!;
  }

  startMs(i: number): number {
    return this.#starts[i]!;
  }

  period(i: number): number {
    return this.#data(i).readInt32BE(this.#from[i]! + PERIOD_AT);
  }

  batchOf(i: number): number {
    return this.#batches[i]!;
  }

  indexOf(i: number): number {
    return this.#indexes[i]!;
  }

  #data(i: number): Buffer {
    return this.#chunks[this.#chunk[i]!]!;
  }

  /** The set without the tuples at these positions. */
  without(drop: ReadonlySet<number>): TupleSet {
    const out = new TupleSet(this.quality, this.#length - drop.size);
    out.amends = this.amends;
    out.#chunks.push(...this.#chunks);
    for (let i = 0; i < this.#length; i++) if (!drop.has(i)) out.#copy(this, i);
    return out;
  }

  slice(lo: number, hi: number): TupleSet {
    const out = new TupleSet(this.quality, hi - lo);
    out.amends = this.amends;
    out.#chunks.push(...this.#chunks);
    for (let i = lo; i < hi; i++) out.#copy(this, i);
    return out;
  }

  /** Tuple i of `from` (whose chunks this set shares) as this set's next. */
  #copy(from: TupleSet, i: number): void {
    const j = this.#length++;
    this.#chunk[j] = from.#chunk[i]!;
    this.#from[j] = from.#from[i]!;
    this.#to[j] = from.#to[i]!;
    this.#series[j] = from.#series[i]!;
    this.#starts[j] = from.#starts[i]!;
    this.#batches[j] = from.#batches[i]!;
    this.#indexes[j] = from.#indexes[i]!;
  }

  /** The COPY data: header, each run of adjacent tuples of one chunk as one part, trailer. */
  #parts(): Buffer[] {
    const parts: Buffer[] = [COPY_HEADER];
    let run = -1;
    for (let i = 0; i < this.#length; i++) {
      if (run >= 0 && this.#chunk[i] === this.#chunk[run] && this.#from[i] === this.#to[i - 1]) continue;
      if (run >= 0) parts.push(this.#data(run).subarray(this.#from[run], this.#to[i - 1]));
      run = i;
    }
    if (run >= 0) parts.push(this.#data(run).subarray(this.#from[run], this.#to[this.#length - 1]));
    parts.push(COPY_TRAILER);
    return parts;
  }

  insertSeries(client: pg.ClientBase): Promise<void> {
    const fresh = new Map<string, SeriesRef>();
    for (let i = 0; i < this.#length; i++) {
      const s = this.#series[i]!;
      if (!s.stored) fresh.set(s.id, s);
    }
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
    for (let i = 0; i < this.#length; i++) rows.push(tupleValues(this.#data(i), this.#from[i]!));
    return upsertUnnestValues(client, this.quality, rows);
  }
}
