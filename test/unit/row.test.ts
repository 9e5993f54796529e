// RowFormatter's cached serialisation must equal the plain one: the Kafka sink sends json(i) and
// identityKey(i) (written as bytes by identityKeyInto) instead of JSON.stringify(row) and rowIdentityKey(row).
import t from 'tap';
import { seriesKey } from '../../src/core/series.js';
import { addSample, emptyMoments } from '../../src/core/stats.js';
import { Sketch } from '../../src/core/sketch.js';
import { rowIdentityKey } from '../../src/sinks/kafka/index.js';
import { RowFormatter } from '../../src/windows/row.js';
import { Rng } from '../fixtures/gen.js';

const ALPHABET = ['a', 'Z', '"', '\\', '\n', 'é', '€', '😀', '\u2028', ' ', '.', '{', ']', '0'];

function text(rng: Rng, max: number): string {
  let s = '';
  const n = rng.int(1, max);
  for (let i = 0; i < n; i++) s += ALPHABET[rng.int(0, ALPHABET.length - 1)];
  return s;
}

for (const withSketch of [false, true]) {
  t.test(`json(i) and identityKey(i) equal JSON.stringify(row) and rowIdentityKey(row)${withSketch ? ' (percentiles)' : ''}`, async (t) => {
    const rng = new Rng(withSketch ? 11 : 5);
    const f = new RowFormatter(60_000, 1000, withSketch ? [50, 99.9] : []);
    let checked = 0;
    for (let round = 0; round < 40; round++) {
      const cells = Array.from({ length: 25 }, () => {
        const dims: Array<[string, string]> = Array.from({ length: rng.int(0, 5) }, () => [text(rng, 6), text(rng, 12)]);
        const m = emptyMoments();
        const sk = withSketch ? new Sketch(0.01) : undefined;
        for (let i = 0; i < rng.int(1, 5); i++) {
          const v = (rng.next() - 0.5) * 1e6;
          addSample(m, v, 1_581_425_000_000 + rng.int(0, 59_999));
          sk?.add(v);
        }
        const cell = { key: seriesKey(text(rng, 20), rng.next() < 0.3 ? null : text(rng, 4), dims, null), windowStart: 1_581_425_000_000 + 60_000 * rng.int(0, 3), moments: m };
        return sk === undefined ? cell : { ...cell, sketch: sk };
      });
      const where = round % 2 === 0 ? undefined : { topic: `t.${text(rng, 5)}`, partition: rng.int(0, 99) };
      const b = f.format(cells, where);
      for (let i = 0; i < b.rows.length; i++) {
        if (b.json!(i) !== JSON.stringify(b.rows[i])) t.fail(`json(${i}) differs: ${b.json!(i)}`);
        if (b.identityKey!(i) !== rowIdentityKey(b.rows[i]!)) t.fail(`identityKey(${i}) differs: ${b.identityKey!(i)}`);
        const out = Buffer.alloc(4096);
        const end = b.identityKeyInto!(i, out, 7);
        if (!out.subarray(7, end).equals(Buffer.from(b.identityKey!(i)))) t.fail(`identityKeyInto(${i}) differs: ${out.subarray(7, end).toString()}`);
        if (b.identityKeyInto!(i, out, out.length - 8) !== -1) t.fail(`identityKeyInto(${i}) wrote past the room it had`);
        checked++;
      }
      t.equal(b.ndjson(), b.rows.map((_, i) => `${b.json!(i)}\n`).join(''), 'ndjson is the json lines');
    }
    t.equal(checked, 1000);
  });
}

t.test('duration_start/end equal toISOString of the event times (cached minutes, fractional ms, both ends of the range)', async (t) => {
  const rng = new Rng(23);
  const f = new RowFormatter(60_000, 1000);
  const times = [0, 999.9, 59_999, 60_000, 253_402_300_799_999, 951_782_400_000 /* 2000-02-29 */];
  for (let i = 0; i < 500; i++) times.push(rng.int(0, 253_402_300_799) * 1000 + rng.int(0, 999) + (rng.next() < 0.2 ? rng.next() : 0));
  const cells = times.map((ts, i) => {
    const m = emptyMoments();
    addSample(m, i, ts);
    return { key: seriesKey(`m${i}`, null, [], null), windowStart: Math.floor(ts / 60_000) * 60_000, moments: m };
  });
  const b = f.format(cells);
  for (let i = 0; i < times.length; i++) {
    const want = new Date(times[i]!).toISOString();
    if (b.rows[i]!.duration_start !== want || b.rows[i]!.duration_end !== want) t.fail(`${times[i]}: ${b.rows[i]!.duration_start} != ${want}`);
  }
  t.pass(`${times.length} event times`);
});

t.test('ndjsonBytes() is the UTF-8 of ndjson(), topics and names in any script included', async (t) => {
  const rng = new Rng(31);
  const f = new RowFormatter(60_000, 1000, [50]);
  for (let round = 0; round < 20; round++) {
    const cells = Array.from({ length: 30 }, () => {
      const m = emptyMoments();
      const sketch = new Sketch(0.01);
      for (let i = 0; i < rng.int(1, 4); i++) {
        const v = (rng.next() - 0.5) * 1e4;
        addSample(m, v, 1_581_425_000_000 + rng.int(0, 59_999));
        sketch.add(v);
      }
      const dims: Array<[string, string]> = [[text(rng, 5), text(rng, 9)]];
      return { key: seriesKey(text(rng, 12), rng.next() < 0.5 ? null : text(rng, 3), dims, null), windowStart: 1_581_425_000_000, moments: m, sketch };
    });
    const where = round % 2 === 0 ? undefined : { topic: round % 4 === 1 ? `t.${text(rng, 5)}` : 'plain', partition: round };
    const b = f.format(cells, where);
    t.equal(b.ndjsonBytes!().toString('utf8'), b.ndjson(), `round ${round}`);
  }
});
