// A replayed workload whose event times lie behind the watermark was all `late`, no
// rows, and not one line in the log. Now the engine warns, with counts and the watermark, one line per
// partition per interval, carrying the count of what it held back.
import { pino } from 'pino';
import t from 'tap';
import { LateWarner, type LateSample } from '../../src/engine/late.js';
import { monascaRecord } from '../fixtures/gen.js';
import { runPipeline } from '../fixtures/harness.js';

type Line = Record<string, unknown> & { msg: string; heldBack: { batches: number; late: number; records: number } };

function capture(): { lines: Line[]; logger: pino.Logger } {
  const lines: Line[] = [];
  return { lines, logger: pino({ level: 'warn' }, { write: (s: string) => lines.push(JSON.parse(s) as Line) }) };
}

const sample = (over: Partial<LateSample>): LateSample => ({ partition: 0, identity: undefined, accepted: 0, late: 10, watermarkMs: Date.UTC(2026, 0, 1), oldestWindowMs: Date.UTC(2020, 1, 11), ...over });

t.test('most of a batch late: one line per interval per partition, with the held-back counts', async (t) => {
  const { lines, logger } = capture();
  let now = 1_000_000;
  const w = new LateWarner(logger, 60_000, () => now);
  w.observe(sample({ accepted: 5, late: 5 }));
  w.observe(sample({ accepted: 10, late: 0 }));
  t.equal(lines.length, 0, 'half late, or none, is not "most"');
  w.observe(sample({ accepted: 4, late: 6 }));
  t.equal(lines.length, 1);
  t.match(lines[0], { level: 40, partition: 0, late: 6, records: 10, watermark: '2026-01-01T00:00:00.000Z', oldestLateWindow: '2020-02-11T00:00:00.000Z', heldBack: { batches: 0, late: 0, records: 0 } });
  t.match(lines[0]!.msg, /late/);
  for (let i = 0; i < 5; i++) {
    now += 10_000;
    w.observe(sample({ late: 100 }));
  }
  w.observe(sample({ partition: 1, identity: { topic: 'metrics', partition: 3 }, late: 7, watermarkMs: -Infinity }));
  t.equal(lines.length, 2, 'partition 0 held back within its interval; partition 1 has its own');
  t.match(lines[1], { partition: 1, topic: 'metrics', kafka_partition: 3, late: 7, watermark: 'none' });
  now += 10_001;
  w.observe(sample({ late: 1 }));
  t.equal(lines.length, 3);
  t.match(lines[2], { partition: 0, late: 1, heldBack: { batches: 5, late: 500, records: 500 } });
});

t.test('a replay behind the watermark says so in the log of a real run', async (t) => {
  const now = Date.now();
  const fresh = Array.from({ length: 100 }, (_, i) => JSON.stringify(monascaRecord({ name: 'cpu', value: i, timestamp: now - 1000 + i })));
  // The demo's 2020 timeline again: every record behind a watermark near now.
  const old = Array.from({ length: 3000 }, (_, i) => JSON.stringify(monascaRecord({ name: 'cpu', value: i, timestamp: Date.UTC(2020, 1, 11, 12, 42, 13) + i * 1000 })));
  const { lines, logger } = capture();
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', WORKER_THREADS: '0', BATCH_SIZE: '100', WATERMARK_CONFIRM_RECORDS: '1' }, { files: { 'in.ndjson': `${[...fresh, ...old].join('\n')}\n` }, logger });
  t.equal(run.summary.rejected.late, 3000, 'every old record is late');
  const warned = lines.filter((l) => /most records of a batch are late/.test(l.msg));
  t.equal(warned.length, 1, 'one line for 30 late batches');
  const w = warned[0]!;
  t.equal(w['late'], 100);
  t.equal(w['records'], 100);
  t.ok(Date.parse(String(w['watermark'])) >= now - 10_000, `watermark ${String(w['watermark'])} near now`);
  t.equal(w['oldestLateWindow'], '2020-02-11T12:42:00.000Z');
  t.same(w.heldBack, { batches: 0, late: 0, records: 0 }, 'the first line of the run; the next 29 batches are held back within the interval');
});

t.test('a dropped partition is forgotten: nothing of it is held (ids are never reused)', async (t) => {
  const { lines, logger } = capture();
  const now = 1_000_000;
  const w = new LateWarner(logger, 60_000, () => now);
  w.observe(sample({ late: 10 }));
  w.observe(sample({ late: 10 }));
  t.equal(lines.length, 1, 'the second is held back');
  w.forget(0);
  w.observe(sample({ late: 3 }));
  t.equal(lines.length, 2, 'after forget, the partition starts afresh');
  t.match(lines[1], { partition: 0, late: 3, heldBack: { batches: 0, late: 0, records: 0 } });
});
