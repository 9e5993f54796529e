// Pure parts of the Redis source: the id <-> position mapping and the split of a read into batches.
import t from 'tap';
import { MAX_MS, idToPosition, positionMs, positionToId } from '../../src/sources/redis/position.js';
import { splitEntries } from '../../src/sources/redis/entries.js';
import { messageBytes, messageCount } from '../../src/core/batch.js';

t.test('ids map to exact, ordered positions and back', async (t) => {
  const ids = ['0-0', '0-1', '0-4095', '1-0', '1700000000000-0', '1700000000000-17', '1700000000001-0', `${MAX_MS}-4095`];
  const pos = ids.map(idToPosition);
  t.same([...pos].sort((a, b) => a - b), pos, 'positions ordered like the ids');
  t.ok(pos.every((p) => Number.isSafeInteger(p)), 'every position a safe integer');
  t.same(pos.map(positionToId), ids, 'positionToId inverts idToPosition');
  t.equal(positionMs(idToPosition('1700000000123-9')), 1700000000123, 'the milliseconds of an id');
  for (const bad of ['1-4096', `${MAX_MS + 1}-0`, 'x-1', '12', '-1-0']) {
    t.throws(() => idToPosition(bad), { code: 'STREAMSTATS_SOURCE', message: new RegExp(`entry id "${bad}" cannot be a position`) }, `${bad} refused, never rounded`);
  }
});

t.test('a read becomes batches of the field values; the rest is sorted out', async (t) => {
  const f = (...kv: string[]) => kv.map((s) => Buffer.from(s));
  const entries = [
    { id: '100-0', fields: f('data', 'a') },
    { id: '100-1', fields: f('other', 'x') },
    { id: '100-2', fields: null },
    { id: '101-0', fields: f('x', '1', 'data', 'bb') },
    { id: '102-0', fields: f('data', 'c'.repeat(40)) },
    { id: '103-0', fields: f('data', 'd') },
  ];
  const s = splitEntries(entries, { laneId: 7, field: Buffer.from('data'), batchSize: 2, batchMaxBytes: 1 << 20, maxMessageBytes: 16, skipBelow: idToPosition('100-0') });
  t.same(s.missing.map((m) => [m.id, m.fieldNames]), [['100-1', ['"other"']]], 'an entry without the field is reported with its field names');
  t.same(s.done, ['100-2'], 'a deleted entry is done');
  t.equal(s.batches.length, 2, 'cut at BATCH_SIZE');
  const [b1, b2] = s.batches;
  t.same([messageCount(b1!), messageCount(b2!)], [2, 2]);
  t.equal(messageBytes(b1!, 1).toString(), 'bb', 'the field is found wherever it stands');
  t.equal(b1!.startPosition, idToPosition('100-0'));
  t.equal(b1!.endPosition, idToPosition('102-0'), 'a batch ends where the next one starts (skipped entries inside it)');
  t.equal(b2!.endPosition, idToPosition('103-0') + 1, 'the last ends after the last entry read');
  t.same(b2!.oversized?.get(0), { bytes: 40 }, 'a value over MAX_MESSAGE_BYTES is marked with its size');
  t.equal(messageBytes(b2!, 0).length, 17, 'and cut to MAX_MESSAGE_BYTES + 1');
  t.equal(b1!.keys?.[0]?.toString(), '100-0', 'entry ids go along as keys (for dead letters)');
  const skipped = splitEntries(entries, { laneId: 7, field: Buffer.from('data'), batchSize: 10, batchMaxBytes: 1 << 20, maxMessageBytes: 100, skipBelow: idToPosition('102-0') });
  t.same(skipped.done, ['100-0', '100-1', '100-2', '101-0'], 'entries below the stored position are done, not processed');
  t.equal(skipped.batches.length, 1);
});
