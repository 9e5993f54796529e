// The fast path's signature cache: a signature finds exactly the leaf it was learnt with, byte for
// byte (absent and empty fields apart), also when many long fields differ only where the sampled
// hash does not look (the cache then hashes every byte), and it stays within its byte bound.
import t from 'tap';
import type { SeriesLeaf } from '../../src/core/intern.js';
import { SignatureCache } from '../../src/core/scan/signatures.js';

function leaf(id: number): SeriesLeaf {
  return { id, key: String(id), overLimitBytes: -1, parts: [], stamp: -1, local: -1, lastWindow: NaN, lastCell: -1 };
}

/** A message buffer holding the fields' texts one after another, and their spans (null = absent). */
function fields(texts: ReadonlyArray<string | null>): { buf: Uint8Array; spans: Int32Array } {
  const spans = new Int32Array(2 * texts.length).fill(-1);
  let all = 'xx';
  texts.forEach((s, i) => {
    if (s === null) return;
    spans[2 * i] = all.length;
    all += s;
    spans[2 * i + 1] = all.length;
    all += ' ';
  });
  return { buf: Buffer.from(all), spans };
}

t.test('a signature finds its own leaf and nothing else', async (t) => {
  const c = new SignatureCache(1 << 20);
  const learnt: Array<[Array<string | null>, SeriesLeaf]> = [];
  const variants: Array<Array<string | null>> = [['"a"', '{"x":1}'], ['"a"', '{"x":2}'], ['"a"', null], ['"a"', '""'], [null, '"a"'], ['"a{"x":1}"', null], ['"a"', '{"x":1} ']];
  for (const [i, v] of variants.entries()) {
    const f = fields(v);
    t.equal(c.find(f.buf, f.spans), undefined, `${JSON.stringify(v)}: unknown before`);
    const l = leaf(i);
    c.learn(f.buf, f.spans, l);
    learnt.push([v, l]);
  }
  for (const [v, l] of learnt) {
    const f = fields(v);
    t.equal(c.find(f.buf, f.spans), l, `${JSON.stringify(v)}: its own leaf`);
  }
  t.equal(c.size, variants.length, 'one signature each');
});

t.test('long fields that differ where the samples do not look: all found, after a switch to hashing every byte', async (t) => {
  const c = new SignatureCache(1 << 22);
  const n = 200;
  // 100 bytes: the samples read words at 0, 6, 12, ...; byte 4 is never sampled.
  const text = (i: number): string => `"${'v'.repeat(3)}${String.fromCharCode(0x21 + (i % 90))}${String.fromCharCode(0x21 + Math.floor(i / 90))}${'w'.repeat(93)}"`;
  for (let i = 0; i < n; i++) {
    const f = fields(['"name"', text(i)]);
    if (c.find(f.buf, f.spans) === undefined) c.learn(f.buf, f.spans, leaf(i));
  }
  let right = 0;
  for (let i = 0; i < n; i++) {
    const f = fields(['"name"', text(i)]);
    if (c.find(f.buf, f.spans)?.id === i) right++;
  }
  t.equal(right, n, `${n} of ${n} found with their own leaf`);
});

t.test('the cache stays within its byte bound (it starts over)', async (t) => {
  const max = 64 * 1024;
  const c = new SignatureCache(max);
  let most = 0;
  for (let i = 0; i < 5000; i++) {
    const f = fields([`"n${i}"`, `"${'d'.repeat(i % 300)}"`]);
    if (c.find(f.buf, f.spans) === undefined) c.learn(f.buf, f.spans, leaf(i));
    most = Math.max(most, c.bytes);
  }
  t.ok(most <= max, `at most ${most} of ${max} bytes held`);
  t.ok(c.size > 0, `${c.size} signatures held at the end`);
});
