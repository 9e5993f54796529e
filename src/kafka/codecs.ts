// kafkajs decodes only gzip by itself. Producers in the field (librdkafka above all) also use snappy,
// lz4 and zstd, so the consumer registers a decoder for each:
//   snappy: snappyjs (pure JS), with the xerial framing Java producers write unwrapped here
//   lz4:    lz4-napi (prebuilt binaries shipped in npm packages; Kafka uses the LZ4 frame format)
//   zstd:   node:zlib where it has zstd (Node >= 22.15), else fzstd (pure JS, decompression only).
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { decompressFrame } from 'lz4-napi';
import { Decompress as ZstdStream } from 'fzstd';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import { CODEC, compressRecords } from './compressors.js';

// kafkajs is CommonJS: its named exports are read off the default export.
const { CompressionCodecs, CompressionTypes } = kafkajs;
const require = createRequire(import.meta.url);
// Compression is ./compressors.ts's (the record-batch encoder's too); decompression is bounded here.
const snappyjs = require('snappyjs') as { uncompress(b: Buffer): Buffer };

interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/** Defaults of the codec bound (the Kafka source passes KAFKA_INTAKE_MAX_BYTES). */
export const CODEC_DEFAULTS = {
  /** Bytes one compressed record batch may decompress to; more is refused before it is allocated. */
  maxDecompressedBytes: 32 * 1024 * 1024,
} as const;

let maxDecompressedBytes: number = CODEC_DEFAULTS.maxDecompressedBytes;

/** A compressed record batch whose output would exceed the bound. */
export class DecompressionBoundError extends Error {
  constructor(readonly codec: string, readonly compressedBytes: number, readonly bound: number) {
    super(`a ${codec}-compressed record batch of ${compressedBytes} bytes decompresses to more than ${bound} bytes (KAFKA_INTAKE_MAX_BYTES): refused`);
    this.name = 'DecompressionBoundError';
  }
}

/** Record attribute of the stand-in records of a refused batch (Kafka leaves record attributes unused). */
export const REFUSED_RECORD_ATTRIBUTE = 0x5a;
/** Header on the first stand-in record: why the batch was refused. */
export const REFUSED_HEADER = 'streamstats-refused';

function zigzag(n: number, out: number[]): void {
  let v = n >= 0 ? n * 2 : -n * 2 - 1;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

/**
 * kafkajs decodes as many records from the decompressed bytes as the batch header says. A refused
 * batch becomes that many stand-in records (empty value, REFUSED_RECORD_ATTRIBUTE, the reason in a
 * header of the first), which the source dead-letters as too_large: the offsets are accounted for and
 * consumption goes on. The header sits just before the compressed bytes in kafkajs's fetch buffer
 * (a view, not a copy): records count at -4, lastOffsetDelta at -38, magic at -45. Null when the
 * bytes there are not a v2 batch header, or the stand-ins would be too many to hold.
 */
function standIns(compressed: Buffer, err: DecompressionBoundError): Buffer | null {
  const o = compressed.byteOffset;
  if (o < 61) return null;
  const head = Buffer.from(compressed.buffer, o - 61, 61);
  const count = head.readInt32BE(57);
  const lastOffsetDelta = head.readInt32BE(23);
  if (head.readInt8(16) !== 2 || count < 1 || count > lastOffsetDelta + 1 || count > err.bound / 16) return null;
  const out: number[] = [];
  const reason = Buffer.from(err.message);
  for (let i = 0; i < count; i++) {
    const rec: number[] = [REFUSED_RECORD_ATTRIBUTE];
    zigzag(0, rec); // timestamp delta
    zigzag(i === count - 1 ? lastOffsetDelta : i, rec);
    zigzag(-1, rec); // key: null
    zigzag(0, rec); // value: empty
    if (i === 0) {
      zigzag(1, rec);
      zigzag(REFUSED_HEADER.length, rec);
      for (const c of Buffer.from(REFUSED_HEADER)) rec.push(c);
      zigzag(reason.length, rec);
      for (const c of reason) rec.push(c);
    } else {
      zigzag(0, rec);
    }
    zigzag(rec.length, out);
    for (const b of rec) out.push(b);
  }
  return Buffer.from(out);
}

/** Decompresses with the bound; a batch over it becomes stand-in records (or, failing that, the error). */
function bounded(codec: string, decompress: (b: Buffer, max: number) => Promise<Buffer>): (b: Buffer) => Promise<Buffer> {
  return async (buffer) => {
    const max = maxDecompressedBytes;
    try {
      return await decompress(buffer, max);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (!(err instanceof DecompressionBoundError) && code !== 'ERR_BUFFER_TOO_LARGE') throw err;
      const e = err instanceof DecompressionBoundError ? err : new DecompressionBoundError(codec, buffer.length, max);
      const s = standIns(buffer, e);
      if (s === null) throw e;
      return s;
    }
  };
}

const gunzip = promisify(zlib.unzip);

const gzip: () => Codec = () => ({
  compress: (encoder) => compressRecords(CODEC.gzip, encoder.buffer),
  decompress: bounded('gzip', (b, max) => gunzip(b, { maxOutputLength: max })),
});

/** LZ4 frame: the content size, when the frame declares it (FLG bit 3), is checked before decoding. */
function lz4DeclaredSize(b: Buffer): number | null {
  if (b.length < 15 || b.readUInt32LE(0) !== 0x184d2204) return null;
  if ((b[4]! & 0x08) === 0) return null;
  return Number(b.readBigUInt64LE(6));
}

const lz4: () => Codec = () => ({
  compress: (encoder) => compressRecords(CODEC.lz4, encoder.buffer),
  decompress: bounded('lz4', async (b, max) => {
    // Without a declared size the output is at most 255 times the input (LZ4's largest ratio), and
    // the input at most one fetch: checked after decoding.
    const declared = lz4DeclaredSize(b);
    if (declared !== null && declared > max) throw new DecompressionBoundError('lz4', b.length, max);
    const out = await decompressFrame(b);
    if (out.length > max) throw new DecompressionBoundError('lz4', b.length, max);
    return out;
  }),
});

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);

/** The blocks of a snappy payload: xerial framing (Java producers: magic, versions, then length-prefixed blocks) or one raw block. */
export function snappyBlocks(b: Buffer): Buffer[] {
  if (b.length < 16 || !b.subarray(0, 8).equals(XERIAL_MAGIC)) return [b];
  const out: Buffer[] = [];
  for (let o = 16; o + 4 <= b.length;) {
    const size = b.readUInt32BE(o);
    o += 4;
    out.push(b.subarray(o, o + size));
    o += size;
  }
  return out;
}

/** A raw snappy block starts with its uncompressed length (a varint of at most 32 bits); -1 when malformed. */
export function snappyDeclaredSize(block: Buffer): number {
  let n = 0;
  for (let i = 0; i < 5 && i < block.length; i++) {
    const c = block[i]!;
    n += (c & 0x7f) * 2 ** (7 * i);
    if (c < 0x80) return n <= 0xffffffff ? n : -1;
  }
  return -1;
}

const snappy: () => Codec = () => {
  return {
    compress: (encoder) => compressRecords(CODEC.snappy, encoder.buffer),
    // snappyjs allocates the declared length up front and never writes past it: the declared lengths
    // of all blocks are checked against the bound before any is decompressed.
    decompress: bounded('snappy', async (buffer, max) => {
      const blocks = snappyBlocks(buffer);
      let total = 0;
      for (const block of blocks) {
        const n = snappyDeclaredSize(block);
        if (n < 0) throw new Error('invalid snappy block: its length header is malformed');
        total += n;
        if (total > max) throw new DecompressionBoundError('snappy', buffer.length, max);
      }
      return blocks.length === 1 ? snappyjs.uncompress(blocks[0]!) : Buffer.concat(blocks.map((b) => snappyjs.uncompress(b)), total);
    }),
  };
};

const zstd: () => Codec = () => {
  return {
    compress: (encoder) => compressRecords(CODEC.zstd, encoder.buffer),
    // Streamed block by block, stopped as soon as the output passes the bound.
    decompress: bounded('zstd', async (buffer, max) => {
      const parts: Uint8Array[] = [];
      let n = 0;
      const d = new ZstdStream((chunk) => {
        n += chunk.length;
        if (n > max) throw new DecompressionBoundError('zstd', buffer.length, max);
        parts.push(chunk);
      });
      d.push(buffer, true);
      return Buffer.concat(parts, n);
    }),
  };
};

let registered = false;

/**
 * Idempotent: registers the codecs in this process (consumers decompress in the fetch path).
 * maxBytes bounds what one compressed record batch may decompress to (the last call's value wins).
 */
export function registerCodecs(maxBytes: number = CODEC_DEFAULTS.maxDecompressedBytes): void {
  if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 1)) throw new RangeError(`maxBytes (${maxBytes}) must be an integer >= 1`);
  maxDecompressedBytes = maxBytes;
  if (registered) return;
  registered = true;
  const codecs = CompressionCodecs as unknown as Record<number, () => Codec>;
  codecs[CompressionTypes.GZIP] = gzip;
  codecs[CompressionTypes.Snappy] = snappy;
  codecs[CompressionTypes.LZ4] = lz4;
  codecs[CompressionTypes.ZSTD] = zstd;
}
