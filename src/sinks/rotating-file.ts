// A size-capped, rotating NDJSON file for dead letters. A replayed workload can reject every record
// (690,000 `late` records made a 638 MB file), so the file never grows past maxBytes: it is renamed
// PATH.1 (PATH.1 -> PATH.2, ...) and a new PATH begun; the oldest beyond `files` is deleted. At most
// maxBytes x files sit on disk, plus one line when a single line is larger than maxBytes (it gets a
// file of its own: a dead letter is never cut here).
import { rename, rm, stat } from 'node:fs/promises';
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
}

export class RotatingNdjsonFile {
  readonly describe: string;
  readonly #path: string;
  readonly #s: RotationSettings;
  readonly #events: RotationEvents;
  #writer: NdjsonWriter;
  /** Bytes in the current file; null until the first write looks at what an earlier run left. */
  #size: number | null = null;
  // One write at a time: a rotation (close, renames) must not interleave with another call's lines.
  readonly #turn = new Gate(1);

  constructor(path: string, settings: RotationSettings, events: RotationEvents) {
    this.#path = path;
    this.#s = settings;
    this.#events = events;
    this.#writer = NdjsonWriter.toFile(path);
    this.describe = `file:${path} (rotated at ${settings.maxBytes} bytes, ${settings.files} kept)`;
  }

  async writeLines(objs: readonly unknown[]): Promise<void> {
    if (objs.length === 0) return;
    await this.#turn.acquire();
    try {
      this.#size ??= await sizeOf(this.#path);
      let chunk = '';
      let chunkBytes = 0;
      for (const o of objs) {
        const line = `${JSON.stringify(o)}\n`;
        const bytes = Buffer.byteLength(line);
        if (this.#size + chunkBytes > 0 && this.#size + chunkBytes + bytes > this.#s.maxBytes) {
          await this.#writer.writeText(chunk);
          await this.#rotate();
          chunk = '';
          chunkBytes = 0;
        }
        chunk += line;
        chunkBytes += bytes;
      }
      await this.#writer.writeText(chunk);
      this.#size += chunkBytes;
    } finally {
      this.#turn.release();
    }
  }

  async #rotate(): Promise<void> {
    await this.#writer.close();
    try {
      await this.#shift();
    } catch (err) {
      throw new StreamstatsError('STREAMSTATS_SINK', `${this.describe}: rotating: ${(err as Error).message}`, { cause: err });
    }
    if (this.#s.files > 1) this.#events.rotated();
    this.#writer = NdjsonWriter.toFile(this.#path);
    this.#size = 0;
  }

  /** PATH.n -> PATH.n+1, the oldest deleted first. */
  async #shift(): Promise<void> {
    const name = (n: number) => (n === 0 ? this.#path : `${this.#path}.${n}`);
    const oldest = name(this.#s.files - 1);
    const gone = await sizeOf(oldest);
    await rm(oldest, { force: true });
    if (gone > 0) this.#events.deleted(gone);
    for (let n = this.#s.files - 2; n >= 0; n--) {
      try {
        await rename(name(n), name(n + 1));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
  }

  async close(): Promise<void> {
    await this.#turn.acquire();
    try {
      await this.#writer.close();
    } finally {
      this.#turn.release();
    }
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
}
