// One measured run of one JSON decode strategy over seed-000 Monasca messages packed as the engine
// packs them (bytes back to back + offsets, BATCH_SIZE messages per batch).
// Usage: node dist/bench/child/decode.js VARIANT COUNT BATCH_SIZE   -> one JSON line on stdout.
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import streamJson from 'stream-json';
import StreamValues from 'stream-json/streamers/StreamValues.js';
import { BatchBuilder } from '../../src/core/batch.js';
import { parseConfig } from '../../src/config/index.js';
import { Decoder, parseMessage } from '../../src/core/decode.js';
import { decoderSettings } from '../../src/pipeline.js';
import { generatePoints } from '../../src/sources/generator.js';

export const DECODE_VARIANTS = ['per-message', 'batch-array', 'stream-json', 'full-decoder'] as const;
export type DecodeVariant = (typeof DECODE_VARIANTS)[number];

export interface DecodeChildResult {
  readonly variant: DecodeVariant;
  readonly messages: number;
  readonly parsed: number;
  readonly seconds: number;
  readonly recordsPerSecond: number;
  readonly bytes: number;
}

const MAX_MESSAGE_BYTES = 1 << 20;

function prepare(count: number, batchSize: number): Array<{ data: Buffer; offsets: Uint32Array }> {
  const builder = new BatchBuilder(1 << 20);
  const out: Array<{ data: Buffer; offsets: Uint32Array }> = [];
  for (const p of generatePoints({ count, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: Date.UTC(2020, 1, 11, 12, 42, 13), seed: 1 })) {
    builder.pushString(p.json);
    if (builder.count >= batchSize) out.push(builder.take());
  }
  if (builder.count > 0) out.push(builder.take());
  return out;
}

/** What src/core/decode.ts does today: a UTF-8 check and JSON.parse per message. */
function perMessage(b: { data: Buffer; offsets: Uint32Array }): number {
  let n = 0;
  for (let i = 0; i + 1 < b.offsets.length; i++) {
    const r = parseMessage(b.data, b.offsets[i]!, b.offsets[i + 1]!, MAX_MESSAGE_BYTES);
    if (r.ok && r.value !== null) n++;
  }
  return n;
}

/** One JSON.parse per batch: the messages joined into `[m0,m1,...]` (one extra copy to insert commas). */
function batchArray(b: { data: Buffer; offsets: Uint32Array }): number {
  const n = b.offsets.length - 1;
  const joined = Buffer.allocUnsafe(b.data.length + n + 1);
  let w = 0;
  joined[w++] = 0x5b; // [
  for (let i = 0; i < n; i++) {
    if (i > 0) joined[w++] = 0x2c; // ,
    w += b.data.copy(joined, w, b.offsets[i]!, b.offsets[i + 1]!);
  }
  joined[w++] = 0x5d; // ]
  if (!isUtf8(joined.subarray(0, w))) throw new Error('not UTF-8');
  const arr = JSON.parse(joined.toString('utf8', 0, w)) as unknown[];
  return arr.length;
}

/** stream-json: a streaming tokenizer plus an assembler, fed every message of every batch. */
async function streamJsonAll(batches: ReadonlyArray<{ data: Buffer; offsets: Uint32Array }>): Promise<number> {
  const parser = streamJson.parser({ jsonStreaming: true });
  const values = new StreamValues();
  let n = 0;
  values.on('data', () => n++);
  parser.pipe(values);
  const finished = once(values, 'end');
  const nl = Buffer.from('\n');
  for (const b of batches) {
    for (let i = 0; i + 1 < b.offsets.length; i++) {
      const ok = parser.write(b.data.subarray(b.offsets[i]!, b.offsets[i + 1]!));
      parser.write(nl);
      if (!ok) await once(parser, 'drain');
    }
  }
  parser.end();
  await finished;
  return n;
}

async function main(): Promise<void> {
  const [variant, countText, batchText] = process.argv.slice(2);
  if (!(DECODE_VARIANTS as readonly string[]).includes(variant ?? '')) throw new Error(`variant must be one of ${DECODE_VARIANTS.join(', ')}`);
  const v = variant as DecodeVariant;
  const count = Number(countText);
  const batchSize = Number(batchText);
  const batches = prepare(count, batchSize);
  const bytes = batches.reduce((a, b) => a + b.data.length, 0);
  // The engine's own mapping from configuration to decoder settings, so new settings get their defaults.
  const decoder = new Decoder(decoderSettings(parseConfig({ FORMAT: 'monasca', MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES), MAX_FUTURE_SECONDS: '0' })));
  // decodeBatch takes ownership of an ArrayBuffer, as a worker does after the transfer: copy outside the timing.
  const owned = v === 'full-decoder' ? batches.map((b) => { const ab = new ArrayBuffer(b.data.length); new Uint8Array(ab).set(b.data); return ab; }) : [];
  const t0 = performance.now();
  let parsed = 0;
  if (v === 'stream-json') {
    parsed = await streamJsonAll(batches);
  } else {
    batches.forEach((b, i) => {
      if (v === 'per-message') parsed += perMessage(b);
      else if (v === 'batch-array') parsed += batchArray(b);
      else parsed += decoder.decodeBatch(owned[i]!, b.offsets, Date.now()).ok;
    });
  }
  const seconds = (performance.now() - t0) / 1000;
  if (parsed !== count) throw new Error(`${v}: parsed ${parsed} of ${count}`);
  const out: DecodeChildResult = { variant: v, messages: count, parsed, seconds, recordsPerSecond: count / seconds, bytes };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

await main();
