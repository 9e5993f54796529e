// Pure parts of the Redis source: the id <-> position mapping and the split of a read into batches.
import t from 'tap';
import { LanePositions, MAX_POSITION, compareIds, type Mark, type Segment } from '../../src/sources/redis/position.js';
import { splitEntries } from '../../src/sources/redis/entries.js';
import { keyOf, messageBytes, messageCount } from '../../src/core/batch.js';
import { Rng } from '../fixtures/gen.js';
import { readReply, xreadReply } from '../fixtures/resp.js';

const fresh = () => new LanePositions([], null, 0);

t.test('ids of XADD * (below 4096 a millisecond) keep the exact mapping ms * 4096 + seq', async (t) => {
  const p = fresh();
  const ids = ['0-1', '0-4095', '1-0', '1700000000000-0', '1700000000000-17', '1700000000001-0', '2194728288255-4095'];
  t.same(ids.map((id) => p.assign(id)), ids.map((id) => Number(id.split('-')[0]) * 4096 + Number(id.split('-')[1])), 'the positions stored points hold today');
  t.equal(p.takeChanges(), null, 'nothing to store');
  t.equal(p.idBelow(1700000000000 * 4096 + 17), '1700000000000-17', 'the acknowledgement bound of a point is its id');
  t.ok(p.natural, 'natural: the id range below idBelow(p) is exactly the positions below p, so Redis may acknowledge it alone');
  const again = p.rewound(1700000000000 * 4096);
  t.same(ids.map((id) => again.assign(id)), ids.map((id) => Number(id.split('-')[0]) * 4096 + Number(id.split('-')[1])), 'rewound: a replay from the start gives every entry its position again');
});

t.test('a segment or an entry with seq >= 4096 makes positions not natural, for good in that run and after', async (t) => {
  const burst = fresh();
  for (let i = 0; i < 5000; i++) burst.assign(`7-${i}`);
  t.notOk(burst.natural, 'a millisecond of 5,000 entries: ids no longer sort like natural positions');
  // As the source does after every read: the mark is stored before the entries go on.
  burst.takeChanges();
  t.notOk(burst.rewound(0).natural, 'and a lane rebuilt from it knows it');
  const explicit = fresh();
  explicit.assign('1-0');
  explicit.assign('2-4096');
  t.notOk(explicit.natural, 'an explicit id with seq 4096');
  t.notOk(new LanePositions([], { id: '3-5000', position: 3 * 4096 + 4095 }, 0).natural, 'a stored mark');
});

t.test('ids the exact mapping cannot hold get ordered, distinct, safe positions', async (t) => {
  const p = fresh();
  const burst = Array.from({ length: 9000 }, (_, i) => `5-${i}`);
  const ids = ['1-0', '2-4096', '2-99999999999999999', '3-0', ...burst, '6-0', '6-1', '2199023255551-4094', '2199023255551-4095', '2199023255552-0', '18446744073709551615-0', '18446744073709551615-18446744073709551615'];
  const pos = ids.map((id) => p.assign(id));
  t.ok(pos.every((x, i) => Number.isSafeInteger(x) && x <= MAX_POSITION && (i === 0 || x > pos[i - 1]!)), 'strictly increasing safe integers, the largest ids included');
  t.ok(pos[pos.length - 1]! + 1 <= Number.MAX_SAFE_INTEGER, 'the end after the largest id is a safe integer');
  const c = p.takeChanges();
  t.ok(c !== null && c.segments.length > 0 && c.segments.length < 12, `a few segments, not one per entry (${c?.segments.length})`);
  t.same(c?.mark, { id: ids[ids.length - 1], position: pos[pos.length - 1] }, 'the last entry had seq >= 4096: marked');
  t.same(ids.map((id) => p.positionOf(id)), pos, 'positionOf gives each entry read its position again');
});

/** A stream of ids with bursts past 4096 a millisecond, explicit seqs and jumps; strictly increasing. */
function ids(rng: Rng, n: number): string[] {
  const out: string[] = [];
  let ms = 1_700_000_000_000;
  let seq = 0;
  while (out.length < n) {
    const r = rng.next();
    if (r < 0.5) seq++;
    else if (r < 0.53) seq += rng.int(4000, 9000);
    else if (r < 0.9) {
      ms += rng.int(1, 3);
      seq = rng.int(0, 3);
    } else if (r < 0.995) seq += rng.int(1, 300);
    else {
      ms += rng.int(1, 2) * 2 ** 20;
      seq = 0;
    }
    out.push(`${ms}-${seq}`);
  }
  return out;
}

t.test('a restart gives every entry read before its position again, and new ones positions above the stored point', async (t) => {
  for (let trial = 0; trial < 200; trial++) {
    const rng = new Rng(1000 + trial);
    const early = rng.range(0, 0.9);
    const all = ids(rng, 1500);
    const segs = new Map<number, Segment>();
    let mark: Mark | null = null;
    const store = (p: LanePositions) => {
      const c = p.takeChanges();
      if (c === null) return;
      for (const s of c.segments) segs.set(s.position, s);
      if (c.mark !== undefined) mark = c.mark;
    };
    // Run 1: reads of random sizes, each stored, then a crash with one read delivered and not stored.
    const p1 = fresh();
    const pos = new Map<string, number>();
    let i = 0;
    let appliedEnd = 0;
    const pending = new Set<string>();
    const crashAt = rng.int(100, 1400);
    while (i < crashAt) {
      const n = Math.min(crashAt - i, rng.int(1, 60));
      const read = all.slice(i, i + n);
      for (const id of read) pos.set(id, p1.assign(id));
      store(p1);
      i += n;
      for (const id of read) if (!rng.bool(early)) pending.add(id); // some acknowledged early (dead-lettered)
      if (rng.bool(0.9)) appliedEnd = pos.get(read[read.length - 1]!)! + 1;
      if (rng.bool(0.3)) {
        // A commit: the entries below the point acknowledged, the segments below it dropped.
        const cp = Math.min(appliedEnd, pos.get(read[rng.below(read.length)]!)!);
        for (const id of [...pending]) if (pos.get(id)! < cp) pending.delete(id);
        const below = p1.dropBelow(cp);
        if (below !== null) for (const k of [...segs.keys()]) if (k < below) segs.delete(k);
      }
    }
    const lost = all.slice(i, i + rng.int(0, 300)); // delivered, never handed on (reply lost, or the crash)
    for (const id of lost) p1.assign(id);
    // Run 2, from what was stored.
    const p2 = new LanePositions([...segs.values()], mark, appliedEnd);
    const reread = all.filter((id) => pending.has(id) || lost.includes(id));
    const next = all.slice(i + lost.length);
    let prev = -1;
    let bad = 0;
    for (const id of [...reread, ...next]) {
      const x = p2.assign(id);
      const was = pos.get(id);
      const ok = x > prev && x <= MAX_POSITION && (was !== undefined ? x === was : x >= appliedEnd);
      if (!ok && bad++ < 3) t.fail(`trial ${trial}: ${id} at ${x} (before ${was}, previous ${prev}, applied end ${appliedEnd})`);
      prev = x;
    }
    if (bad > 0) return;
  }
  t.pass('200 random restarts: positions kept, new entries placed above the stored point');
});

t.test('after a restart, an entry never read lies above entries acknowledged early that are not read again', async (t) => {
  // A millisecond of 5001 entries, the last 4900 dead-lettered (acknowledged at once), then a crash:
  // 6-0 was delivered and never handed on. Its natural position lies inside the burst.
  const run1 = fresh();
  const burst = Array.from({ length: 5001 }, (_, i) => `5-${i}`);
  const end = burst.map((id) => run1.assign(id)).pop()! + 1;
  const c = run1.takeChanges()!;
  const run2 = new LanePositions(c.segments, c.mark ?? null, end);
  for (const id of burst.slice(0, 101)) run2.assign(id);
  t.ok(run2.assign('6-0') >= end, 'placed at or above the applied end, not among the burst (it would be skipped as a replay)');
  // Positions near 2^53: each new id starts a segment whose place depends on the entries before.
  const near = ['2194728288255-0', '2194728288255-1', '2194728288255-2', '2194728288257-0', '2194728288257-1'];
  const run3 = fresh();
  const end3 = near.map((id) => run3.assign(id)).pop()! + 1;
  const c3 = run3.takeChanges()!;
  const run4 = new LanePositions(c3.segments, c3.mark ?? null, end3);
  for (const id of near.slice(0, 2)) run4.assign(id);
  t.ok(run4.assign('2194728288258-0') >= end3, 'a segment started after a restart starts at or above where the lane resumed');
});

t.test('ids compare as Redis orders them', async (t) => {
  t.ok(compareIds('9-0', '10-0') < 0 && compareIds('1-10', '1-9') > 0 && compareIds('18446744073709551615-0', '2199023255551-4095') > 0 && compareIds('3-3', '3-3') === 0);
});

t.test('a read becomes batches of the field values; the rest is sorted out', async (t) => {
  const entries = [
    { id: '100-0', fields: ['data', 'a'] },
    { id: '100-1', fields: ['other', 'x'] },
    { id: '100-2', fields: null },
    { id: '101-0', fields: ['x', '1', 'data', 'bb'] },
    { id: '102-0', fields: ['data', 'c'.repeat(40)] },
    { id: '103-0', fields: ['data', 'd'] },
  ];
  const reader = readReply(xreadReply('s', entries), { field: Buffer.from('data'), maxValueBytes: 17, limitBytes: 1 << 20 });
  const p = fresh();
  const positions = entries.map((e) => p.assign(e.id));
  const at = (id: string) => p.positionOf(id);
  const s = splitEntries(reader, 0, { laneId: 7, positions, batchSize: 2, batchMaxBytes: 1 << 20, maxMessageBytes: 16, skipBelow: at('100-0') });
  t.same(s.missing.map((m) => [m.id, m.fieldNames]), [['100-1', ['"other"']]], 'an entry without the field is reported with its field names');
  t.same(s.done, ['100-2'], 'a deleted entry is done');
  t.equal(s.batches.length, 2, 'cut at BATCH_SIZE');
  const [b1, b2] = s.batches;
  t.same([messageCount(b1!), messageCount(b2!)], [2, 2]);
  t.equal(messageBytes(b1!, 1).toString(), 'bb', 'the field is found wherever it stands');
  t.equal(b1!.startPosition, at('100-0'));
  t.equal(b1!.endPosition, at('102-0'), 'a batch ends where the next one starts (skipped entries inside it)');
  t.equal(b2!.endPosition, at('103-0') + 1, 'the last ends after the last entry read');
  t.same(b2!.oversized?.get(0), { bytes: 40 }, 'a value over MAX_MESSAGE_BYTES is marked with its size');
  t.equal(messageBytes(b2!, 0).length, 17, 'and cut to MAX_MESSAGE_BYTES + 1');
  t.equal(keyOf(b1!.keys, 0)?.toString(), '100-0', 'entry ids go along as keys (for dead letters)');
  t.equal(keyOf(b1!.keys, 1)?.toString(), '101-0');
  t.same([...(b2!.positions as Float64Array)], [at('102-0'), at('103-0')], 'and the positions of its entries');
  const skipped = splitEntries(reader, 0, { laneId: 7, positions, batchSize: 10, batchMaxBytes: 1 << 20, maxMessageBytes: 100, skipBelow: at('102-0') });
  t.same(skipped.done, ['100-0', '100-1', '100-2', '101-0'], 'entries below the stored position are done, not processed');
  t.equal(skipped.batches.length, 1);
  const later = splitEntries(reader, 4, { laneId: 7, positions: positions.slice(4), batchSize: 10, batchMaxBytes: 1 << 20, maxMessageBytes: 100, skipBelow: 0 });
  t.same(later.batches.map((b) => messageCount(b)), [2], 'from: the entries from there on (a replay skipping what it re-read)');
  t.equal(keyOf(later.batches[0]!.keys, 0)?.toString(), '102-0');
});

t.test("a read's batches are views of the reader's shared buffer, ended where its values stop being adjacent", async (t) => {
  const entries = [
    { id: '200-0', fields: ['data', 'a1'] },
    { id: '200-1', fields: ['data', 'e'.repeat(30)] },
    { id: '200-2', fields: null },
    { id: '201-0', fields: ['data', 'b2'] },
    { id: '201-1', fields: ['data', 'c3'] },
  ];
  // The reader keeps 40 bytes of a value, the split 17 (MAX_MESSAGE_BYTES 16): the long value is cut
  // in its batch, so the bytes after it in the reader's buffer are not the next message's.
  const reader = readReply(xreadReply('s', entries), { field: Buffer.from('data'), maxValueBytes: 40, limitBytes: 1 << 20 });
  t.ok(reader.data.buffer instanceof SharedArrayBuffer, "the reader's values are in shared memory (the pool reads them in place)");
  const p = fresh();
  const positions = entries.map((e) => p.assign(e.id));
  const s = splitEntries(reader, 0, { laneId: 1, positions, batchSize: 10, batchMaxBytes: 1 << 20, maxMessageBytes: 16, skipBelow: 0 });
  t.ok(s.batches.every((b) => b.data.buffer === reader.data.buffer), 'every batch is a view of the one buffer: the values are not copied again');
  t.same(s.batches.map((b) => Array.from({ length: messageCount(b) }, (_, i) => messageBytes(b, i).toString())), [['a1', 'e'.repeat(17)], ['b2', 'c3']], 'a new batch begins after the cut value');
  t.same(s.batches.map((b) => [b.startPosition, b.endPosition]), [[positions[0], positions[3]], [positions[3], positions[4]! + 1]], 'and the batches still tile the read');
  t.same(s.batches[0]!.oversized?.get(1), { bytes: 30 });
  t.same(s.done, ['200-2']);
});

t.test("positions from the reader's id numbers equal positions from the id strings", async (t) => {
  const rng = new Rng(77);
  let compared = 0;
  for (let round = 0; round < 200; round++) {
    // Ascending ids as Redis makes them: steps of a millisecond or of the sequence, bursts past 4096
    // a millisecond, jumps to ids of 16 and more digits.
    const ids: string[] = [];
    let ms = BigInt(rng.int(0, 1) === 0 ? rng.int(0, 1000) : 1_700_000_000_000 + rng.int(0, 1000));
    let seq = 0n;
    for (let i = 0; i < rng.int(1, 60); i++) {
      const r = rng.next();
      if (r < 0.5) seq += 1n;
      else if (r < 0.55) seq = BigInt(rng.int(4095, 4096)) > seq ? BigInt(rng.int(4095, 4096)) : seq + 1n;
      else if (r < 0.6) seq += BigInt(rng.int(4000, 5000));
      else if (r < 0.65) ms = ms * 10_000n + BigInt(rng.int(0, 9));
      else {
        ms += BigInt(rng.int(1, 5));
        seq = 0n;
      }
      ids.push(`${ms}-${seq}`);
    }
    const reader = readReply(xreadReply('s', ids.map((id) => ({ id, fields: ['data', 'x'] }))), { field: Buffer.from('data'), maxValueBytes: 10, limitBytes: 1 << 20 });
    const byString = fresh();
    const byNumbers = fresh();
    const a = ids.map((id) => byString.assign(id));
    const b = ids.map((id, i) => byNumbers.assign(id, reader.idMs[i]!, reader.idSeq[i]!));
    t.same(b, a, `round ${round}: the same positions`);
    t.same([byNumbers.natural, byNumbers.takeChanges()], [byString.natural, byString.takeChanges()], `round ${round}: the same segments, mark and naturalness`);
    compared += ids.length;
  }
  t.ok(compared > 1000, `${compared} ids`);
});
