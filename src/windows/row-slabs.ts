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
   * The wire with its lines and their ends copied into a free slab (held until releaseSlab), and
   * that slab; the wire as it was and null when every slab is held and no more may be made.
   */
  place(wire: RowsWire): { wire: RowsWire; slab: SharedArrayBuffer | null } {
    const t = wire.copy;
    // Int32 columns first (4-byte aligned after the 8-byte header), then the bytes.
    const need = HEADER + wire.lineEnds.byteLength + wire.ndjson.byteLength +
      (t === undefined ? 0 : t.ends.byteLength + t.rows.byteLength + t.metaEnds.byteLength + t.data.byteLength + t.meta.byteLength);
    let slab = this.#slabs.find((s) => s.buffer.byteLength >= need && Atomics.load(s.state, 0) === FREE);
    if (slab === undefined) {
      let bytes = this.#minBytes;
      while (bytes < need) bytes *= 2;
      if (bytes > this.#maxBytes) return { wire, slab: null };
      while (this.#slabs.length >= this.#max || this.#bytes + bytes > this.#maxBytes) {
        // Drop the smallest free slab for a bigger one, or give up on shared memory for this chunk.
        const i = this.#slabs.findIndex((s) => Atomics.load(s.state, 0) === FREE);
        if (i < 0) return { wire, slab: null };
        this.#bytes -= this.#slabs[i]!.buffer.byteLength;
        this.#slabs.splice(i, 1);
      }
      this.#bytes += bytes;
      const buffer = new SharedArrayBuffer(bytes);
      slab = { buffer, state: new Int32Array(buffer, 0, 1) };
      this.#slabs.push(slab);
      this.#slabs.sort((a, b) => a.buffer.byteLength - b.buffer.byteLength);
    }
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
    if (t === undefined) return { wire: { ...wire, lineEnds, ndjson: bytes(wire.ndjson) }, slab: buffer };
    const ends = ints(t.ends);
    const rows = ints(t.rows);
    const metaEnds = ints(t.metaEnds);
    const ndjson = bytes(wire.ndjson);
    const placed = { ...t, ends, rows, metaEnds, data: bytes(t.data), meta: bytes(t.meta) };
    return { wire: { ...wire, lineEnds, ndjson, copy: placed }, slab: buffer };
  }
}

/** The main thread wrote a chunk's rows: its slab may take the owner's next chunk. */
export function releaseSlab(slab: SharedArrayBuffer): void {
  Atomics.store(new Int32Array(slab, 0, 1), 0, FREE);
}
