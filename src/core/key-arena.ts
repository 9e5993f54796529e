// Series keys shared with the workers that format rows. A row's series key is about 300-400
// characters for a Monasca series, and copying it into every task cost the main thread as much as
// formatting the row itself; but a series recurs window after window (the default job: 4,000 series
// in 346,000 rows). So each key is written once, as UTF-8, into shared memory, and a task names its
// rows' keys by index: any worker reads a key there the first time it meets it and keeps the string.
// Bounded: a full arena starts a new generation (tasks in flight keep the old one alive until they
// finish); a worker drops what it kept of a generation once a task names a newer one.
// Pure: the main thread writes, the workers read.

/** What a task carries to name its keys: the arena's memory (shared, never copied) and generation. */
export interface KeyArenaRef {
  readonly generation: number;
  /** The keys' UTF-8 bytes, back to back. */
  readonly bytes: SharedArrayBuffer;
  /** Int32: key i is bytes[ends[i - 1] (0 for i = 0), ends[i]). */
  readonly ends: SharedArrayBuffer;
}

export const KEY_ARENA_DEFAULTS = {
  /** UTF-8 bytes of keys a generation holds. */
  maxBytes: 32 * 1024 * 1024,
  /** Keys a generation holds. */
  maxKeys: 512 * 1024,
} as const;

/**
 * Most bytes of the arena for a worker heap limit: a sixteenth of it, up to maxBytes (a worker keeps
 * the keys it read as strings in its heap). src/config/memory.ts counts them.
 */
export function keyArenaBytes(workerMaxMemoryMb: number): number {
  return Math.min(KEY_ARENA_DEFAULTS.maxBytes, Math.floor((workerMaxMemoryMb * 1024 * 1024) / 16));
}

const INITIAL_BYTES = 1024 * 1024;
/** #append's answers that are not an index: the generation is full; the key can never be held. */
const FULL = -1;
const UNFIT = -2;
const INITIAL_KEYS = 16 * 1024;

/** A growable SharedArrayBuffer (ES2024; the lib this project compiles against does not type it yet). */
type Growable = SharedArrayBuffer & { grow(bytes: number): void };

function growable(bytes: number, maxBytes: number): SharedArrayBuffer {
  const Sab = SharedArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => SharedArrayBuffer;
  return new Sab(bytes, { maxByteLength: maxBytes });
}

/** The main thread's side: key -> index, appending the keys it has not written yet. */
export class KeyArena {
  readonly #maxBytes: number;
  readonly #maxKeys: number;
  #ids = new Map<string, number>();
  #ref!: KeyArenaRef;
  #bytes!: Buffer;
  #ends!: Int32Array;
  #end = 0;
  #generation = 0;

  constructor(maxBytes: number = KEY_ARENA_DEFAULTS.maxBytes, maxKeys: number = KEY_ARENA_DEFAULTS.maxKeys) {
    this.#maxBytes = maxBytes;
    this.#maxKeys = maxKeys;
    this.#start();
  }

  #start(): void {
    this.#generation++;
    const bytes = growable(Math.min(INITIAL_BYTES, this.#maxBytes), this.#maxBytes);
    const ends = growable(4 * Math.min(INITIAL_KEYS, this.#maxKeys), 4 * this.#maxKeys);
    this.#ref = { generation: this.#generation, bytes, ends };
    this.#bytes = Buffer.from(bytes);
    this.#ends = new Int32Array(ends);
    this.#ids = new Map();
    this.#end = 0;
  }

  /** Keys held by the current generation (tests, gauges). */
  get size(): number {
    return this.#ids.size;
  }

  get generation(): number {
    return this.#generation;
  }

  /**
   * The index of each key in one generation (a full arena starts a new one, and the keys go there);
   * null when the keys do not fit even a new generation (the caller sends them as strings).
   */
  ids(keys: readonly string[]): { readonly ids: Int32Array; readonly ref: KeyArenaRef } | null {
    for (let attempt = 0; attempt < 2; attempt++) {
      const ids = this.#tryIds(keys);
      if (ids instanceof Int32Array) return { ids, ref: this.#ref };
      if (ids === UNFIT || this.#ids.size === 0) return null;
      this.#start();
    }
    return null;
  }

  #tryIds(keys: readonly string[]): Int32Array | typeof FULL | typeof UNFIT {
    const out = new Int32Array(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      let id = this.#ids.get(key);
      if (id === undefined) {
        id = this.#append(key);
        if (id === FULL || id === UNFIT) return id;
      }
      out[i] = id;
    }
    return out;
  }

  #append(key: string): number {
    // UTF-8 cannot hold a lone surrogate: such a key would read back as another (U+FFFD) string.
    if (!key.isWellFormed()) return UNFIT;
    const id = this.#ids.size;
    if (id >= this.#maxKeys) return FULL;
    // UTF-8 is at most 3 bytes per UTF-16 unit.
    const room = this.#end + 3 * key.length;
    if (room > this.#bytes.length) {
      if (room > this.#maxBytes) {
        const exact = Buffer.byteLength(key);
        if (this.#end + exact > this.#maxBytes) return FULL;
      }
      this.#grow(Math.min(this.#maxBytes, Math.max(room, 2 * this.#bytes.length)));
    }
    if (4 * (id + 1) > this.#ref.ends.byteLength) {
      (this.#ref.ends as Growable).grow(Math.min(4 * this.#maxKeys, 2 * this.#ref.ends.byteLength));
      this.#ends = new Int32Array(this.#ref.ends);
    }
    this.#end += this.#bytes.write(key, this.#end);
    this.#ends[id] = this.#end;
    this.#ids.set(key, id);
    return id;
  }

  #grow(bytes: number): void {
    (this.#ref.bytes as Growable).grow(bytes);
    this.#bytes = Buffer.from(this.#ref.bytes);
  }
}

/** A worker's side: the keys of the newest generation it has met, read from the arena once each. */
export class KeyArenaReader {
  #generation = 0;
  #keys: Array<string | undefined> = [];

  keys(ref: KeyArenaRef, ids: Int32Array): string[] {
    if (ref.generation !== this.#generation) {
      // A task of an older generation can still arrive after a newer one: read it without keeping.
      if (ref.generation < this.#generation) return this.#read(ref, ids, []);
      this.#generation = ref.generation;
      this.#keys = [];
    }
    return this.#read(ref, ids, this.#keys);
  }

  #read(ref: KeyArenaRef, ids: Int32Array, cache: Array<string | undefined>): string[] {
    const bytes = Buffer.from(ref.bytes);
    const ends = new Int32Array(ref.ends);
    const out = new Array<string>(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      let key = cache[id];
      if (key === undefined) {
        key = bytes.toString('utf8', id === 0 ? 0 : ends[id - 1]!, ends[id]!);
        cache[id] = key;
      }
      out[i] = key;
    }
    return out;
  }
}
