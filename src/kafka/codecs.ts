// kafkajs decodes only gzip by itself. Producers in the field (librdkafka above all) also use snappy,
// lz4 and zstd, so the consumer registers a decoder for each:
//   snappy: kafkajs-snappy (pure JS; understands the xerial framing Java producers write)
//   lz4:    lz4-napi (prebuilt binaries shipped in npm packages; Kafka uses the LZ4 frame format)
//   zstd:   node:zlib where it has zstd (Node >= 22.15), else fzstd (pure JS, decompression only).
import { createRequire } from 'node:module';
import kafkajs from 'kafkajs';
import { decompressFrame, compressFrame } from 'lz4-napi';
import { decompress as zstdDecompress } from 'fzstd';
import zlib from 'node:zlib';
import { promisify } from 'node:util';

// kafkajs is CommonJS: its named exports are read off the default export.
const { CompressionCodecs, CompressionTypes } = kafkajs;
const require = createRequire(import.meta.url);
// CommonJS-only package without types.
const snappyCodec = require('kafkajs-snappy') as () => { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> };

interface Codec {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

const lz4: () => Codec = () => ({
  compress: async (encoder) => compressFrame(encoder.buffer),
  decompress: async (buffer) => decompressFrame(buffer),
});

type ZstdFn = (b: Buffer, cb: (err: Error | null, out: Buffer) => void) => void;
const nativeZstd = zlib as unknown as { zstdCompress?: ZstdFn; zstdDecompress?: ZstdFn };


const zstd: () => Codec = () => {
  const compress = nativeZstd.zstdCompress === undefined ? null : promisify(nativeZstd.zstdCompress);
  return {
    compress: (encoder) => compress === null
      ? Promise.reject(new Error('zstd compression needs Node >= 22.15 (node:zlib); consuming zstd topics works on every version'))
      : compress(encoder.buffer),
    decompress: async (buffer) => {
      const out = zstdDecompress(buffer);
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    },
  };
};

let registered = false;

/** Idempotent: registers the codecs in this process (consumers decompress in the fetch path). */
export function registerCodecs(): void {
  if (registered) return;
  registered = true;
  const codecs = CompressionCodecs as unknown as Record<number, () => Codec>;
  codecs[CompressionTypes.Snappy] = snappyCodec;
  codecs[CompressionTypes.LZ4] = lz4;
  codecs[CompressionTypes.ZSTD] = zstd;
}
