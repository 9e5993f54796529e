// Heap retained per open series, measured in-process: N series, one record each, decoded and merged
// into a WindowStore (one long window), then gc() and process.memoryUsage().heapUsed against the
// same point before any record. Then the rows are formatted once, as a close would, and the
// RowFormatter's per-series cache (kept across windows, bounded by MAX_SERIES) is measured the same way.
// PATH is pool (partials pass through structuredClone, as across the worker boundary, which hands the
// main thread flat strings) or in-thread (WORKER_THREADS=0: the partials are used as the decoder built them).
// Usage: node --expose-gc dist/bench/child/series-heap.js SHAPE SERIES PATH   -> one JSON line on stdout.
import { parseConfig } from '../../src/config/index.js';
import { BatchBuilder } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { decoderSettings } from '../../src/pipeline.js';
import { generatePoints } from '../../src/sources/generator.js';
import { RowFormatter } from '../../src/windows/row.js';
import { SeriesBudget, WindowStore } from '../../src/windows/store.js';

export const HEAP_SHAPES = ['ceilometer', 'monasca'] as const;
export type HeapShape = (typeof HEAP_SHAPES)[number];

export interface SeriesHeapResult {
  readonly shape: HeapShape;
  readonly series: number;
  readonly path: 'pool' | 'in-thread';
  readonly openSeries: number;
  readonly storeBytesPerSeries: number;
  readonly rowCacheBytesPerSeries: number;
  readonly seconds: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function heap(): number {
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

const START_MS = Date.UTC(2024, 0, 1);

function* messages(shape: HeapShape, n: number): Generator<string> {
  if (shape === 'monasca') {
    // Seed-000 shape with n/4 names x 4 hosts: one point per series, all in the first round.
    for (const p of generatePoints({ count: n, metrics: Math.ceil(n / 4), hosts: 4, intervalMs: 30_000, startMs: START_MS, seed: 1 })) yield p.json;
    return;
  }
  for (let i = 0; i < n; i++) {
    const id = `${(i * 2654435761) >>> 0}`.padStart(10, '0');
    yield `{"counter_name":"cpu_util","counter_type":"gauge","counter_unit":"%","counter_volume":${i % 100},"timestamp":"2024-01-01T00:00:00.${String(i % 1000).padStart(3, '0')}000",` +
      `"resource_id":"00000000-0000-0000-0000-${id}${String(i % 100).padStart(2, '0')}","project_id":"p","user_id":"u","source":"openstack"}`;
  }
}

function main(): void {
  const [shapeText, nText, pathText] = process.argv.slice(2);
  if (pathText !== 'pool' && pathText !== 'in-thread') throw new Error('path must be pool or in-thread');
  const viaPool = pathText === 'pool';
  if (!(HEAP_SHAPES as readonly string[]).includes(shapeText ?? '')) throw new Error(`shape must be one of ${HEAP_SHAPES.join(', ')}`);
  const shape = shapeText as HeapShape;
  const n = Number(nText);
  const windowMs = 86_400_000;
  // The engine's own mapping from configuration to decoder settings, so new settings get their defaults.
  const settings = decoderSettings(parseConfig({
    FORMAT: shape,
    GROUP_BY: shape === 'ceilometer' ? 'resource_id' : '',
    WINDOW_SECONDS: String(windowMs / 1000),
    MAX_FUTURE_SECONDS: '0',
  }));
  const decoder = new Decoder(settings);
  const store = new WindowStore({ windowMs, latenessMs: 5000, budget: new SeriesBudget(n * 2) });
  const rows = new RowFormatter(windowMs, n * 2);
  const t0 = performance.now();
  const before = heap();
  const builder = new BatchBuilder(1 << 20);
  const flush = (): void => {
    const b = builder.take();
    const ab = new ArrayBuffer(b.data.length);
    new Uint8Array(ab).set(b.data);
    // structuredClone is what the worker boundary does to the result (flat strings, fresh arrays).
    const r = decoder.decodeBatch(ab, b.offsets, Date.now());
    store.apply(viaPool ? structuredClone(r) : r);
  };
  for (const json of messages(shape, n)) {
    builder.pushString(json);
    if (builder.count >= 1000) flush();
  }
  if (builder.count > 0) flush();
  builder.take();
  const filled = heap();
  const openSeries = store.openSeries;
  const closed = store.takeAll();
  // Format in slices, as the emission of a window would, and drop the output; only the cache stays.
  for (let i = 0; i < closed.length; i += 10_000) rows.format(closed.slice(i, i + 10_000)).ndjson();
  closed.keys.length; // placeholder
  const cached = heap();
  const out: SeriesHeapResult = {
    shape,
    series: n,
    path: pathText,
    openSeries,
    storeBytesPerSeries: (filled - before) / n,
    rowCacheBytesPerSeries: (cached - before) / n,
    seconds: (performance.now() - t0) / 1000,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main();
