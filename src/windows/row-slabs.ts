// Rows' bytes in shared memory (LANE_STATE=worker). A chunk of rows crossing from its owner to the
// main thread as a plain buffer is a fresh backing store there, counted as external memory: at half a
// row per record (the default job) that alone made the main thread collect its heap every 200 ms,
// most of its time per record. A SharedArrayBuffer is not counted per thread (V8 leaves shared
// backing stores out of each isolate's external memory), so the owner writes each chunk into a slab
// of shared memory it reuses: the main thread writes the rows out and marks the slab free again.
// Pure: the owner (./owner.ts) and the engine both import it.
import type { RowsWire } from '../core/messages.js';

/** Bytes before a slab's lines: its state word (FREE or HELD), padded to 8. */
const HEADER = 8;
const FREE = 0;
const HELD = 1;
const copy = Buffer.prototype.copy;

export const ROW_SLABS_DEFAULTS = {
  /** Slabs an owner keeps at most, and their bytes; past them (writes far behind) a chunk crosses as a plain buffer. */
  maxSlabs: 32,
  maxBytes: 32 * 1024 * 1024,
  /** The smallest slab: small chunks (an idle close) share the size of an ordinary one. */
  minBytes: 256 * 1024,
} as const;

/** The owner's slabs, each free or held by one chunk the main thread has not written yet. */
export class RowSlabs {
  readonly #slabs: Array<{ readonly buffer: SharedArrayBuffer; readonly state: Int32Array }> = [];
  readonly #max: number;
  readonly #maxBytes: number;
  readonly #minBytes: number;
  #bytes = 0;

  constructor(opts: { maxSlabs?: number; maxBytes?: number; minBytes?: number } = {}) {
    this.#max = opts.maxSlabs ?? ROW_SLABS_DEFAULTS.maxSlabs;
    this.#maxBytes = opts.maxBytes ?? ROW_SLABS_DEFAULTS.maxBytes;
    this.#minBytes = opts.minBytes ?? ROW_SLABS_DEFAULTS.minBytes;
  }

  /** Bytes of every slab made and kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Slabs made so far (free or held). */
  get size(): number {
    return this.#slabs.length;
  }

  /**
   * The wire with its lines, their ends and the identity keys copied into a free slab (held until
   * releaseSlab), and that slab; with every slab held and no more allowed, the wire in buffers of its
   * own and null. `views`: the wire's arrays are views of memory the caller writes again (rowsWire's
   * scratch), so without a slab they are copied out too.
   */
  place(wire: RowsWire, views = false): { wire: RowsWire; slab: SharedArrayBuffer | null } {
    const t = wire.copy;
    const keys = wire.keys;
    const keyEnds = wire.keyEnds;
    // Int32 columns first (4-byte aligned after the 8-byte header), then the bytes.
    const r = wire.records;
    const need = HEADER + wire.lineEnds.byteLength + wire.ndjson.byteLength + (keys === null || keyEnds === null ? 0 : keyEnds.byteLength + keys.byteLength) +
      (t === undefined ? 0 : t.ends.byteLength + t.rows.byteLength + t.metaEnds.byteLength + t.data.byteLength + t.meta.byteLength) +
      (r === undefined ? 0 : 6 * r.rowIndex.byteLength + r.sections.byteLength + r.bytes.byteLength);
    const slab = this.#free(need);
    if (slab === null) return { wire: views ? owned(wire) : wire, slab: null };
    Atomics.store(slab.state, 0, HELD);
    // Buffer's copy (one memmove): a typed array's set() into shared memory copies element by element.
    const buffer = slab.buffer;
    const into = Buffer.from(buffer);
    let at = HEADER;
    const ints = (a: Int32Array): Int32Array => {
      copy.call(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), into, at);
      const view = new Int32Array(buffer, at, a.length);
      at += a.byteLength;
      return view;
    };
    const bytes = (b: Uint8Array): Uint8Array => {
      copy.call(b, into, at);
      const view = new Uint8Array(buffer, at, b.byteLength);
      at += b.byteLength;
      return view;
    };
    const lineEnds = ints(wire.lineEnds);
    const placedKeyEnds = keys === null || keyEnds === null ? null : ints(keyEnds);
    const tupleInts = t === undefined ? null : { ends: ints(t.ends), rows: ints(t.rows), metaEnds: ints(t.metaEnds) };
    const recordInts = r === undefined ? null : {
      rowIndex: ints(r.rowIndex), partition: ints(r.partition), keyStart: ints(r.keyStart), keyEnd: ints(r.keyEnd),
      valueStart: ints(r.valueStart), valueEnd: ints(r.valueEnd), sections: ints(r.sections),
    };
    const ndjson = bytes(wire.ndjson);
    const placedKeys = placedKeyEnds === null ? null : bytes(keys!);
    const placed = { ...wire, lineEnds, ndjson, keys: placedKeys, keyEnds: placedKeyEnds, ...(r === undefined || recordInts === null ? {} : { records: { ...r, ...recordInts, bytes: bytes(r.bytes) } }) };
    if (t === undefined || tupleInts === null) return { wire: placed, slab: buffer };
    return { wire: { ...placed, copy: { ...t, ...tupleInts, data: bytes(t.data), meta: bytes(t.meta) } }, slab: buffer };
  }

  /** A free slab of at least `need` bytes (made if none and the bounds allow), or null. */
  #free(need: number): { readonly buffer: SharedArrayBuffer; readonly state: Int32Array } | null {
    const found = this.#slabs.find((s) => s.buffer.byteLength >= need && Atomics.load(s.state, 0) === FREE);
    if (found !== undefined) return found;
    let bytes = this.#minBytes;
    while (bytes < need) bytes *= 2;
    if (bytes > this.#maxBytes) return null;
    while (this.#slabs.length >= this.#max || this.#bytes + bytes > this.#maxBytes) {
      // Drop the smallest free slab for a bigger one, or give up on shared memory for this chunk.
      const i = this.#slabs.findIndex((s) => Atomics.load(s.state, 0) === FREE);
      if (i < 0) return null;
      this.#bytes -= this.#slabs[i]!.buffer.byteLength;
      this.#slabs.splice(i, 1);
    }
    this.#bytes += bytes;
    const buffer = new SharedArrayBuffer(bytes);
    const slab = { buffer, state: new Int32Array(buffer, 0, 1) };
    this.#slabs.push(slab);
    this.#slabs.sort((a, b) => a.buffer.byteLength - b.buffer.byteLength);
    return slab;
  }
}

/** The wire's lines, ends, keys and records in arrays of their own (the tuples are always the wire's own). */
function owned(wire: RowsWire): RowsWire {
  const r = wire.records;
  return {
    ...wire,
    ndjson: Uint8Array.prototype.slice.call(wire.ndjson),
    lineEnds: wire.lineEnds.slice(),
    keys: wire.keys === null ? null : Uint8Array.prototype.slice.call(wire.keys),
    keyEnds: wire.keyEnds === null ? null : wire.keyEnds.slice(),
    ...(r === undefined ? {} : {
      records: {
        ...r, bytes: Uint8Array.prototype.slice.call(r.bytes), rowIndex: r.rowIndex.slice(), partition: r.partition.slice(), keyStart: r.keyStart.slice(),
        keyEnd: r.keyEnd.slice(), valueStart: r.valueStart.slice(), valueEnd: r.valueEnd.slice(), sections: r.sections.slice(),
      },
    }),
  };
}

/** The main thread wrote a chunk's rows: its slab may take the owner's next chunk. */
export function releaseSlab(slab: SharedArrayBuffer): void {
  Atomics.store(new Int32Array(slab, 0, 1), 0, FREE);
}
