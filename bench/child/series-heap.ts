// Heap retained per open series, measured in-process: N series, one record each, decoded and merged
// into a WindowStore (one long window), then the rows are formatted once, as a close would (the file
// sink's ndjsonBytes()), and the parts are dropped one by one, with gc() and heapUsed after each:
//   interner   the decoder's series table (in the pool it lives in the worker; in-thread, here);
//   dictionary the main thread's copy of the worker's keys (SeriesDictionaries; pool path only);
//   store      the WindowStore with every series open (what dropping it gives back: the keys
//              themselves belong to the interner or the dictionary, which outlive it);
//   row cache  the RowFormatter's per-series prefixes, kept across windows (bounded by MAX_SERIES);
//              none for a key in JSON form (src/core/series.ts), which is its own prefix.
// PATH is pool (decodeBatchCompact, structuredClone as across the worker boundary, then the main
// thread's dictionary) or in-thread (WORKER_THREADS=0: decodeBatch's results as they are).
// Usage: node --expose-gc dist/bench/child/series-heap.js SHAPE SERIES PATH   -> one JSON line on stdout.
import { parseConfig } from '../../src/config/index.js';
import { BatchBuilder } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { decoderSettings } from '../../src/pipeline.js';
import { SeriesDictionaries } from '../../src/pool/dictionary.js';
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
  /** The main thread's part (the 300-byte target): the open-series state and the row cache. */
  readonly storeBytesPerSeries: number;
  readonly rowCacheBytesPerSeries: number;
  /** The decoder's interner: the worker's heap in the pool path, the main thread's in-thread. */
  readonly internerBytesPerSeries: number;
  /** The main thread's copy of the worker's keys (pool path; 0 in-thread). */
  readonly dictionaryBytesPerSeries: number;
  /** Time to close the window (takeAll) with every series open. */
  readonly takeAllSeconds: number;
  readonly seconds: number;
}

const gc = (globalThis as { gc?: () => void }).gc;

function heap(): number {
  if (gc === undefined) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) gc();
  // Typed arrays' backing stores live outside the V8 heap (the store's cell pages among them).
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
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

interface Parts {
  decoder: Decoder | null;
  dict: SeriesDictionaries | null;
  store: WindowStore | null;
  rows: RowFormatter | null;
}

function fill(parts: Parts, shape: HeapShape, n: number): void {
  const builder = new BatchBuilder(1 << 20);
  const flush = (): void => {
    const b = builder.take();
    const ab = new ArrayBuffer(b.data.length);
    new Uint8Array(ab).set(b.data);
    // structuredClone is what the worker boundary does to the result (flat strings, fresh arrays).
    const r = parts.dict !== null ? parts.dict.expand(structuredClone(parts.decoder!.decodeBatchCompact(ab, b.offsets, Date.now()))) : parts.decoder!.decodeBatch(ab, b.offsets, Date.now());
    parts.store!.apply(r);
  };
  for (const json of messages(shape, n)) {
    builder.pushString(json);
    if (builder.count >= 1000) flush();
  }
  if (builder.count > 0) flush();
  builder.take();
}

/** Closes the window, drops the store, and formats every row once (in slices, as an emission would). */
function closeAndFormat(parts: Parts): { openSeries: number; takeAllSeconds: number } {
  const openSeries = parts.store!.openSeries;
  const t = performance.now();
  const closed = parts.store!.takeAll();
  const takeAllSeconds = (performance.now() - t) / 1000;
  parts.store = null;
  for (let i = 0; i < closed.length; i += 10_000) parts.rows!.format(closed.slice(i, i + 10_000)).ndjsonBytes!();
  return { openSeries, takeAllSeconds };
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
  // Held only here and used only inside the functions below, so that dropping one frees it (a
  // local of main could stay alive in a register of its frame).
  const parts: Parts = {
    decoder: new Decoder(settings),
    dict: viaPool ? new SeriesDictionaries(4) : null,
    store: new WindowStore({ windowMs, latenessMs: 5000, budget: new SeriesBudget(n * 2) }),
    rows: new RowFormatter(windowMs, n * 2),
  };
  const t0 = performance.now();
  const before = heap();
  fill(parts, shape, n);
  const filled = heap();
  const { openSeries, takeAllSeconds } = closeAndFormat(parts);
  const cached = heap();
  parts.rows = null;
  const bare = heap();
  parts.dict = null;
  const internerOnly = heap();
  parts.decoder = null;
  const out: SeriesHeapResult = {
    shape,
    series: n,
    path: pathText,
    openSeries,
    storeBytesPerSeries: (filled - bare) / n,
    rowCacheBytesPerSeries: (cached - bare) / n,
    internerBytesPerSeries: (internerOnly - before) / n,
    dictionaryBytesPerSeries: (bare - internerOnly) / n,
    takeAllSeconds,
    seconds: (performance.now() - t0) / 1000,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main();
