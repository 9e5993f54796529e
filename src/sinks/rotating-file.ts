// A size-capped, rotating NDJSON file for dead letters. A replayed workload can reject every record
// (690,000 `late` records made a 638 MB file), so the file never grows past maxBytes: it is renamed
// PATH.1 (PATH.1 -> PATH.2, ...) and a new PATH begun; the oldest beyond `files` is deleted. At most
// maxBytes x files sit on disk, plus one line when a single line is larger than maxBytes (it gets a
// file of its own: a dead letter is never cut here).
//
// Only a regular file is ever renamed or deleted. PATH may be a character device (/dev/null), a FIFO,
// a socket or a symbolic link: that is written as it is and never rotated. Run as root (a container's
// default) a rename + create + delete of /dev/null replaces the machine's device node with a file and
// then removes it, and every program that writes to /dev/null breaks. Before each rename or delete the
// name is looked at again (lstat): PATH must still be the regular file we opened (same device and
// inode), and each PATH.n a regular file or nothing; a PATH replaced under us is reopened as it now is,
// a PATH.n that is anything else stops the rotation with an error naming it. Nothing else is touched.
import { createWriteStream, type Stats } from 'node:fs';
import { lstat, open, rename, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { Gate } from '../async/index.js';
import { StreamstatsError } from '../errors.js';
import { NdjsonWriter } from './ndjson.js';

export interface RotationSettings {
  /** Bytes of one file before it is rotated. */
  readonly maxBytes: number;
  /** Files kept, the current one included (1 = the current file only: a full file is deleted). */
  readonly files: number;
}

export interface RotationEvents {
  /** A full file was renamed PATH.1. */
  rotated(): void;
  /** The oldest file was deleted to stay within `files`: its bytes of dead letters are gone. */
  deleted(bytes: number): void;
  /** PATH is not a regular file (kind: 'character device', 'FIFO', ...): written as it is, never rotated. */
  unrotated(kind: string): void;
  /** PATH is no longer the file we were writing (moved, deleted or replaced): reopened, nothing renamed. */
  replaced(detail: string): void;
}

/** What the writer has open: a regular file at PATH (rotated), or anything else (written as it is). */
type Target = { readonly writer: NdjsonWriter; readonly regular: { dev: number; ino: number } | null; size: number };

export class RotatingNdjsonFile {
  readonly describe: string;
  readonly #path: string;
  readonly #s: RotationSettings;
  readonly #events: RotationEvents;
  /** null until the first write opens PATH (a file that is never needed is never created). */
  #target: Target | null = null;
  // One write at a time: a rotation (close, renames) must not interleave with another call's lines.
  readonly #turn = new Gate(1);

  constructor(path: string, settings: RotationSettings, events: RotationEvents) {
    this.#path = path;
    this.#s = settings;
    this.#events = events;
    this.describe = `file:${path} (rotated at ${settings.maxBytes} bytes, ${settings.files} kept)`;
  }

  async writeLines(objs: readonly unknown[]): Promise<void> {
    if (objs.length === 0) return;
    await this.#turn.acquire();
    try {
      let t = (this.#target ??= await this.#open());
      let chunk = '';
      let chunkBytes = 0;
      for (const o of objs) {
        const line = `${JSON.stringify(o)}\n`;
        const bytes = Buffer.byteLength(line);
        if (t.regular !== null && t.size + chunkBytes > 0 && t.size + chunkBytes + bytes > this.#s.maxBytes) {
          await t.writer.writeText(chunk);
          t.size += chunkBytes;
          t = await this.#rotate(t);
          chunk = '';
          chunkBytes = 0;
        }
        chunk += line;
        chunkBytes += bytes;
      }
      await t.writer.writeText(chunk);
      t.size += chunkBytes;
    } finally {
      this.#turn.release();
    }
  }

  /** Opens PATH as it is now: created when missing, appended to when a regular file, else written as it is. */
  async #open(): Promise<Target> {
    const before = await lstatOrNull(this.#path).catch((err: unknown) => this.#fail('looking at it', err));
    if (before?.isSocket() === true) {
      // open(2) refuses a socket (ENXIO): a Unix stream socket is connected to instead.
      this.#events.unrotated('socket');
      const writer = new NdjsonWriter(() => createConnection({ path: this.#path }), true, `file:${this.#path}`);
      return { writer, regular: null, size: 0 };
    }
    const fh = await open(this.#path, 'a').catch((err: unknown) => this.#fail('opening it', err));
    const st = await fh.stat();
    // A regular file at PATH itself (not through a link), the very one we opened: the only kind rotated.
    const regular = st.isFile() && (before === null || (before.isFile() && before.ino === st.ino && before.dev === st.dev));
    if (!regular) this.#events.unrotated(kindOf(before !== null && before.isSymbolicLink() ? before : st));
    const writer = new NdjsonWriter(createWriteStream(this.#path, { fd: fh }), true, `file:${this.#path}`);
    return { writer, regular: regular ? { dev: st.dev, ino: st.ino } : null, size: regular ? st.size : 0 };
  }

  async #rotate(t: Target): Promise<Target> {
    await t.writer.close();
    this.#target = null;
    try {
      const now = await lstatOrNull(this.#path);
      if (now === null || !now.isFile() || now.ino !== t.regular!.ino || now.dev !== t.regular!.dev) {
        this.#events.replaced(now === null ? 'it was moved away or deleted' : `it is now ${now.isFile() ? 'another regular file' : `a ${kindOf(now)}`}`);
      } else {
        await this.#shift(t.regular!);
        if (this.#s.files > 1) this.#events.rotated();
      }
    } catch (err) {
      if (err instanceof StreamstatsError) throw err;
      this.#fail('rotating', err);
    }
    this.#target = await this.#open();
    return this.#target;
  }

  /** PATH.n -> PATH.n+1, the oldest deleted first; every name looked at before it is renamed or deleted. */
  async #shift(ours: { dev: number; ino: number }): Promise<void> {
    const name = (n: number) => (n === 0 ? this.#path : `${this.#path}.${n}`);
    // A PATH.n that is not a regular file would be deleted, or replaced by a rename: refuse, before any change.
    for (let n = 1; n < this.#s.files; n++) {
      const st = await lstatOrNull(name(n));
      if (st !== null && !st.isFile()) {
        throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: not rotated: ${name(n)} is a ${kindOf(st)}, not a regular file (only regular files are renamed or deleted; move it away, or set DEAD_LETTER to another path)`);
      }
    }
    const oldest = name(this.#s.files - 1);
    const old = await lstatOrNull(oldest);
    if (old !== null && old.isFile() && (this.#s.files > 1 || (old.ino === ours.ino && old.dev === ours.dev))) {
      await rm(oldest);
      if (old.size > 0) this.#events.deleted(old.size);
    }
    for (let n = this.#s.files - 2; n >= 0; n--) {
      const st = await lstatOrNull(name(n));
      if (st === null) continue;
      if (!st.isFile()) throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: not rotated: ${name(n)} became a ${kindOf(st)} during the rotation; left as it is`);
      await rename(name(n), name(n + 1));
    }
  }

  #fail(what: string, err: unknown): never {
    throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: ${what}: ${(err as Error).message}`, { cause: err });
  }

  async close(): Promise<void> {
    await this.#turn.acquire();
    try {
      await this.#target?.writer.close();
    } finally {
      this.#turn.release();
    }
  }
}

async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function kindOf(st: Stats): string {
  if (st.isFile()) return 'regular file';
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  if (st.isSymbolicLink()) return 'symbolic link';
  if (st.isDirectory()) return 'directory';
  return 'special file';
}
