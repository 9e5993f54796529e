// Rows written as Kafka records by the worker that formats them (src/sinks/kafka/row-records.ts) must
// be what the main thread's encoder writes from the same rows: the same messages (key, value,
// partition), in row order within each partition, each section a record-batch body byte for byte as
// RecordBatchWriter.appendRange writes it, and no section over the budget the sink cuts requests by.
import t, { type Test } from 'tap';
import { SECTION_STRIDE, type RowRecords, type RowsWire } from '../../src/core/messages.js';
import { crc32cJs } from '../../src/kafka/crc32c.js';
import { RecordBatchWriter } from '../../src/kafka/record-batch.js';
import { RECORD_OVERHEAD_BYTES } from '../../src/kafka/requests.js';
import { encodeRows } from '../../src/sinks/kafka/messages.js';
import { rowRecords, SharedRecordLayout } from '../../src/sinks/kafka/row-records.js';
import { FormattedElsewhere, joinRecords, linesOf, recordsWire } from '../../src/windows/row-task.js';
import type { RowBatch } from '../../src/windows/row.js';
import { Rng } from '../fixtures/gen.js';

/** n rows as a worker's wire: JSON lines and identity keys, some non-ASCII, a few large. */
function wire(rng: Rng, n: number): RowsWire {
  const lines: string[] = [];
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const host = rng.next() < 0.1 ? `hôte-${rng.int(0, 50)}😀` : `h${rng.int(0, 500)}`;
    const pad = rng.next() < 0.02 ? 'x'.repeat(rng.int(200, 20_000)) : '';
    lines.push(JSON.stringify({ name: 'cpu', groupby: { host }, count: rng.int(1, 1e6), pad }));
    keys.push(JSON.stringify(['in', 3, 'cpu', [['host', host]], `2020-02-11T12:${String(i % 60).padStart(2, '0')}:00.000Z`]));
  }
  const ndjson = Buffer.from(lines.map((l) => `${l}\n`).join(''));
  const lineEnds = new Int32Array(n);
  for (let i = 0, o = -1; i < n; i++) lineEnds[i] = o = ndjson.indexOf(0x0a, o + 1);
  const keyBytes = Buffer.from(keys.join(''));
  const keyEnds = new Int32Array(n);
  for (let i = 0, o = 0; i < n; i++) keyEnds[i] = o += Buffer.byteLength(keys[i]!);
  return { kind: 'rows', ndjson, lineEnds, keys: keyBytes, keyEnds, seconds: 0 };
}

/** The same rows as the main thread's encoder reads them (no records). */
function classic(w: RowsWire): RowBatch {
  return new FormattedElsewhere(w, undefined, () => {
    throw new Error('row objects are not needed here');
  });
}

const limitsOf = (partitions: number, maxMessageBytes = 1_048_588) => ({ partitions, maxMessageBytes }) as Parameters<typeof encodeRows>[2];

function checkSections(t: Test, r: RowRecords, budget: number): void {
  const buf = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
  let next = 0;
  let bytesAt = 0;
  for (let at = 0; at < r.sections.length; at += SECTION_STRIDE) {
    const [p, first, count, start, end, crc] = [...r.sections.subarray(at, at + SECTION_STRIDE)];
    if (crc! >>> 0 !== crc32cJs(buf, start, end)) t.fail(`section ${at / SECTION_STRIDE}: its CRC32C`);
    if (first !== next || start !== bytesAt) t.fail(`section ${at / SECTION_STRIDE} follows the one before`);
    next = first! + count!;
    bytesAt = end!;
    // The body the main thread's encoder writes for these messages, numbered from 0.
    const w = new RecordBatchWriter(end! - start!);
    let used = 0;
    for (let m = first!; m < first! + count!; m++) {
      if (r.partition[m] !== p) t.fail(`message ${m} is of section ${at / SECTION_STRIDE}'s partition`);
      w.appendRange(buf, r.keyStart[m]!, r.keyEnd[m]!, buf, r.valueStart[m]!, r.valueEnd[m]!);
      used += r.keyEnd[m]! - r.keyStart[m]! + r.valueEnd[m]! - r.valueStart[m]! + RECORD_OVERHEAD_BYTES;
    }
    if (count! > 1 && used > budget) t.fail(`section ${at / SECTION_STRIDE} of ${used} bytes passes the budget ${budget}`);
    const body = w.sealUncompressed(0, { producerId: -1n, producerEpoch: 0, firstSequence: -1, transactional: false }).subarray(61);
    if (!body.equals(buf.subarray(start!, end!))) t.fail(`section ${at / SECTION_STRIDE}: its bytes are appendRange's`);
  }
  t.equal(next, r.rowIndex.length, 'the sections hold every message');
  t.equal(bytesAt, r.bytes.byteLength, 'and every byte');
}

t.test('records are the encoder\'s messages, grouped by partition in row order, in sections within the budget', async (t) => {
  const rng = new Rng(7);
  for (const [n, partitions, budget] of [[500, 6, 1_048_460], [300, 1, 20_000], [64, 40, 3_000], [1, 3, 100], [0, 4, 1000], [9000, 4, 200_000]] as const) {
    const w = wire(rng, n);
    const r = rowRecords(w, { partitions, budget }, {});
    const a = encodeRows(classic(w), 'out', limitsOf(partitions));
    t.equal(r.rowIndex.length, n, `${n} rows, ${partitions} partitions, budget ${budget}: every row a message`);
    const seen = new Set<number>();
    const last = new Map<number, number>();
    let ok = true;
    for (let m = 0; m < n; m++) {
      const i = r.rowIndex[m]!;
      seen.add(i);
      const k = a.rowIndex.indexOf(i);
      const same = r.partition[m] === a.partition[k] &&
        Buffer.from(r.bytes).subarray(r.keyStart[m], r.keyEnd[m]).equals(a.keys.subarray(a.keyStart[k], a.keyEnd[k])) &&
        Buffer.from(r.bytes).subarray(r.valueStart[m], r.valueEnd[m]).equals(a.values.subarray(a.valueStart[k], a.valueEnd[k]));
      // Row order within a partition, so a key's rows stay in the order they were emitted.
      if (!same || (last.get(r.partition[m]!) ?? -1) > i) ok = false;
      last.set(r.partition[m]!, i);
    }
    t.ok(ok, 'each message is the encoder\'s (key, value, partition), in row order within its partition');
    t.equal(seen.size, n, 'no row twice');
    checkSections(t, r, budget);
  }
});

t.test('a small budget cuts a partition in several sections, each numbered from 0', async (t) => {
  const rng = new Rng(3);
  const w = wire(rng, 400);
  const r = rowRecords(w, { partitions: 2, budget: 8_000 }, {});
  const perPartition = [0, 0];
  for (let at = 0; at < r.sections.length; at += SECTION_STRIDE) perPartition[r.sections[at]!]!++;
  t.ok(perPartition[0]! > 3 && perPartition[1]! > 3, `sections per partition: ${perPartition.join(', ')}`);
  checkSections(t, r, 8_000);
});

t.test('the sink reads records as they are; a changed partition count or a row over the limit is redone on the main thread', async (t) => {
  const rng = new Rng(9);
  const w = wire(rng, 700);
  const r = rowRecords(w, { partitions: 6, budget: 1_048_460 }, {});
  const asRecords = new FormattedElsewhere(recordsWire(r, 0), undefined, () => {
    throw new Error('row objects are not needed here');
  });
  const same = encodeRows(asRecords, 'out', limitsOf(6));
  t.equal(same.sections, r.sections, 'the sections go to the requests as they are');
  t.equal(same.partition, r.partition, 'and the partitions');
  const sizes = [];
  for (let m = 0; m < 700; m++) sizes.push(r.keyEnd[m]! - r.keyStart[m]! + r.valueEnd[m]! - r.valueStart[m]!);
  const max = [...sizes].sort((a, b) => a - b)[690]! + RECORD_OVERHEAD_BYTES;
  for (const limits of [limitsOf(5), limitsOf(6, max)]) {
    const a = encodeRows(classic(w), 'out', limits);
    const b = encodeRows(asRecords, 'out', limits);
    t.equal(b.sections, null, `partitions ${limits.partitions}, max ${limits.maxMessageBytes}: no sections`);
    t.same(b.rejected, a.rejected, `the same rows refused (${a.rejected.length})`);
    t.equal(b.count, a.count);
    const byRow = (e: typeof a) => new Map([...e.rowIndex.subarray(0, e.count)].map((i, m) => [i, `${e.partition[m]} ${e.keys.toString('latin1', e.keyStart[m], e.keyEnd[m])} ${e.values.toString('latin1', e.valueStart[m], e.valueEnd[m])}`]));
    t.same(byRow(b), byRow(a), 'each sent row with the encoder\'s partition, key and value');
  }
});

t.test('lines and keys read back from records are the rows\' own; joined records keep every section', async (t) => {
  const rng = new Rng(12);
  const w = wire(rng, 300);
  const r = rowRecords(w, { partitions: 4, budget: 30_000 }, {});
  const back = linesOf(r);
  t.ok(Buffer.from(back.ndjson).equals(Buffer.from(w.ndjson)), 'the NDJSON, byte for byte');
  t.same([...back.lineEnds], [...w.lineEnds]);
  t.ok(Buffer.from(back.keys!).equals(Buffer.from(w.keys!)), 'the keys');
  t.same([...back.keyEnds!], [...w.keyEnds!]);
  const w2 = wire(rng, 120);
  const r2 = rowRecords(w2, { partitions: 4, budget: 30_000 }, {});
  // Copies: rowRecords' scratch would be shared otherwise (here each call had its own).
  const j = joinRecords([r, r2]);
  checkSections(t, j, 30_000);
  const lines = linesOf(j);
  t.equal(Buffer.from(lines.ndjson).toString(), Buffer.from(w.ndjson).toString() + Buffer.from(w2.ndjson).toString(), 'rows of both, in order');
});

t.test('the shared layout: nothing until the partitions are known, then what the sink last set', async (t) => {
  const a = new SharedRecordLayout();
  const b = new SharedRecordLayout(a.buffer);
  t.equal(b.read(), null);
  a.set({ partitions: 0, budget: 5 });
  t.equal(b.read(), null, 'partitions not known yet');
  a.set({ partitions: 12, budget: 1_048_460 });
  t.same(b.read(), { partitions: 12, budget: 1_048_460 });
});
