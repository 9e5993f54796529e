// Rows a worker formats reach the sink exactly as the main thread's would: the same bytes, the same
// identity keys, the same writes with the commit point on the last chunk, in chunked and whole
// emissions; and a worker that fails to format rows costs nothing but the main thread's time.
// A real pool with one worker thread and a real decoder; only the sink is ours.
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { BatchBuilder } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { Engine } from '../../src/engine/index.js';
import type { RowPlacementMode } from '../../src/engine/placement.js';
import { createMetrics } from '../../src/metrics/index.js';
import { DecodePool } from '../../src/pool/index.js';
import { WRITTEN_ALL, type Sink } from '../../src/sinks/types.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);

function batch(k: number, series: number, pos: number) {
  const b = new BatchBuilder(series * 200);
  for (let i = 0; i < series; i++) {
    // Some series with non-ASCII names: their row prefixes are the formatter's cached ones, not the key.
    const name = i % 5 === 0 ? `cpú.${i % 17}` : 'cpu';
    b.pushString(JSON.stringify(monascaRecord({ name, timestamp: T0 + k * W + 1000 + i, value: i * 1.5, dimensions: { h: `host-${i}` } })));
  }
  const { data, offsets } = b.take();
  return { lane: 0, data, offsets, positions: Array.from({ length: series }, (_, i) => String(pos + i)), startPosition: pos, endPosition: pos + series };
}

interface Written {
  readonly bytes: string;
  readonly keys: string[];
  readonly commit: number | null;
  /** streamstats_open_series as the write began: what is open or taken and not yet written. */
  readonly openSeries: number;
}

async function run(t: Test, placement: RowPlacementMode, whole: boolean, workerFile?: string): Promise<{ writes: Written[]; warnings: string[] }> {
  const s = settings({ windowMs: W });
  const pool = new DecodePool({ threads: 1, maxInFlight: 2, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 30_000, ...(workerFile === undefined ? {} : { workerFile }) });
  t.teardown(() => pool.close(1000));
  const writes: Written[] = [];
  const metrics = createMetrics(new Registry());
  const sink: Sink = {
    describe: 'recording',
    readsRowBytes: true,
    readsIdentityKeys: true,
    wholeEmissions: whole,
    write: async (b, commit) => {
      const text = b.ndjsonBytes!().toString('utf8');
      const n = text.split('\n').length - 1;
      const openSeries = (await metrics.openSeries.get()).values[0]?.value ?? 0;
      writes.push({ bytes: text, keys: Array.from({ length: n }, (_, i) => b.identityKey!(i)), commit: commit?.point.position ?? null, openSeries });
      return WRITTEN_ALL;
    },
    close: async () => {},
  };
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(String(JSON.parse(line).msg)) });
  const engine = new Engine({
    pool, sink, deadLetter: { describe: 'none', write: async () => {}, close: async () => {} }, metrics,
    logger, sourceName: 'test', windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1,
    maxSeries: 10_000, decoder: new Decoder(s), autoOpenLanes: false, emitChunk: { rows: 700, bytes: 1 << 30 }, rowPlacement: placement,
  });
  engine.open(0, { identity: { topic: 'in', partition: 0 } });
  await engine.submit(batch(0, 2500, 0));
  await engine.submit(batch(1, 40, 2500)); // closes window 0: 2,500 rows in chunks of 700
  await engine.submit(batch(3, 1, 2540)); // closes window 1: 40 rows, one chunk
  await engine.drain();
  return { writes, warnings };
}

for (const whole of [false, true]) {
  t.test(`${whole ? 'whole emissions' : 'chunked emissions'}: a worker's rows are the main thread's`, async (t) => {
    const main = await run(t, 'main', whole);
    const worker = await run(t, 'worker', whole);
    t.same(main.writes.map((w) => w.bytes.split('\n').length - 1), whole ? [2500, 40] : [700, 700, 700, 400, 40], 'rows per write');
    t.same(worker.writes.map((w) => w.commit), main.writes.map((w) => w.commit), 'the commit point with the same writes');
    t.equal(worker.writes.length, main.writes.length);
    for (let i = 0; i < main.writes.length; i++) {
      t.equal(worker.writes[i]!.bytes, main.writes[i]!.bytes, `write ${i}: the same NDJSON bytes`);
      t.same(worker.writes[i]!.keys, main.writes[i]!.keys, `write ${i}: the same identity keys`);
    }
    t.same(worker.warnings, []);
    // Rows taken out of their lane stay counted until written, while a worker formats them too: an
    // open_series of 0 (what tests and operators read as "every closed window written") never comes early.
    for (const r of [main, worker]) {
      let left = 2540;
      for (const w of r.writes) {
        t.ok(w.openSeries >= left, `open series as a write began (${w.openSeries}) count the ${left} rows not yet written`);
        left -= w.bytes.split('\n').length - 1;
      }
    }
  });
}

t.test('a worker that fails to format rows: the main thread formats them, said once', async (t) => {
  const main = await run(t, 'main', false);
  const failing = await run(t, 'worker', false, fileURLToPath(new URL('../fixtures/rows-failing-worker.js', import.meta.url)));
  t.same(failing.writes, main.writes, 'every row written, as the main thread formats them');
  t.equal(failing.warnings.filter((w) => /failed to format rows/.test(w)).length, 1, `one warning: ${failing.warnings.join(' | ')}`);
});
