// Rows formatted in a worker (src/windows/row-task.ts) must be what the main thread's formatter
// writes, byte for byte: NDJSON, each line's end, each row's JSON and identity key, and the Kafka
// records a sink cuts from them. Checked in-thread through a structured clone (what crosses the
// thread boundary), and through a real pool's worker.
import { MessageChannel } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { KeyArena } from '../../src/core/key-arena.js';
import { seriesKey } from '../../src/core/series.js';
import type { RowsWire } from '../../src/core/messages.js';
import { DecodePool } from '../../src/pool/index.js';
import { RECORD_OVERHEAD_BYTES } from '../../src/kafka/requests.js';
import { encodeRows } from '../../src/sinks/kafka/messages.js';
import { ClosedCells, STAT } from '../../src/windows/cells.js';
import { RowFormatter } from '../../src/windows/row.js';
import { FormattedElsewhere, RowWorkshop, rowsTask, rowsWire, type KeyScratch } from '../../src/windows/row-task.js';
import { Rng, settings } from '../fixtures/gen.js';

const SETTINGS = { windowMs: 60_000, maxEntries: 50 };

function randomCells(rng: Rng, n: number): ClosedCells {
  const keys: string[] = [];
  const starts = new Float64Array(n);
  const stats = new Float64Array(n * STAT.STRIDE);
  for (let i = 0; i < n; i++) {
    const kind = rng.int(0, 3);
    // ASCII keys are in JSON form (their own row prefix); non-ASCII ones and a dimension named like an
    // array index are not, and take the formatter's cached prefixes (fewer entries than series here).
    const name = kind === 1 ? `métrica.${rng.int(0, 80)}😀` : `m${rng.int(0, 80)}`;
    const dims: Array<[string, string]> = kind === 2 ? [['0', `v${rng.int(0, 9)}`]] : [['host', `h${rng.int(0, 9)}`], ['zone', 'z"\\\n']];
    keys.push(seriesKey(name, rng.next() < 0.5 ? null : 'ms', dims, null));
    starts[i] = 1_581_425_000_000 + 60_000 * Math.floor((i * 3) / n);
    const o = i * STAT.STRIDE;
    const ts = starts[i]! + rng.int(0, 59_999);
    stats[o + STAT.COUNT] = rng.int(1, 1e6);
    stats[o + STAT.MEAN] = (rng.next() - 0.5) * 10 ** rng.int(-8, 18);
    stats[o + STAT.M2] = rng.next() * 1e6;
    stats[o + STAT.MIN] = -rng.next() * 1e3;
    stats[o + STAT.MAX] = rng.next() * 1e300;
    stats[o + STAT.SUM] = rng.int(-1e9, 1e9) / 7;
    stats[o + STAT.TS_MIN] = ts;
    stats[o + STAT.TS_MAX] = ts + rng.int(0, 400);
  }
  return new ClosedCells(keys, starts, stats, null);
}

/** What arrives on the other side of a thread boundary (structured clone), without a worker. */
async function crossed<T>(value: T, transfer: ArrayBuffer[] = []): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  const got = new Promise<T>((resolve) => port2.once('message', resolve));
  port1.postMessage(value, transfer);
  const v = await got;
  port1.close();
  return v;
}

t.test('in-thread, through a structured clone: what the main thread writes, byte for byte', async (t) => {
  const rng = new Rng(5);
  const workshop = new RowWorkshop();
  // Half the rounds name their keys in a shared arena, small enough to start new generations on the way.
  const arena = new KeyArena(64 * 1024, 400);
  for (let round = 0; round < 25; round++) {
    const cells = randomCells(rng, rng.int(1, 400));
    const where = round % 3 === 0 ? undefined : { topic: round % 2 === 0 ? 'tópico' : 'in', partition: round };
    const main = new RowFormatter(SETTINGS.windowMs, SETTINGS.maxEntries).format(cells, where);
    const { task, transfer } = rowsTask(cells, SETTINGS, where, true, round % 2 === 1 ? arena : undefined);
    t.equal(Array.isArray(task.keys), round % 2 === 0, `round ${round}: keys ${round % 2 === 0 ? 'as strings' : 'named in the arena'}`);
    const wire = await crossed(workshop.format(await crossed(task, transfer)));
    const there = new FormattedElsewhere(wire, where, () => main);
    const text = main.ndjson();
    t.equal(there.ndjsonBytes().toString('utf8'), text, `round ${round}: NDJSON bytes`);
    t.equal(there.ndjson(), text, `round ${round}: NDJSON text`);
    const ends: number[] = [];
    const bytes = main.ndjsonBytes!();
    for (let o = bytes.indexOf(0x0a); o !== -1; o = bytes.indexOf(0x0a, o + 1)) ends.push(o);
    t.same([...there.lineEnds()], ends, `round ${round}: line ends`);
    for (let i = 0; i < cells.length; i += Math.max(1, Math.floor(cells.length / 7))) {
      t.equal(there.json(i), main.json!(i), `round ${round}: json(${i})`);
      t.equal(there.identityKey(i), main.identityKey!(i), `round ${round}: identityKey(${i})`);
    }
    t.same(there.where, where);
    t.same(there.rows, main.rows, 'row objects are the main thread formatter\'s');
    // The cells the task was made from still read (a chunk's columns are views into its whole close).
    t.equal(cells.stats.length, cells.length * STAT.STRIDE, 'the cells are not detached');
  }
});

t.test('Kafka records cut from worker-made rows: the same keys, values, partitions and refusals', async (t) => {
  const rng = new Rng(9);
  const workshop = new RowWorkshop();
  const cells = randomCells(rng, 300);
  const where = { topic: 'in', partition: 2 };
  const main = new RowFormatter(SETTINGS.windowMs, SETTINGS.maxEntries).format(cells, where);
  const { task, transfer } = rowsTask(cells, SETTINGS, where, true);
  const there = new FormattedElsewhere(await crossed(workshop.format(await crossed(task, transfer))), where, () => main);
  // A limit some rows pass and some do not: refused rows in the middle of the batch.
  const sizes = main.rows.map((_, i) => Buffer.byteLength(main.json!(i)) + Buffer.byteLength(main.identityKey!(i)));
  const max = [...sizes].sort((a, b) => a - b)[Math.floor(sizes.length / 2)]! + RECORD_OVERHEAD_BYTES;
  const limits = { maxMessageBytes: max, partitions: 6 } as Parameters<typeof encodeRows>[2];
  const a = encodeRows(main, 'out', limits);
  const b = encodeRows(there, 'out', limits);
  t.ok(a.rejected.length > 0 && a.count > 0, `some rows refused (${a.rejected.length}), some sent (${a.count})`);
  t.same(b.rejected, a.rejected, 'the same rows refused, with the same detail');
  t.equal(b.count, a.count);
  for (let m = 0; m < a.count; m++) {
    t.equal(b.rowIndex[m], a.rowIndex[m]);
    t.equal(b.partition[m], a.partition[m]);
    t.equal(b.keys.toString('utf8', b.keyStart[m], b.keyEnd[m]), a.keys.toString('utf8', a.keyStart[m], a.keyEnd[m]), `key of message ${m}`);
    t.equal(b.values.toString('utf8', b.valueStart[m], b.valueEnd[m]), a.values.toString('utf8', a.valueStart[m], a.valueEnd[m]), `value of message ${m}`);
  }
});

t.test('a real pool formats rows in its worker; a worker that fails them hands them back as null', async (t) => {
  const rng = new Rng(11);
  const cells = randomCells(rng, 500);
  const main = new RowFormatter(SETTINGS.windowMs, SETTINGS.maxEntries).format(cells, undefined);
  const pool = new DecodePool({ threads: 1, maxInFlight: 4, settings: settings({ windowMs: SETTINGS.windowMs }), workerMaxMemoryMb: 64, taskTimeoutMs: 30_000 });
  t.teardown(() => pool.close());
  t.ok(pool.formatsRows);
  const { task, transfer } = rowsTask(cells, SETTINGS, undefined, false);
  const wire = (await pool.formatRows(task, transfer)) as RowsWire;
  t.not(wire, null);
  t.equal(Buffer.from(wire.ndjson).toString('utf8'), main.ndjson(), 'the worker\'s NDJSON is the main thread\'s');
  t.equal(wire.keys, null, 'no identity keys unless asked');

  const failing = new DecodePool({ threads: 1, maxInFlight: 4, settings: settings({ windowMs: SETTINGS.windowMs }), workerMaxMemoryMb: 64, taskTimeoutMs: 30_000, workerFile: fileURLToPath(new URL('../fixtures/rows-failing-worker.js', import.meta.url)) });
  t.teardown(() => failing.close());
  const errors: Error[] = [];
  const again = rowsTask(cells, SETTINGS, undefined, false);
  t.equal(await failing.formatRows(again.task, again.transfer, (e) => errors.push(e)), null, 'null: the caller formats them');
  const third = rowsTask(cells, SETTINGS, undefined, false);
  t.equal(await failing.formatRows(third.task, third.transfer, (e) => errors.push(e)), null);
  t.equal(errors.length, 1, 'the failure is reported once');
  t.match(errors[0]!.message, /fixture: rows refused/);
  const inThread = new DecodePool({ threads: 0, maxInFlight: 4, settings: settings({ windowMs: SETTINGS.windowMs }), workerMaxMemoryMb: 64, taskTimeoutMs: 30_000 });
  t.teardown(() => inThread.close());
  t.notOk(inThread.formatsRows, 'in-thread: the main thread formats');
});

t.test('a wire of scratch views (the owner\'s) carries what a wire of its own does, and the scratch is reused', async (t) => {
  const rng = new Rng(11);
  const fmt = new RowFormatter(SETTINGS.windowMs, SETTINGS.maxEntries);
  const scratch: KeyScratch = { buf: Buffer.allocUnsafeSlow(0) };
  let firstBytes: ArrayBufferLike | null = null;
  for (const n of [40, 3, 200, 1]) {
    const cells = randomCells(rng, n);
    const where = { topic: 'in', partition: n };
    const own = rowsWire(fmt.format(cells, where), n, true, 0);
    const views = rowsWire(fmt.format(cells, where), n, true, 0, scratch, true);
    t.equal(Buffer.from(views.ndjson).toString(), Buffer.from(own.ndjson).toString(), `${n} rows: the same NDJSON`);
    t.same([...views.lineEnds], [...own.lineEnds], 'the same line ends');
    t.equal(Buffer.from(views.keys!).toString(), Buffer.from(own.keys!).toString(), 'the same keys');
    t.same([...views.keyEnds!], [...own.keyEnds!], 'the same key ends');
    t.ok(views.keys!.buffer === scratch.buf.buffer && views.keyEnds!.buffer === scratch.keyEnds!.buffer, 'keys and ends are views of the scratch');
    if (n === 3) t.equal(views.ndjson.buffer, firstBytes, 'a smaller chunk is written where the one before was');
    firstBytes = views.ndjson.buffer;
  }
});
