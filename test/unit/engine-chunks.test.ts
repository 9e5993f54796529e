// A window close over many series reaches the sink in bounded chunks, the event loop
// runs between them, and only the last chunk carries the commit point (an exactly-once sink stores
// rows and point together: a crash between chunks replays the window from the previous point). A
// sink that needs one write per emission (wholeEmissions: exactly-once Kafka) gets one write.
// A real in-thread pool and a real decoder; only the sink is ours.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import { BatchBuilder } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { Engine } from '../../src/engine/index.js';
import { createMetrics } from '../../src/metrics/index.js';
import { DecodePool } from '../../src/pool/index.js';
import { WRITTEN_ALL, type Sink, type SinkCommit } from '../../src/sinks/types.js';
import { monascaRecord, settings } from '../fixtures/gen.js';

const W = 60_000;
const T0 = Date.UTC(2020, 1, 11, 12, 0, 0);

/** `series` messages of distinct series in window k, at source positions from `pos`. */
function batch(k: number, series: number, pos: number) {
  const b = new BatchBuilder(series * 200);
  for (let i = 0; i < series; i++) b.pushString(JSON.stringify(monascaRecord({ name: 'cpu', timestamp: T0 + k * W + 1000, value: i, dimensions: { h: `host-${i}` } })));
  const { data, offsets } = b.take();
  return { lane: 0, data, offsets, positions: Array.from({ length: series }, (_, i) => String(pos + i)), startPosition: pos, endPosition: pos + series };
}

for (const whole of [false, true]) {
  t.test(whole ? 'wholeEmissions: one write per emission, with the commit point' : '2,500 series closing at once: 3 writes of at most 1,000 rows, the point with the last only', async (t) => {
    const s = settings({ windowMs: W });
    const pool = new DecodePool({ threads: 0, maxInFlight: 1, settings: s, workerMaxMemoryMb: 256, taskTimeoutMs: 10_000 });
    t.teardown(() => pool.close(1000));
    const writes: Array<{ rows: number; commit: SinkCommit | undefined; loopRanSincePrevious: boolean }> = [];
    let loopRan = true;
    const sink: Sink = {
      describe: 'recording',
      wholeEmissions: whole,
      write: async (b, commit) => {
        writes.push({ rows: b.rows.length, commit, loopRanSincePrevious: loopRan });
        loopRan = false;
        setImmediate(() => { loopRan = true; });
        return WRITTEN_ALL;
      },
      close: async () => {},
    };
    const engine = new Engine({
      pool, sink, deadLetter: { describe: 'none', write: async () => {}, close: async () => {} }, metrics: createMetrics(new Registry()),
      logger: pino({ level: 'silent' }), sourceName: 'test', windowSeconds: W / 1000, allowedLatenessSeconds: 0, watermarkConfirmRecords: 1,
      maxSeries: 10_000, decoder: new Decoder(s), autoOpenLanes: false, emitChunk: { rows: 1000, bytes: 1 << 30 },
    });
    engine.open(0, { identity: { topic: 'in', partition: 0 } });
    await engine.submit(batch(0, 2500, 0));
    await engine.submit(batch(2, 1, 2500)); // closes window 0
    await engine.drain();
    t.same(writes.map((w) => w.rows), whole ? [2500] : [1000, 1000, 500], 'rows per write');
    t.same(writes.map((w) => w.commit !== undefined), whole ? [true] : [false, false, true], 'the commit point only with the last');
    t.equal(writes.at(-1)!.commit!.point.position, 2500, 'naming the position after window 0 (window 2 still open)');
    if (!whole) t.ok(writes.every((w) => w.loopRanSincePrevious), 'the event loop ran between two chunks');
    t.equal(engine.status(0)?.commitPoint?.position, 2500, 'and it became the lane\'s commit point once written');
  });
}
