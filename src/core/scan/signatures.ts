// Known series by the raw bytes of the fields that decide them. A format's fields that make the
// series (Monasca: metric.name, metric.dimensions, meta.tenantId, meta.region) are read as JSON
// text; two messages whose texts of those fields are byte for byte the same have the same name, unit
// and dimensions (JSON.parse is a function of the text), so they pass the same field checks and get
// the same series. A signature is learnt only from a message the slow path accepted, so a hit needs
// no check of those fields at all: no strings, no sorting, no interning. Different texts of one
// series (other whitespace, other key order) are separate signatures of the same leaf.
// Signatures live in arena chunks (never moved: a growing arena's copies were the largest cost of
// learning) and are compared four bytes a step (DataView reads: the message bytes are not aligned). Long fields are hashed from samples (every candidate is compared in full
// anyway); a cache where one hash gathers MAX_CHAIN signatures hashes every byte from then on.
import type { SeriesLeaf } from '../intern.js';

interface Entry {
  /** The arena chunk holding it. */
  readonly view: DataView;
  /** Where the signature starts in its chunk: each field's length (-1 absent) as an Int32, then its bytes. */
  readonly at: number;
  readonly leaf: SeriesLeaf;
}

/**
 * Signatures sharing a hash: beyond it a sampled cache switches to hashing every byte, and a full one
 * learns no more of that hash (crafted collisions must not make every lookup compare a long chain).
 */
const MAX_CHAIN = 8;

/** Per entry beyond its bytes: the entry object, its map slot or array element. */
const ENTRY_OVERHEAD = 64;

/** Arena chunks start at FIRST_CHUNK bytes and double up to CHUNK (a larger signature gets a chunk of its own). */
const FIRST_CHUNK = 64 * 1024;
const CHUNK = 1024 * 1024;

export class SignatureCache {
  readonly #maxBytes: number;
  #buckets = new Map<number, Entry | Entry[]>();
  #chunk: Uint8Array;
  #cv: DataView;
  /** Bytes used in the current chunk. */
  #chunkUsed = 0;
  /** Signature bytes held in all chunks. */
  #used = 0;
  #entries = 0;
  /** Hash of the last find(), for the learn() that may follow it. */
  #hash = 0;
  /** Hash every byte of long fields, not samples (see MAX_CHAIN). */
  #full = false;
  /** The entry the last find() returned. */
  #found: Entry | null = null;
  /** Counts clear()s: arena offsets from before one are stale. */
  #generation = 0;
  #msg: DataView = new DataView(new ArrayBuffer(0));
  #msgBuf: Uint8Array = new Uint8Array(0);

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
    this.#chunk = new Uint8Array(FIRST_CHUNK);
    this.#cv = new DataView(this.#chunk.buffer);
  }

  /** Estimated bytes held (arena in use and entries). */
  get bytes(): number {
    return this.#used + this.#entries * ENTRY_OVERHEAD;
  }

  get size(): number {
    return this.#entries;
  }

  get generation(): number {
    return this.#generation;
  }

  /** The arena chunk of the last entry found, for reading a stored field (see fieldAt). */
  get foundView(): DataView {
    return this.#found!.view;
  }

  /**
   * Where the bytes of field f of the last entry found start in its chunk (foundView), and their
   * count in `fieldBytes` (-1 absent): a text seen in an accepted message.
   */
  fieldAt(f: number): number {
    const av = this.#found!.view;
    let o = this.#found!.at;
    for (let i = 0; i < f; i++) o += 4 + Math.max(0, av.getInt32(o, true));
    this.fieldBytes = av.getInt32(o, true);
    return o + 4;
  }

  fieldBytes = -1;

  clear(): void {
    this.#generation++;
    this.#found = null;
    this.#buckets = new Map();
    this.#full = false;
    this.#used = 0;
    this.#entries = 0;
    // A fresh chunk, not the old one rewritten: a hint may still read the old bytes (see FastPath).
    if (this.#chunkUsed > 0) {
      this.#chunk = new Uint8Array(FIRST_CHUNK);
      this.#cv = new DataView(this.#chunk.buffer);
      this.#chunkUsed = 0;
    }
  }

  #view(buf: Uint8Array): DataView {
    if (buf !== this.#msgBuf) {
      this.#msgBuf = buf;
      this.#msg = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.#msg;
  }

  /** The leaf of the fields buf[spans[2i]..spans[2i+1]) (start -1: absent), or undefined. */
  find(buf: Uint8Array, spans: Int32Array): SeriesLeaf | undefined {
    const mv = this.#view(buf);
    const h = hashSpans(mv, spans, this.#full);
    this.#hash = h;
    const b = this.#buckets.get(h);
    if (b === undefined) return undefined;
    if (!Array.isArray(b)) {
      if (!this.#same(b, mv, spans)) return undefined;
      this.#found = b;
      return b.leaf;
    }
    for (let i = 0; i < b.length; i++) {
      if (this.#same(b[i]!, mv, spans)) {
        this.#found = b[i]!;
        return b[i]!.leaf;
      }
    }
    return undefined;
  }

  /** Adds the fields of the last find() (which missed) as a signature of leaf. */
  learn(buf: Uint8Array, spans: Int32Array, leaf: SeriesLeaf): void {
    let b = this.#buckets.get(this.#hash);
    if (Array.isArray(b) && b.length >= MAX_CHAIN) {
      if (this.#full) return;
      this.#rehashFull(spans.length >> 1);
      this.#hash = hashSpans(this.#view(buf), spans, true);
      b = this.#buckets.get(this.#hash);
      if (Array.isArray(b) && b.length >= MAX_CHAIN) return;
    }
    let n = 0;
    for (let f = 0; f < spans.length; f += 2) n += 4 + (spans[f]! < 0 ? 0 : spans[f + 1]! - spans[f]!);
    // A cache at its byte bound starts over: its leaves stay in the interner, so this costs re-learning only.
    if (this.bytes + n + ENTRY_OVERHEAD > this.#maxBytes) {
      this.clear();
      return;
    }
    if (this.#chunkUsed + n > this.#chunk.length) {
      this.#chunk = new Uint8Array(Math.max(Math.min(2 * this.#chunk.length, CHUNK), n));
      this.#cv = new DataView(this.#chunk.buffer);
      this.#chunkUsed = 0;
    }
    const chunk = this.#chunk;
    const view = this.#cv;
    const at = this.#chunkUsed;
    let o = at;
    for (let f = 0; f < spans.length; f += 2) {
      const s = spans[f]!;
      const len = s < 0 ? -1 : spans[f + 1]! - s;
      view.setInt32(o, len, true);
      o += 4;
      if (len > 64) {
        chunk.set(buf.subarray(s, s + len), o);
        o += len;
      } else {
        // A short field: a loop is cheaper than the view subarray() makes.
        for (let i = s; i < s + len; i++) chunk[o++] = buf[i]!;
      }
    }
    this.#chunkUsed = o;
    this.#used += n;
    this.#entries++;
    const entry: Entry = { view, at, leaf };
    if (b === undefined) this.#buckets.set(this.#hash, entry);
    else if (Array.isArray(b)) b.push(entry);
    else this.#buckets.set(this.#hash, [b, entry]);
  }

  #rehashFull(fields: number): void {
    this.#full = true;
    const all: Entry[] = [];
    for (const b of this.#buckets.values()) {
      if (Array.isArray(b)) all.push(...b);
      else all.push(b);
    }
    this.#buckets.clear();
    for (const e of all) {
      const h = hashEntry(e.view, e.at, fields);
      const b = this.#buckets.get(h);
      if (b === undefined) this.#buckets.set(h, e);
      else if (Array.isArray(b)) b.push(e);
      else this.#buckets.set(h, [b, e]);
    }
  }

  #same(e: Entry, mv: DataView, spans: Int32Array): boolean {
    const av = e.view;
    let o = e.at;
    for (let f = 0; f < spans.length; f += 2) {
      const s = spans[f]!;
      const len = s < 0 ? -1 : spans[f + 1]! - s;
      if (av.getInt32(o, true) !== len) return false;
      o += 4;
      if (len <= 0) continue;
      const e = s + len;
      let i = s;
      for (; i + 4 <= e; i += 4, o += 4) if (mv.getInt32(i, true) !== av.getInt32(o, true)) return false;
      for (; i < e; i++, o++) if (mv.getUint8(i) !== av.getUint8(o)) return false;
    }
    return true;
  }
}

/** Fields hashed whole up to this many bytes (Ceilometer ids of 38 among them); longer ones by SAMPLES words spread over them (first and last included). */
const SHORT = 64;
const SAMPLES = 16;

function mix(h: number, x: number): number {
  h = Math.imul(h ^ x, 0x9e3779b1);
  return h ^ (h >>> 15);
}

/** One field (its length, -1 absent, and bytes) into the hash. */
function hashField(h: number, v: DataView, s: number, len: number, full: boolean): number {
  h = mix(h, len);
  if (len <= 0) return h;
  const e = s + len;
  if (full || len <= SHORT) {
    let i = s;
    for (; i + 4 <= e; i += 4) h = mix(h, v.getInt32(i, true));
    for (; i < e; i++) h = mix(h, v.getUint8(i));
    return h;
  }
  const span = len - 4;
  for (let k = 0; k < SAMPLES; k++) h = mix(h, v.getInt32(s + Math.floor((k * span) / (SAMPLES - 1)), true));
  return h;
}

function finish(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x3fffffff;
}

/** The hash of the message's fields buf[spans[2i]..spans[2i+1]), kept a small integer for the Map. */
function hashSpans(mv: DataView, spans: Int32Array, full: boolean): number {
  let h = 0x9747b28c;
  for (let f = 0; f < spans.length; f += 2) {
    const s = spans[f]!;
    h = hashField(h, mv, s, s < 0 ? -1 : spans[f + 1]! - s, full);
  }
  return finish(h);
}

/** The same hash (full) of a stored signature. */
function hashEntry(av: DataView, at: number, fields: number): number {
  let h = 0x9747b28c;
  let o = at;
  for (let f = 0; f < fields; f++) {
    const len = av.getInt32(o, true);
    h = hashField(h, av, o + 4, len, true);
    o += 4 + Math.max(0, len);
  }
  return finish(h);
}
