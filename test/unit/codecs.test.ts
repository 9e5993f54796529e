// The decompression bound of the Kafka codecs (issue 11, item 1), on record batches laid out as
// kafkajs hands them to a codec (a view into the fetch buffer, the v2 batch header just before it).
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import kafkajs from 'kafkajs';
import { compressFrame } from 'lz4-napi';
import t from 'tap';
import { DecompressionBoundError, REFUSED_HEADER, REFUSED_RECORD_ATTRIBUTE, registerCodecs } from '../../src/kafka/codecs.js';

const require = createRequire(import.meta.url);
const Decoder = require('kafkajs/src/protocol/decoder') as new (b: Buffer) => unknown;
const decodeRecord = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (d: unknown, ctx: object) => { attributes: number; offset: string; value: Buffer | null; headers: Record<string, Buffer> };
const { CompressionCodecs, CompressionTypes } = kafkajs;

/** A fetch-buffer view of `compressed` with a v2 header before it: `count` records, offsets 0..lastOffsetDelta. */
function inBatch(compressed: Buffer, count: number, lastOffsetDelta: number): Buffer {
  const head = Buffer.alloc(61);
  head.writeInt8(2, 16);
  head.writeInt32BE(lastOffsetDelta, 23);
  head.writeInt32BE(count, 57);
  return Buffer.concat([head, compressed]).subarray(61);
}

function records(buf: Buffer, count: number): ReturnType<typeof decodeRecord>[] {
  const d = new Decoder(buf) as { readVarIntBytes(): Buffer };
  const out = [];
  for (let i = 0; i < count; i++) out.push(decodeRecord(new Decoder(d.readVarIntBytes()), { firstOffset: '100', firstTimestamp: '0' }));
  return out;
}

const codec = (type: number) => (CompressionCodecs as unknown as Record<number, () => { decompress(b: Buffer): Promise<Buffer> }>)[type]!();

for (const [name, type, compress] of [
  ['gzip', CompressionTypes.GZIP, (b: Buffer) => zlib.gzipSync(b)],
  ['lz4', CompressionTypes.LZ4, (b: Buffer) => compressFrame(b)],
] as const) {
  t.test(`${name}: a batch over the bound becomes stand-in records that say why; one under it decodes`, async (t) => {
    registerCodecs(4096);
    t.teardown(() => registerCodecs());
    const small = Buffer.from('x'.repeat(1000));
    t.same(await codec(type).decompress(inBatch(await compress(small), 1, 0)), small, 'under the bound: the bytes');
    const bomb = await compress(Buffer.alloc(1 << 20));
    const out = await codec(type).decompress(inBatch(bomb, 3, 5));
    const recs = records(out, 3);
    t.same(recs.map((r) => r.attributes), [REFUSED_RECORD_ATTRIBUTE, REFUSED_RECORD_ATTRIBUTE, REFUSED_RECORD_ATTRIBUTE], 'three stand-ins, marked');
    t.same(recs.map((r) => r.offset), ['100', '101', '105'], 'covering the batch\'s offsets up to its last');
    t.same(recs.map((r) => r.value?.length), [0, 0, 0], 'with empty values');
    t.match(recs[0]!.headers[REFUSED_HEADER]!.toString(), new RegExp(`a ${name}-compressed record batch of ${bomb.length} bytes decompresses to more than 4096 bytes`));
    await t.rejects(codec(type).decompress(bomb), DecompressionBoundError, 'without a batch header before it: the error, not a guess');
  });
}

t.test('registerCodecs: the bound must be a positive integer', async (t) => {
  t.throws(() => registerCodecs(0), /maxBytes \(0\) must be an integer >= 1/);
});
