// Element-level resynchronisation in top-level JSON arrays: a broken element costs
// that element only, whatever the chunking, and the next element boundary is found again.
import t from 'tap';
import { MAX_DEPTH, JsonSplitter } from '../../src/sources/splitter.js';

const el = (i: number): string => JSON.stringify({ metric: { name: `m${i % 5}`, dimensions: { host: 'a' }, timestamp: 1_700_000_000_000 + i, value: i } });

/** Splits text fed in chunks of the given sizes (cycled); returns the messages. */
function split(text: string, sizes: readonly number[], maxBytes = 1 << 20): { msgs: string[]; broken: number } {
  const msgs: string[] = [];
  const s = new JsonSplitter(maxBytes, (m) => msgs.push(m.toString('utf8')));
  const buf = Buffer.from(text);
  for (let i = 0, k = 0; i < buf.length; k++) {
    const n = sizes[k % sizes.length]!;
    s.push(Buffer.from(buf.subarray(i, i + n)));
    i += n;
  }
  s.end();
  return { msgs, broken: s.broken };
}

const CHUNKINGS: ReadonlyArray<readonly number[]> = [[1 << 20], [1], [7, 3, 1], [64], [4096]];

function check(t: Tap, label: string, elems: string[], brokenAt: number, sep = ','): void {
  const text = `[${elems.join(sep)}]`;
  for (const sizes of CHUNKINGS) {
    const { msgs } = split(text, sizes);
    t.equal(msgs.length, elems.length, `${label}, chunks ${sizes.join('/')}: one message per element`);
    let same = 0;
    for (let i = 0; i < elems.length; i++) if (i !== brokenAt && msgs[i] === elems[i]) same++;
    t.equal(same, elems.length - 1, 'every other element is intact');
    t.throws(() => JSON.parse(msgs[brokenAt]!), 'the broken element stays broken (malformed_json)');
  }
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0];

t.test('regression: a stray } in element 2 does not end the array', async (t) => {
  const elems = Array.from({ length: 2000 }, (_, i) => el(i));
  elems[1] = `${elems[1]!}}`;
  check(t, 'stray } after the element', elems, 1);
  const mid = Array.from({ length: 50 }, (_, i) => el(i));
  mid[1] = mid[1]!.replace('"dimensions":{"host":"a"}', '"dimensions":{"host":"a"}}');
  // `}` closing the metric object early leaves the element itself unbalanced up to a stray `}` at depth 1.
  const { msgs } = split(`[${mid.join(',')}]`, [1 << 20]);
  t.equal(msgs.length, 50, 'a stray } inside the element costs that element');
  t.same(msgs.slice(2), mid.slice(2));
});

t.test('regression: an unterminated string in element 2 (one line, and one element per line)', async (t) => {
  const elems = Array.from({ length: 2000 }, (_, i) => el(i));
  elems[1] = elems[1]!.replace('"m1"', '"m1');
  check(t, 'unterminated string, one line', elems, 1);
  check(t, 'unterminated string, one element per line', elems, 1, ',\n');
  const last = elems.map((e, i) => (i === 1 ? e.replace('"value":1}', '"value":"1}') : e));
  check(t, 'unterminated string at the end of the element', last, 1);
});

t.test('mismatched brackets and too deep nesting cost one element', async (t) => {
  const elems = Array.from({ length: 30 }, (_, i) => el(i));
  elems[3] = elems[3]!.replace('"host":"a"}', '"host":"a"]');
  check(t, 'a ] closing an object', elems, 3);
  const deep = Array.from({ length: 10 }, (_, i) => el(i));
  deep[4] = `{"a":${'['.repeat(MAX_DEPTH + 5)}}`;
  check(t, `nesting deeper than ${MAX_DEPTH}`, deep, 4);
});

t.test('several broken elements in a row, and a broken last element', async (t) => {
  const elems = Array.from({ length: 20 }, (_, i) => el(i));
  for (const i of [5, 6, 7]) elems[i] = elems[i]!.replace(`"m${i % 5}"`, `"m${i % 5}`);
  elems[19] = elems[19]!.replace('"m4"', '"m4');
  for (const sizes of CHUNKINGS) {
    const { msgs, broken } = split(`[${elems.join(',')}]`, sizes);
    t.equal(msgs.length, 20, `chunks ${sizes.join('/')}: 20 messages`);
    t.same(msgs, elems, 'the 16 good ones intact, each broken one as it was');
    t.ok(broken >= 4, 'the splitter counts the broken elements');
  }
});

t.test('a broken element larger than the limit is cut to maxBytes + 1 bytes and the next element is found', async (t) => {
  const elems = [el(0), `{"metric":{"name":"x${'y'.repeat(5000)}`, el(2), el(3)];
  elems[1] = `${elems[1]!}","value":1}}`.replace('"x', '"x\n');
  for (const sizes of CHUNKINGS) {
    const { msgs } = split(`[${elems.join(',')}]`, sizes, 1000);
    t.equal(msgs.length, 4, `chunks ${sizes.join('/')}`);
    t.equal(Buffer.byteLength(msgs[1]!), 1001, 'the broken oversized element keeps maxBytes + 1 bytes');
    t.same([msgs[0], msgs[2], msgs[3]], [elems[0], elems[2], elems[3]]);
  }
});
