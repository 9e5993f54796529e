// The compression side of the codecs we produce (./compression.ts names them), for the record-batch
// encoder (./record-batch.ts) and kafkajs's codec table (./codecs.ts) alike: one compressor per codec,
// over the bytes of a batch's records. Pure computation (no I/O, no kafkajs), so a worker can run it.
//   gzip:   node:zlib
//   snappy: snappyjs, one raw block (what kafkajs-snappy writes; Java and librdkafka read it)
//   lz4:    lz4-napi, the LZ4 frame format Kafka uses
//   zstd:   node:zlib (Node >= 22.15)
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { compressFrame } from 'lz4-napi';

const require = createRequire(import.meta.url);
const snappyjs = require('snappyjs') as { compress(b: Buffer): Buffer };

type ZstdFn = (b: Buffer, cb: (err: Error | null, out: Buffer) => void) => void;
const nativeZstd = zlib as unknown as { zstdCompress?: ZstdFn };
const zstdCompress = nativeZstd.zstdCompress === undefined ? null : promisify(nativeZstd.zstdCompress);
const gzip = promisify(zlib.gzip);

/** Codec ids of a record batch's attributes (bits 0-2), as in ./compression.ts. */
export const CODEC = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

/** `data` compressed with the codec `codec` (1-4); a copy of it for 0. */
export async function compressRecords(codec: number, data: Buffer): Promise<Buffer> {
  switch (codec) {
    case CODEC.none:
      return Buffer.from(data);
    case CODEC.gzip:
      return gzip(data);
    case CODEC.snappy:
      return snappyjs.compress(data);
    case CODEC.lz4:
      return compressFrame(data);
    case CODEC.zstd:
      if (zstdCompress === null) throw new Error('zstd compression needs Node >= 22.15 (node:zlib); consuming zstd topics works on every version');
      return zstdCompress(data);
    default:
      throw new RangeError(`compression codec ${codec} is not one of 0 (none), 1 (gzip), 2 (snappy), 3 (lz4), 4 (zstd)`);
  }
}
