import t from 'tap';
import { JsonSplitter } from '../../src/sources/splitter.js';
import { Rng } from '../fixtures/gen.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const BIG = 1 << 30;

/** Bytes as a latin1 string: one char per byte, so comparisons are byte-exact and diffs readable. */
const bytes = (b: Buffer | string): string => (typeof b === 'string' ? Buffer.from(b, 'utf8') : b).toString('latin1');

/** Runs the splitter over the chunks; returns the messages (byte-exact, copied) and whether end() was needed. */
function run(chunks: readonly Buffer[], maxBytes = BIG): string[] {
  const out: string[] = [];
  const sp = new JsonSplitter(maxBytes, (m) => out.push(bytes(Buffer.from(m))));
  for (const c of chunks) sp.push(c);
  sp.end();
  return out;
}

/**
 * As run(), but every chunk goes through one buffer that is overwritten (with bytes that would
 * change any message) right after push returns: the file source reads into its buffers that way.
 */
function runReused(chunks: readonly Buffer[], maxBytes = BIG): string[] {
  const out: string[] = [];
  const sp = new JsonSplitter(maxBytes, (m) => out.push(bytes(Buffer.from(m))));
  const buf = Buffer.alloc(Math.max(1, ...chunks.map((c) => c.length)));
  for (const c of chunks) {
    c.copy(buf);
    sp.push(buf.subarray(0, c.length));
    buf.fill('"}x\\n');
  }
  sp.end();
  return out;
}

function cutAt(input: Buffer, cuts: readonly number[]): Buffer[] {
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of cuts) {
    out.push(input.subarray(prev, c));
    prev = c;
  }
  out.push(input.subarray(prev));
  return out;
}

/** Copies each chunk into its own fresh buffer so no chunk shares memory with the input. */
const fresh = (chunks: readonly Buffer[]): Buffer[] => chunks.map((c) => Buffer.from(c));

/**
 * The central property: whatever the chunking, the message sequence is identical to `expected`.
 * Checks one chunk, every single cut position, 1-byte chunks, empty chunks interleaved, random multi-chunk
 * splits, and (for short inputs) every pair of cut positions. One assertion per chunking family.
 * Expected strings are UTF-8 text; expected Buffers are raw bytes (for cuts inside a character).
 */
function checkAllSplits(t: TapTest, input: Buffer | string, expected: ReadonlyArray<string | Buffer>, maxBytes = BIG, seed = 1): void {
  const buf = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  // Strings are UTF-8 text, Buffers raw bytes; both compared as byte-exact latin1 strings.
  const exp = expected.map((e) => bytes(e));
  const n = buf.length;
  t.same(run([buf], maxBytes), exp, 'one chunk');

  let firstBad: { cut: number; got: string[] } | null = null;
  for (let k = 0; k <= n; k++) {
    const got = run(fresh(cutAt(buf, [k])), maxBytes);
    if (firstBad === null && JSON.stringify(got) !== JSON.stringify(exp)) firstBad = { cut: k, got };
  }
  t.same(firstBad, null, `every single cut position 0..${n} gives the same messages`);

  const ones: Buffer[] = [];
  for (let i = 0; i < n; i++) ones.push(Buffer.from(buf.subarray(i, i + 1)));
  t.same(run(ones, maxBytes), exp, '1-byte chunks');

  const withEmpties: Buffer[] = [Buffer.alloc(0)];
  for (const c of ones) withEmpties.push(c, Buffer.alloc(0));
  t.same(run(withEmpties, maxBytes), exp, '1-byte chunks with empty chunks interleaved');

  const rng = new Rng(seed);
  let badRandom: { cuts: number[]; got: string[] } | null = null;
  for (let r = 0; r < 200; r++) {
    const k = 1 + rng.below(Math.min(12, Math.max(1, n)));
    const cuts = Array.from({ length: k }, () => rng.below(n + 1)).sort((a, b) => a - b);
    const got = run(fresh(cutAt(buf, cuts)), maxBytes);
    if (badRandom === null && JSON.stringify(got) !== JSON.stringify(exp)) badRandom = { cuts, got };
  }
  t.same(badRandom, null, '200 random multi-chunk splits give the same messages');

  let badReused: { cuts: number[]; got: string[] } | null = null;
  for (let r = 0; r < 100; r++) {
    const k = 1 + rng.below(Math.min(12, Math.max(1, n)));
    const cuts = Array.from({ length: k }, () => rng.below(n + 1)).sort((a, b) => a - b);
    const got = runReused(cutAt(buf, cuts), maxBytes);
    if (badReused === null && JSON.stringify(got) !== JSON.stringify(exp)) badReused = { cuts, got };
  }
  t.same(badReused, null, '100 random multi-chunk splits through one buffer overwritten after each push give the same messages');

  if (n <= 160) {
    let badPair: { cuts: number[]; got: string[] } | null = null;
    for (let a = 1; a < n && badPair === null; a++) {
      for (let b = a; b < n; b++) {
        const got = run(fresh(cutAt(buf, [a, b])), maxBytes);
        if (JSON.stringify(got) !== JSON.stringify(exp)) {
          badPair = { cuts: [a, b], got };
          break;
        }
      }
    }
    t.same(badPair, null, 'every pair of cut positions gives the same messages');
  }
}

// ---------- random JSON generation ----------

const NASTY = [
  ',', '[', ']', '{', '}', '"', '\\', '\\\\', '\\"', '"\\', ':', ' ', '\n', '\t', '\r', 'é', '中文', '😀', '\u2028', '\u0000',
  'a,b', '[1,2]', '{"a":1}', '}]', '],', '\\u0041', '/', "'",
];

function randString(rng: Rng): string {
  const parts: string[] = [];
  const k = rng.below(6);
  for (let i = 0; i < k; i++) parts.push(rng.next() < 0.6 ? rng.pick(NASTY) : String.fromCharCode(97 + rng.below(26)));
  // Often end a string with a backslash or an (escaped) quote: the classic boundary mistakes.
  const tail = rng.below(4);
  if (tail === 0) parts.push('\\');
  else if (tail === 1) parts.push('\\\\');
  else if (tail === 2) parts.push('"');
  return parts.join('');
}

function randValue(rng: Rng, depth: number): unknown {
  const r = rng.below(depth > 3 ? 6 : 9);
  switch (r) {
    case 0: return rng.below(2000) - 1000;
    case 1: return rng.next() * 1e6;
    case 2: return rng.pick([true, false, null]);
    case 3:
    case 4:
    case 5: return randString(rng);
    case 6:
    case 7: {
      const o: Record<string, unknown> = {};
      const k = rng.below(4);
      for (let i = 0; i < k; i++) o[randString(rng)] = randValue(rng, depth + 1);
      return o;
    }
    default: {
      const k = rng.below(4);
      return Array.from({ length: k }, () => randValue(rng, depth + 1));
    }
  }
}

const WS = ['', ' ', '  ', '\n', '\r\n', '\t', ' \n\t '];

/** A top-level array of the elements with random whitespace around every element and comma. */
function arrayText(rng: Rng, elems: readonly string[]): string {
  let s = '[' + rng.pick(WS);
  elems.forEach((e, i) => {
    if (i > 0) s += rng.pick(WS) + ',' + rng.pick(WS);
    s += e;
  });
  return s + rng.pick(WS) + ']';
}

// ---------- NDJSON ----------

t.test('NDJSON with LF', async (t) => {
  const lines = ['{"a":1}', '{"b":[1,2,3]}', '"str"', '42', '[1,2]', '{"c":{"d":"e,f"}}'];
  checkAllSplits(t, lines.join('\n') + '\n', lines);
});

t.test('NDJSON with CRLF: no CR is left on any message', async (t) => {
  const lines = ['{"a":1}', '{"b":"x y"}', '{"c":[{"d":null}]}'];
  const input = lines.join('\r\n') + '\r\n';
  checkAllSplits(t, input, lines);
  for (const m of run([Buffer.from(input)])) t.notMatch(m, /\r/, `no CR in ${m}`);
});

t.test('NDJSON: blank and whitespace-only lines are skipped', async (t) => {
  const input = '\n\n{"a":1}\n\n   \n\t\n\r\n \r\n{"b":2}\n\n\n{"c":3}\n  \t  \n';
  checkAllSplits(t, input, ['{"a":1}', '{"b":2}', '{"c":3}']);
  t.same(run([Buffer.from('\n\n   \n\t\r\n')]), [], 'only blank lines: no messages');
  t.same(run([]), [], 'no input: no messages');
});

t.test('NDJSON: surrounding whitespace on a line is trimmed, inner whitespace kept', async (t) => {
  const input = '  {"a": 1 ,  "b" : "x  y"}  \t\n\t{"c":2}\r\n';
  checkAllSplits(t, input, ['{"a": 1 ,  "b" : "x  y"}', '{"c":2}']);
});

t.test('NDJSON: the last line without a newline is emitted only at end()', async (t) => {
  const out: string[] = [];
  const sp = new JsonSplitter(BIG, (m) => out.push(bytes(Buffer.from(m))));
  sp.push(Buffer.from('{"a":1}\n{"b":2}\n{"c":'));
  t.same(out, ['{"a":1}', '{"b":2}'], 'complete lines emitted during push');
  sp.push(Buffer.from('3}'));
  t.same(out, ['{"a":1}', '{"b":2}'], 'unterminated last line held back');
  sp.end();
  t.same(out, ['{"a":1}', '{"b":2}', '{"c":3}'], 'emitted at end()');
  checkAllSplits(t, '{"a":1}\n{"b":2}\n{"c":3}', ['{"a":1}', '{"b":2}', '{"c":3}']);
  checkAllSplits(t, '{"a":1}\r\n{"b":2}\r', ['{"a":1}', '{"b":2}']);
});

t.test('NDJSON: brackets, braces and commas in lines are not structure', async (t) => {
  const lines = ['{"a":"[,]"}', '{"b":"}"}', '{"c":"\\"]"}', '{"d":"\\\\"}', '{"e":["[",{"f":"{"}]}'];
  checkAllSplits(t, lines.join('\n') + '\n', lines);
});

t.test('NDJSON generated: messages equal JSON.stringify of each record', async (t) => {
  const rng = new Rng(7);
  const recs = Array.from({ length: 40 }, () => ({ k: randString(rng), v: randValue(rng, 0) }));
  const lines = recs.map((r) => JSON.stringify(r));
  const input = lines.map((l) => rng.pick(['', ' ', '\t']) + l + rng.pick(['', ' ', '\r'])).join('\n') + rng.pick(['', '\n']);
  checkAllSplits(t, input, lines, BIG, 11);
});

// ---------- top-level arrays ----------

t.test('array: nested objects and arrays are single elements', async (t) => {
  const elems = ['{"a":{"b":{"c":[1,[2,[3,{}]]]}}}', '[[[]]]', '[]', '{}', '[{"x":[{}]},{"y":[[1],[2]]}]', '{"a":[1,2],"b":{"c":3}}'];
  checkAllSplits(t, '[' + elems.join(',') + ']', elems);
});

t.test('array: strings with , [ ] { } escaped quotes and trailing backslashes', async (t) => {
  const values: unknown[] = [
    'a,b', '[', ']', '{', '}', '],[', '}{', '"', 'say "hi"', '\\', 'ends with backslash\\', 'two\\\\', '\\"', '"\\',
    { k: '\\' }, { '\\': '"' }, ['\\', '"', ','], { a: 'x\\', b: ']' }, '', { '': '' },
  ];
  const elems = values.map((v) => JSON.stringify(v));
  // Sanity: the texts really contain the tricky escapes.
  t.ok(elems.includes('"ends with backslash\\\\"'), 'a string that ends in an escaped backslash');
  t.ok(elems.includes('"\\\\\\""'), 'a string with an escaped backslash then an escaped quote');
  checkAllSplits(t, '[' + elems.join(',') + ']', elems);
  checkAllSplits(t, '[ ' + elems.join(' ,\n ') + ' ]\n', elems);
});

t.test('array: primitives (numbers, true, false, null, strings)', async (t) => {
  const elems = ['1', '-2.5e10', 'true', 'false', 'null', '"x"', '0', '""'];
  checkAllSplits(t, '[' + elems.join(',') + ']', elems);
});

t.test('array: whitespace around elements is trimmed (spaces, tabs, CR, LF)', async (t) => {
  const input = '[ \n\t{"a": 1} \r\n ,\t\t"b c" ,\n\n 3 \n\r ,[ 1 , 2 ] ]';
  checkAllSplits(t, input, ['{"a": 1}', '"b c"', '3', '[ 1 , 2 ]']);
});

t.test('array: leading whitespace before the top-level array', async (t) => {
  checkAllSplits(t, ' \r\n\t [1,2]', ['1', '2']);
});

t.test('array: pretty-printed (JSON.stringify with indent) keeps inner layout of elements', async (t) => {
  const value = [{ a: 1, b: [1, 2] }, 'x', [{ c: 'd' }]];
  const input = JSON.stringify(value, null, 2);
  const expected = value.map((v) => JSON.stringify(v, null, 2).split('\n').join('\n  '));
  checkAllSplits(t, input, expected);
  t.same(run([Buffer.from(input)]).map((m) => JSON.parse(m) as unknown), value, 'each element parses back');
});

t.test('array: empty arrays give no messages', async (t) => {
  checkAllSplits(t, '[]', []);
  checkAllSplits(t, '[ ]', []);
  checkAllSplits(t, ' [\n\t] \n', []);
  checkAllSplits(t, '[][][ ]\n[]', []);
  checkAllSplits(t, '[][1][]', ['1']);
});

t.test('array: multiple arrays back to back', async (t) => {
  checkAllSplits(t, '[1,2][3]  [4,{"a":[5]}]\n[ "6" ]\r\n[7]', ['1', '2', '3', '4', '{"a":[5]}', '"6"', '7']);
});

t.test('array followed by NDJSON lines', async (t) => {
  const input = '[{"a":1},{"b":2}]\n{"c":3}\n{"d":[4,5]}\n\n{"e":"]"}';
  checkAllSplits(t, input, ['{"a":1}', '{"b":2}', '{"c":3}', '{"d":[4,5]}', '{"e":"]"}']);
});

t.test('array: trailing comma and empty slots produce no empty messages', async (t) => {
  checkAllSplits(t, '[1,2,]', ['1', '2']);
  checkAllSplits(t, '[1, ,2]', ['1', '2']);
});

t.test('array generated: every message equals JSON.stringify of its element', async (t) => {
  for (let seed = 1; seed <= 6; seed++) {
    const rng = new Rng(seed * 101);
    const values = Array.from({ length: 25 }, () => randValue(rng, 0));
    const elems = values.map((v) => JSON.stringify(v));
    const input = rng.pick(WS) + arrayText(rng, elems) + rng.pick(WS);
    checkAllSplits(t, input, elems, BIG, seed);
    t.same(run([Buffer.from(input)]).map((m) => JSON.parse(Buffer.from(m, 'latin1').toString('utf8')) as unknown), values, `seed ${seed}: messages parse back to the values`);
  }
});

t.test('generated mixed documents (arrays back to back, then NDJSON)', async (t) => {
  for (let seed = 1; seed <= 10; seed++) {
    const rng = new Rng(seed * 7919);
    let input = '';
    const expected: string[] = [];
    const arrays = 1 + rng.below(3);
    for (let a = 0; a < arrays; a++) {
      const elems = Array.from({ length: rng.below(6) }, () => JSON.stringify(randValue(rng, 0)));
      input += arrayText(rng, elems) + rng.pick(WS);
      expected.push(...elems);
    }
    if (rng.next() < 0.7) {
      input += '\n';
      const lines = Array.from({ length: 1 + rng.below(5) }, () => JSON.stringify({ v: randValue(rng, 0) }));
      input += lines.join(rng.pick(['\n', '\r\n', '\n\n'])) + rng.pick(['', '\n']);
      expected.push(...lines);
    }
    checkAllSplits(t, input, expected, BIG, seed);
  }
});

// ---------- UTF-8 ----------

t.test('multi-byte UTF-8 split across chunks is preserved byte-exact', async (t) => {
  const elems = ['"é"', '"中文字"', '"😀😀"', '{"k😀":"v\\u00e9é"}', '"\u2028"', '"ÿ"'];
  const input = Buffer.from('[' + elems.join(',') + ']', 'utf8');
  checkAllSplits(t, input, elems);
  const out: Buffer[] = [];
  const sp = new JsonSplitter(BIG, (m) => out.push(Buffer.from(m)));
  for (let i = 0; i < input.length; i++) sp.push(Buffer.from(input.subarray(i, i + 1)));
  sp.end();
  t.same(out.map((b) => b.toString('utf8')), elems, '1-byte chunks decode back to the same UTF-8 text');
  t.ok(out.every((b, i) => b.equals(Buffer.from(elems[i]!, 'utf8'))), 'byte-equal to the UTF-8 encoding');
  const lines = ['{"a":"😀"}', '{"b":"中"}'];
  checkAllSplits(t, lines.join('\n'), lines);
});

// ---------- oversized messages ----------

t.test('array: oversized element is cut to exactly maxBytes + 1 bytes and the rest continue', async (t) => {
  const maxBytes = 16;
  const big = JSON.stringify({ s: 'abcdefghijklmnopqrstuvwxyz0123456789', t: ['],[', '}{', '\\', '"'], u: { v: ',' } });
  t.ok(Buffer.byteLength(big) > maxBytes * 3, 'the element is well over the limit');
  const elems = ['{"a":1}', big, '{"b":2}', '"' + 'x'.repeat(maxBytes - 2) + '"', '"' + 'y'.repeat(maxBytes - 1) + '"', big, '3'];
  const expected = elems.map((e) => (Buffer.byteLength(e) > maxBytes ? e.slice(0, maxBytes + 1) : e));
  t.equal(expected[1]!.length, maxBytes + 1, 'cut length');
  t.equal(expected[3]!.length, maxBytes, 'exactly maxBytes is kept whole');
  t.equal(expected[4]!.length, maxBytes + 1, 'maxBytes + 1 is kept whole (it is its own cut)');
  checkAllSplits(t, '[' + elems.join(',') + ']', expected, maxBytes);
  checkAllSplits(t, '[ ' + elems.join(' , ') + ' ]\n{"after":true}\n', [...expected, '{"after":true}'], maxBytes);
});

t.test('array: the structure inside the skipped part of an oversized element is still tracked', async (t) => {
  // Past the cut there are string-quoted "]" and "," and nested closers: skipping must not lose the state.
  const maxBytes = 20;
  const big = '{"pad":"' + 'p'.repeat(30) + '","tricky":"],\\"],[{","n":[[{"x":"\\\\"}]]}';
  JSON.parse(big);
  const elems = [big, '{"next":1}', big, '[2]'];
  const expected = elems.map((e) => (e.length > maxBytes ? e.slice(0, maxBytes + 1) : e));
  checkAllSplits(t, '[' + elems.join(',') + ']', expected, maxBytes);
});

t.test('array: many oversized elements in random chunking (generated)', async (t) => {
  const rng = new Rng(4242);
  const maxBytes = 24;
  const values = Array.from({ length: 40 }, () => randValue(rng, 0));
  // Only elements whose cut does not end in whitespace here (that case is the separate regression test below).
  const elems = values
    .map((v) => JSON.stringify(v))
    .filter((e) => !/\s$/.test(Buffer.from(e, 'utf8').subarray(0, maxBytes + 1).toString('latin1')));
  t.ok(elems.length >= 30, 'most generated elements kept');
  const expected = elems.map((e) => {
    const b = Buffer.from(e, 'utf8');
    return b.length > maxBytes ? b.subarray(0, maxBytes + 1) : b;
  });
  t.ok(elems.some((e) => Buffer.byteLength(e) > maxBytes), 'some elements are oversized');
  t.ok(elems.some((e) => Buffer.byteLength(e) <= maxBytes), 'some elements fit');
  checkAllSplits(t, '[' + elems.join(',') + ']', expected, maxBytes, 5);
});

t.test('NDJSON: oversized line is cut to exactly maxBytes + 1 bytes and the next lines are intact', async (t) => {
  const maxBytes = 10;
  const long = '{"a":"' + 'z'.repeat(40) + '"}';
  const lines = ['{"a":1}', long, '{"b":2}', '{"c":"45"}', '{"d":"456"}', long];
  const expected = lines.map((l) => (l.length > maxBytes ? l.slice(0, maxBytes + 1) : l));
  checkAllSplits(t, lines.join('\n') + '\n', expected, maxBytes);
  checkAllSplits(t, lines.join('\r\n') + '\r\n', expected, maxBytes);
  checkAllSplits(t, lines.join('\n'), expected, maxBytes);
});

t.test('NDJSON: a line of exactly maxBytes followed by CRLF is kept whole', async (t) => {
  const maxBytes = 10;
  const line = '{"c":"45"}';
  t.equal(line.length, maxBytes);
  checkAllSplits(t, line + '\r\n' + line + '\r\n', [line, line], maxBytes);
});

t.test('regression: oversized element whose cut ends in whitespace is shorter than maxBytes + 1 (trimmed after cutting)', async (t) => {
  // Array element '"ab    cd"' (10 bytes), maxBytes 4: the cut is '"ab  ' (5 bytes); it is then trimmed to
  // '"ab' (3 bytes), which is under the limit, so the decoder calls it malformed_json instead of too_large.
  checkAllSplits(t, '["ab    cd",1]', ['"ab  ', '1'], 4);
  // NDJSON: '{"a": 1, "b": 2}' (16 bytes), maxBytes 5: the cut '{"a": ' must not be trimmed to '{"a":' = maxBytes bytes.
  // The next line (7 bytes) is over the limit too and is cut to 6 bytes.
  checkAllSplits(t, '{"a": 1, "b": 2}\n{"c":3}\n', ['{"a": ', '{"c":3'], 5);
  // Whitespace past the cut does not make a message too large.
  checkAllSplits(t, '{"c":3}      \n{"d":4}\n', ['{"c":3}', '{"d":4}'], 7);
});

t.test('regression: NDJSON line (after the first) with leading whitespace is cut although the message fits maxBytes', async (t) => {
  // '    {"a":1}' : the message '{"a":1}' is 7 bytes <= maxBytes 8, but the leading spaces count toward the
  // limit, so the line is cut to 9 raw bytes '    {"a":' and emitted as '{"a":' (malformed).
  // (The first line is fine: leading whitespace before the first message is skipped while detecting the mode.)
  checkAllSplits(t, '{"x":0}\n    {"a":1}\n{"b":2}\n', ['{"x":0}', '{"a":1}', '{"b":2}'], 8);
  // Worse: with more leading whitespace than maxBytes the whole message silently disappears.
  checkAllSplits(t, '{"x":0}\n' + ' '.repeat(20) + '{"a":1}\n{"b":2}\n', ['{"x":0}', '{"a":1}', '{"b":2}'], 8);
});

// ---------- unterminated input ----------

t.test('unterminated array: the partial element is emitted at end()', async (t) => {
  const out: string[] = [];
  const sp = new JsonSplitter(BIG, (m) => out.push(bytes(Buffer.from(m))));
  sp.push(Buffer.from('[{"a":1}, {"b": [2, "x'));
  t.same(out, ['{"a":1}'], 'complete element emitted while pushing');
  sp.end();
  t.same(out, ['{"a":1}', '{"b": [2, "x'], 'partial element emitted at end()');

  checkAllSplits(t, '[1, {"b": [2, "x', ['1', '{"b": [2, "x']);
  checkAllSplits(t, '[1, "a\\"],\\', ['1', '"a\\"],\\']);
  checkAllSplits(t, '[1, 2 ', ['1', '2']);
  checkAllSplits(t, '[1, 2, ', ['1', '2']);
  checkAllSplits(t, '[', []);
  checkAllSplits(t, '[{"a":1}]\n[{"b":', ['{"a":1}', '{"b":']);
});

t.test('unterminated oversized array element is emitted cut at end()', async (t) => {
  const maxBytes = 8;
  checkAllSplits(t, '[1,{"aaaaaaaaaaaaaaaaaaaa', ['1', '{"aaaaaaa'], maxBytes);
});
