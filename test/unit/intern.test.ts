import t from 'tap';
import { SeriesInterner } from '../../src/core/intern.js';
import { seriesKey } from '../../src/core/series.js';
import type { SampleRecord } from '../../src/core/record.js';

const rec = (name: string, dims: Array<[string, string]>, unit: string | null = null): SampleRecord => ({ name, value: 1, tsMs: 0, unit, dims });

t.test('one leaf per series key, whatever order the dimensions arrive in', async (t) => {
  const s = new SeriesInterner(null, 2048);
  const a = s.leaf(rec('m', [['b', '2'], ['a', '1']]));
  const b = s.leaf(rec('m', [['a', '1'], ['b', '2']]));
  t.equal(a, b, 'same leaf');
  t.equal(a.key, seriesKey('m', null, [['a', '1'], ['b', '2']], null));
  t.not(s.leaf(rec('m', [['a', '1'], ['b', '2']], 'ms')), a, 'a unit makes another series');
  t.not(s.leaf(rec('m', [['a', '1']])), a, 'fewer dimensions make another series');
  t.not(s.leaf(rec('m', [['a', '12']])), s.leaf(rec('m', [['a', '1'], ['2', '']])), 'length prefixes keep parts apart');
  t.same(s.keys(0), [a.key, ...s.keys(1)], 'keys in id order');
});

t.test('values that differ only between the hash samples: distinct series, and lookups stay short', async (t) => {
  const s = new SeriesInterner(['host'], 4096);
  // 40 characters, sampled at 0, 5, 10, ..., 35 and 39: positions 21, 23 and 24 are never read
  // by the sampled hash, so all 200 collide until the table hashes every character.
  const host = (i: number) => `${'x'.repeat(21)}${String.fromCharCode(0x41 + (i % 26))}z${String(Math.floor(i / 26)).padStart(2, '0')}${'y'.repeat(15)}`;
  const leaves = Array.from({ length: 200 }, (_, i) => s.leaf(rec('m', [['host', host(i)]])));
  t.equal(new Set(leaves.map((l) => l.key)).size, 200, '200 distinct keys');
  for (let i = 0; i < 200; i++) t.equal(s.leaf(rec('m', [['host', host(i)]])), leaves[i], `series ${i} found again`);
  t.equal(s.size, 200);
});

t.test('a key over the limit is marked once and gets no id', async (t) => {
  const s = new SeriesInterner(null, 40);
  const l = s.leaf(rec('m', [['k', 'v'.repeat(50)]]));
  t.equal(l.id, -1);
  t.ok(l.overLimitBytes > 40, `${l.overLimitBytes} bytes`);
  t.equal(s.nextId, 0);
  t.equal(s.leaf(rec('m', [['k', 'short']])).id, 0);
});
