// The decompression bound of the Kafka codecs, on record batches laid out as
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

const snappyjs = require('snappyjs') as { compress(b: Buffer): Buffer };
/** Xerial framing as Java producers write it: magic, version 1, compatible 1, then [length, block]... */
function xerial(...blocks: Buffer[]): Buffer {
  const head = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
  return Buffer.concat([head, ...blocks.flatMap((b) => [Buffer.from([b.length >>> 24, (b.length >>> 16) & 0xff, (b.length >>> 8) & 0xff, b.length & 0xff]), b])]);
}

for (const [label, compress] of [
  ['raw', (b: Buffer) => snappyjs.compress(b)],
  ['xerial-framed', (b: Buffer) => xerial(snappyjs.compress(b.subarray(0, b.length >> 1)), snappyjs.compress(b.subarray(b.length >> 1)))],
] as const) {
  t.test(`snappy (${label}): a batch over the bound becomes stand-in records that say why; one under it decodes`, async (t) => {
    registerCodecs(4096);
    t.teardown(() => registerCodecs());
    const small = Buffer.from(Array.from({ length: 1000 }, (_, i) => `${i % 10}`).join(''));
    t.same(await codec(CompressionTypes.Snappy).decompress(inBatch(compress(small), 1, 0)), small, 'under the bound: the bytes');
    const bomb = compress(Buffer.alloc(1 << 20));
    const recs = records(await codec(CompressionTypes.Snappy).decompress(inBatch(bomb, 2, 1)), 2);
    t.same(recs.map((r) => r.attributes), [REFUSED_RECORD_ATTRIBUTE, REFUSED_RECORD_ATTRIBUTE], 'two stand-ins, marked');
    t.match(recs[0]!.headers[REFUSED_HEADER]!.toString(), new RegExp(`a snappy-compressed record batch of ${bomb.length} bytes decompresses to more than 4096 bytes`));
    await t.rejects(codec(CompressionTypes.Snappy).decompress(bomb), DecompressionBoundError, 'without a batch header before it: the error');
  });
}

t.test('snappy: a 5-byte block declaring 4 GiB is refused from its header, before anything is allocated', async (t) => {
  registerCodecs();
  const before = process.memoryUsage().arrayBuffers;
  await t.rejects(codec(CompressionTypes.Snappy).decompress(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f])), DecompressionBoundError);
  t.ok(process.memoryUsage().arrayBuffers - before < 1 << 20, 'no 4 GiB buffer was allocated');
  await t.rejects(codec(CompressionTypes.Snappy).decompress(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), /length header is malformed/);
});

t.test('registerCodecs: the bound must be a positive integer', async (t) => {
  t.throws(() => registerCodecs(0), /maxBytes \(0\) must be an integer >= 1/);
});
