// Series interning: finds a record's series without building its key string.
// Building and hashing the ~300-character key of a Monasca series for every record was the largest
// cost of decoding after JSON.parse. Here a record's dimension names in the order found lead, through
// a trie, to a cached "shape" (the sorted, de-duplicated order of those names: JSON.parse internalises
// names, so these lookups compare pointers); its name, unit and values in that order are hashed from
// samples of their characters and compared with the candidates' own strings, without allocating.
// A per-character Map walk over the values costs as much as the joined key (every fresh string must be
// hashed whole); the sampled hash reads about a third of the characters. The key string is built once,
// when a series is first seen.
import type { SampleRecord } from './record.js';
import { identityOverLimit, seriesKey } from './series.js';

/** One series as a decoder knows it; the per-batch fields let the aggregation loop skip a Map. */
export interface SeriesLeaf {
  /** Dictionary id (0, 1, ... in order of first sight); -1 when the key is over MAX_SERIES_KEY_BYTES. */
  readonly id: number;
  readonly key: string;
  /** identityJsonBytes(key) when over the limit (the record is rejected as too_long), else -1. */
  readonly overLimitBytes: number;
  /** What identifies it within its table: name, unit, then the group-by or sorted dimension values. */
  readonly parts: ReadonlyArray<string | null>;
  /** Batch number in which local/lastWindow/lastCell were last set. */
  stamp: number;
  local: number;
  lastWindow: number;
  lastCell: number;
}

class ShapeNode {
  readonly next = new Map<string, ShapeNode>();
  /** The dimension names that lead here, in the order found. */
  names: string[] = [];
  /** Indices into the record's dims, sorted by name, first of each repeated name only. */
  order: Int32Array | null = null;
  /**
   * The series of this shape: shared by every shape with the same sorted names, so that one series
   * has one leaf (and one id) whatever order its dimensions arrive in.
   */
  table: SeriesTable | null = null;

  child(name: string): ShapeNode {
    let n = this.next.get(name);
    if (n === undefined) {
      n = new ShapeNode();
      this.next.set(name, n);
    }
    return n;
  }
}

/** Leaves of one set of dimension names, by a hash of name, unit and values. */
class SeriesTable {
  /** Hash every character, not samples: set once a bucket grew long (values that differ only between samples). */
  full = false;
  readonly buckets = new Map<number, SeriesLeaf | SeriesLeaf[]>();
}

/** Leaves sharing a hash before the table switches to hashing every character. */
const MAX_CHAIN = 8;

export class SeriesInterner {
  readonly #groupBy: readonly string[] | null;
  readonly #maxKeyBytes: number;
  #shapes = new ShapeNode();
  /** Sorted dimension names -> their table (see ShapeNode.table). */
  #canonical = new ShapeNode();
  /** With GROUP_BY the dimension names are fixed: one table. */
  #grouped = new SeriesTable();
  #size = 0;
  /** Estimated heap bytes held (keys, parts, leaves, table entries): what bounds the interner. */
  #bytes = 0;
  /** Key of every id handed out, in id order. */
  #keys: string[] = [];
  /** The current record's identifying values (group-by or sorted dimension values), reused. */
  readonly #vals: Array<string | null> = [];
  /** The last record's shape: records of one source mostly share one, checked by pointer compares. */
  #lastShape: ShapeNode | null = null;

  constructor(groupBy: readonly string[] | null, maxKeyBytes: number) {
    this.#groupBy = groupBy;
    this.#maxKeyBytes = maxKeyBytes;
  }

  /** Series (and over-limit keys) known. */
  get size(): number {
    return this.#size;
  }

  /**
   * Estimated heap bytes of what is interned. In a worker the dictionary is worker state: bounded by
   * bytes as well as by count, a decoder of long keys starts over long before WORKER_MAX_MEMORY_MB.
   */
  get bytes(): number {
    return this.#bytes;
  }

  /** Ids handed out so far: the dictionary holds ids 0 .. nextId - 1. */
  get nextId(): number {
    return this.#keys.length;
  }

  /** Keys of ids from, from + 1, ... nextId - 1. */
  keys(from: number): string[] {
    return this.#keys.slice(from);
  }

  clear(): void {
    this.#shapes = new ShapeNode();
    this.#canonical = new ShapeNode();
    this.#grouped = new SeriesTable();
    this.#lastShape = null;
    this.#size = 0;
    this.#bytes = 0;
    this.#keys = [];
  }

  leaf(rec: SampleRecord): SeriesLeaf {
    const dims = rec.dims;
    const groupBy = this.#groupBy;
    const vals = this.#vals;
    let nv: number;
    let table: SeriesTable;
    if (groupBy === null) {
      const shape = this.#shape(dims);
      table = shape.table!;
      const order = shape.order!;
      nv = order.length;
      for (let i = 0; i < nv; i++) vals[i] = dims[order[i]!]![1];
    } else {
      table = this.#grouped;
      nv = groupBy.length;
      for (let g = 0; g < nv; g++) {
        const name = groupBy[g]!;
        let v: string | null = null;
        for (let i = 0; i < dims.length; i++) {
          if (dims[i]![0] === name) {
            v = dims[i]![1];
            break;
          }
        }
        vals[g] = v;
      }
    }
    const h = hashOf(rec.name, rec.unit, vals, nv, table.full);
    const b = table.buckets.get(h);
    if (b !== undefined) {
      if (!Array.isArray(b)) {
        if (matches(b.parts, rec.name, rec.unit, vals, nv)) return b;
      } else {
        for (let i = 0; i < b.length; i++) if (matches(b[i]!.parts, rec.name, rec.unit, vals, nv)) return b[i]!;
      }
    }
    const leaf = this.#newLeaf(rec, vals, nv);
    if (insert(table.buckets, h, leaf) > MAX_CHAIN && !table.full) rehashFull(table);
    return leaf;
  }

  #shape(dims: ReadonlyArray<readonly [string, string]>): ShapeNode {
    const last = this.#lastShape;
    if (last !== null && sameNames(last.names, dims)) return last;
    let s = this.#shapes;
    for (let i = 0; i < dims.length; i++) s = s.child(dims[i]![0]);
    if (s.order === null) {
      s.order = sortedOrder(dims);
      let c = this.#canonical;
      for (const i of s.order) c = c.child(dims[i]![0]);
      c.table ??= new SeriesTable();
      s.table = c.table;
      s.names = dims.map((d) => d[0]);
    }
    this.#lastShape = s;
    return s;
  }

  #newLeaf(rec: SampleRecord, vals: ReadonlyArray<string | null>, nv: number): SeriesLeaf {
    const key = seriesKey(rec.name, rec.unit, rec.dims, this.#groupBy);
    const over = identityOverLimit(key, this.#maxKeyBytes);
    const id = over === -1 ? this.#keys.length : -1;
    if (id !== -1) this.#keys.push(key);
    this.#size++;
    // The key (one byte a character when Latin-1), about as much again in the parts' own strings, and
    // the leaf, its parts array and its table entry.
    this.#bytes += 2 * key.length + 200 + 8 * nv;
    const parts = [rec.name, rec.unit, ...vals.slice(0, nv)];
    return { id, key, overLimitBytes: over, parts, stamp: -1, local: -1, lastWindow: NaN, lastCell: -1 };
  }
}

function sameNames(names: readonly string[], dims: ReadonlyArray<readonly [string, string]>): boolean {
  if (names.length !== dims.length) return false;
  for (let i = 0; i < names.length; i++) if (names[i] !== dims[i]![0]) return false;
  return true;
}

function insert(buckets: Map<number, SeriesLeaf | SeriesLeaf[]>, h: number, leaf: SeriesLeaf): number {
  const b = buckets.get(h);
  if (b === undefined) {
    buckets.set(h, leaf);
    return 1;
  }
  if (!Array.isArray(b)) {
    buckets.set(h, [b, leaf]);
    return 2;
  }
  b.push(leaf);
  return b.length;
}

function rehashFull(table: SeriesTable): void {
  table.full = true;
  const leaves: SeriesLeaf[] = [];
  for (const b of table.buckets.values()) {
    if (Array.isArray(b)) leaves.push(...b);
    else leaves.push(b);
  }
  table.buckets.clear();
  for (const leaf of leaves) {
    const p = leaf.parts;
    insert(table.buckets, hashOf(p[0]!, p[1] ?? null, p.slice(2), p.length - 2, true), leaf);
  }
}

const SAMPLES = 8;

function mix(h: number, x: number): number {
  return Math.imul(h ^ x, 0x01000193);
}

/**
 * FNV-style hash of the series' strings. Long strings are sampled (SAMPLES characters spread over
 * them, and the length) rather than read whole: every candidate is compared in full anyway (matches), and a
 * table whose samples collide too often hashes every character from then on.
 */
function hashText(h: number, v: string | null, full: boolean): number {
  if (v === null) return mix(h, 0x2d2d2d2d);
  const n = v.length;
  h = mix(h, n + 1);
  if (full || n <= SAMPLES) {
    for (let i = 0; i < n; i++) h = mix(h, v.charCodeAt(i));
    return h;
  }
  const step = n / SAMPLES;
  for (let i = 0; i < SAMPLES - 1; i++) h = mix(h, v.charCodeAt((i * step) | 0));
  return mix(h, v.charCodeAt(n - 1));
}

function hashOf(name: string, unit: string | null, vals: ReadonlyArray<string | null>, nv: number, full: boolean): number {
  let h = hashText(0x811c9dc5, name, full);
  h = hashText(h, unit, full);
  for (let i = 0; i < nv; i++) h = hashText(h, vals[i]!, full);
  return h;
}

/**
 * Whether the leaf's parts are name, unit and vals. Most dimension values are short, and JSON.parse
 * internalises short strings, so most of these comparisons are of one pointer.
 */
function matches(parts: ReadonlyArray<string | null>, name: string, unit: string | null, vals: ReadonlyArray<string | null>, nv: number): boolean {
  if (parts[0] !== name || parts[1] !== unit) return false;
  for (let i = 0; i < nv; i++) if (parts[i + 2] !== vals[i]) return false;
  return true;
}

/** Indices of dims sorted by name (stable), keeping the first of a repeated name, as seriesKey does. */
function sortedOrder(dims: ReadonlyArray<readonly [string, string]>): Int32Array {
  const idx = Array.from(dims.keys()).sort((a, b) => {
    const x = dims[a]![0];
    const y = dims[b]![0];
    return x < y ? -1 : x > y ? 1 : a - b;
  });
  const keep: number[] = [];
  for (const i of idx) if (keep.length === 0 || dims[keep[keep.length - 1]!]![0] !== dims[i]![0]) keep.push(i);
  return Int32Array.from(keep);
}
