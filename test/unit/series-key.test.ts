// Series keys in JSON form (src/core/series.ts): an ASCII series whose dimension names are no array
// indices gets a key that is its statistics row's head, byte for byte, so the row formatter keeps no
// copy of it; every other series keeps the length-prefixed form. Both parse back to the same identity.
import fc from 'fast-check';
import t from 'tap';
import { groupbyObject, identityJsonBytes, identityOverLimit, isJsonKey, parseSeriesKey, seriesKey } from '../../src/core/series.js';
import { ClosedCells, STAT } from '../../src/windows/cells.js';
import { RowFormatter } from '../../src/windows/row.js';

const ascii = fc.string({ unit: fc.constantFrom('a', 'Z', '0', '1', '9', ':', '-', ' ', '"', '\\', '\u0001', '_', '.'), maxLength: 10 });
const name = fc.oneof({ weight: 4, arbitrary: ascii }, { weight: 1, arbitrary: fc.constantFrom('0', '7', '10', '4294967294', '4294967295', '01', '-1', '__proto__', 'é', 'µs') });
const dims = fc.array(fc.tuple(name, fc.oneof(ascii, fc.constantFrom('日本', '😀'))), { maxLength: 6 });
const groupBy = fc.option(fc.uniqueArray(name, { maxLength: 4 }), { nil: null });

/** The row head the formatter wrote before keys had a JSON form (row.ts, #newPrefix). */
function rowHead(key: string): string {
  const id = parseSeriesKey(key);
  return `${JSON.stringify({ name: id.name, unit: id.unit, groupby: groupbyObject(id) }).slice(0, -1)},`;
}

t.test('which series get a JSON-form key', async (t) => {
  const key = (n: string, d: Array<[string, string]>, g: string[] | null = null): string => seriesKey(n, null, d, g);
  t.ok(isJsonKey(key('cpu', [['host', 'h1'], ['zone', 'a"b\\c\u0001']])), 'ASCII, escapes included');
  t.equal(key('cpu', [['zone', 'z'], ['host', 'h']]), '{"name":"cpu","unit":null,"groupby":{"host":"h","zone":"z"},', 'sorted, the row head');
  t.equal(seriesKey('m', '%', [['a', 'x']], ['b', 'a']), '{"name":"m","unit":"%","groupby":{"b":null,"a":"x"},', 'GROUP_BY order, absent = null');
  t.notOk(isJsonKey(key('cpu', [['host', 'hé']])), 'non-ASCII value: length-prefixed');
  t.notOk(isJsonKey(key('µ', [])), 'non-ASCII name: length-prefixed');
  for (const n of ['0', '7', '10', '4294967294']) t.notOk(isJsonKey(key('cpu', [[n, 'v']])), `dimension "${n}" is an array index: length-prefixed`);
  for (const n of ['4294967295', '01', '-1', '1.5', '']) t.ok(isJsonKey(key('cpu', [[n, 'v']])), `dimension "${n}" is no array index: JSON form`);
});

t.test('JSON form = the row head; both forms round-trip and count identity bytes exactly', async (t) => {
  const r = fc.check(fc.property(ascii, fc.option(ascii, { nil: null }), dims, groupBy, (n, u, d, g) => {
    const key = seriesKey(n, u, d, g);
    const id = parseSeriesKey(key);
    const json = JSON.stringify([id.name, id.unit, id.groupby]);
    const bytes = Buffer.byteLength(json);
    const want = g === null ? null : g.map((k) => [k, d.find((x) => x[0] === k)?.[1] ?? null]);
    const jsonForm = /^[\x00-\x7f]*$/.test(json) && id.groupby.every(([k]) => !/^(0|[1-9][0-9]*)$/.test(k) || Number(k) >= 4294967295);
    return id.name === n && id.unit === u && (want === null || JSON.stringify(id.groupby) === JSON.stringify(want)) &&
      isJsonKey(key) === jsonForm && (!isJsonKey(key) || key === rowHead(key)) &&
      identityJsonBytes(key) === bytes && identityOverLimit(key, bytes) === -1 && identityOverLimit(key, bytes - 1) === bytes;
  }), { numRuns: 20_000, seed: 20261201 });
  t.notOk(r.failed, r.failed ? `counterexample ${JSON.stringify(r.counterexample)}: ${String(r.errorInstance)}` : `${r.numRuns} cases`);
});

t.test('rows of both forms are JSON.stringify of their row objects', async (t) => {
  const keys = [
    seriesKey('cpu', null, [['host', 'h1'], ['zone', 'z']], null),
    seriesKey('cpu', 'ms', [['10', 'a'], ['9', 'b'], ['host', 'h']], null),
    seriesKey('cpu', null, [['2', 'x'], ['b', 'y']], ['b', '2', 'absent']),
    seriesKey('mém', null, [['hôte', '日本']], null),
  ];
  t.same(keys.map(isJsonKey), [true, false, false, false]);
  const n = keys.length;
  const stats = new Float64Array(n * STAT.STRIDE);
  for (let i = 0; i < n; i++) {
    const o = i * STAT.STRIDE;
    stats.set([2, 1.5, 0.5, 1, 2, 3, 1_581_425_000_000, 1_581_425_001_000], o);
  }
  const b = new RowFormatter(60_000, 100).format(new ClosedCells(keys, new Float64Array(n).fill(1_581_424_980_000), stats, null));
  const lines = b.ndjsonBytes!().toString('utf8').split('\n').slice(0, -1);
  t.same(lines, b.rows.map((r) => JSON.stringify(r)), 'bytes = JSON.stringify(row)');
  t.same(Object.keys(b.rows[1]!.groupby), ['9', '10', 'host'], 'array-index names first, as JSON.stringify writes them');
  t.same(Object.keys(b.rows[2]!.groupby), ['2', 'b', 'absent']);
});

t.test('a malformed JSON-form key is refused by name', async (t) => {
  for (const bad of ['{"name":1,"unit":null,"groupby":{},', '{"name":"a","unit":null,"groupby":{"k":2},', '{"name":"a","unit":null,"groupby":{', '{"name":"a"}']) {
    t.throws(() => parseSeriesKey(bad), /not a series key/, bad);
  }
});
