// The fast path's pieces against what they stand in for: the byte scanner accepts only text that
// JSON.parse accepts (and accepts plain JSON), reads every number as JSON.parse does (bit for bit,
// -0 included), and the ISO reader gives parseIsoTimestamp's milliseconds for every text it takes.
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { RecordError, parseIsoTimestamp } from '../../src/core/record.js';
import { isoMs } from '../../src/core/scan/formats.js';
import { JsonScanner, MAX_SCAN_DEPTH } from '../../src/core/scan/json.js';

const SEED = Number(process.env['PROPERTY_SEED'] ?? '20261201');

function check<Ts extends [unknown, ...unknown[]]>(t: Test, what: string, numRuns: number, prop: fc.IProperty<Ts>): void {
  const r = fc.check(prop, { numRuns, seed: SEED });
  if (r.failed) t.fail(what, { counterexample: r.counterexample, error: String(r.errorInstance), seed: r.seed });
  else t.pass(`${what} (${r.numRuns} cases)`);
}

/** Whether the scanner takes the whole text as one JSON value. */
function scans(text: string | Buffer): boolean {
  const b = typeof text === 'string' ? Buffer.from(text) : text;
  const s = new JsonScanner();
  s.reset(b, b.length);
  const p = s.value(s.ws(0), 0);
  return p >= 0 && s.ws(p) === b.length;
}

function parses(b: Buffer): boolean {
  try {
    JSON.parse(b.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

const digits = (min: number, max: number): fc.Arbitrary<string> => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const numberText = fc.tuple(fc.boolean(), fc.oneof(fc.constant('0'), fc.tuple(fc.constantFrom(...'123456789'), digits(0, 25)).map(([a, b]) => a + b)),
  fc.option(digits(1, 25)), fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 4))))
  .map(([neg, int, frac, exp]) => `${neg ? '-' : ''}${int}${frac === null ? '' : `.${frac}`}${exp === null ? '' : exp.join('')}`);

t.test('numbers: the scanner reads every JSON number as JSON.parse does', async (t) => {
  check(t, 'number texts', 30_000, fc.property(numberText, (text) => {
    const b = Buffer.from(text);
    const s = new JsonScanner();
    s.reset(b, b.length);
    return s.number(0) === b.length && Object.is(s.num, JSON.parse(text));
  }));
  for (const text of ['-0', '0.0e0', '-0.0', '1e400', '-1e400', '1e-400', '9007199254740993', '9007199254740992.5', '3e23', '1e22', '1e23', '7e-23', '123456789012345678901234567890e-10', '2.2250738585072011e-308', '4.9e-324', '1.7976931348623157e308']) {
    const b = Buffer.from(text);
    const s = new JsonScanner();
    s.reset(b, b.length);
    t.ok(s.number(0) === b.length && Object.is(s.num, JSON.parse(text)), `${text} reads as ${JSON.parse(text)}`);
  }
  for (const text of ['01', '-', '1.', '.5', '+1', '1e', '1e+', '-a', '0x10', 'NaN', 'Infinity']) t.notOk(scans(text), `${text} is not a JSON number`);
});

const plain = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.constantFrom('true', 'false', 'null', '0', '-1.5e3', '""', '"a b"', '"é😀"'), numberText, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }).map((xs) => `[${(xs as string[]).join(',')}]`),
  object: fc.array(fc.tuple(fc.string({ unit: 'grapheme-ascii', maxLength: 5 }).filter((k) => !/["\\\u0000-\u001f]/.test(k)), tie('value')), { maxLength: 4 })
    .map((ms) => `{${(ms as Array<[string, string]>).map(([k, v]) => `"${k}" : ${v}`).join(' ,\n')}}`),
})).value as fc.Arbitrary<string>;

const HOSTILE = [0x00, 0x1f, 0x80, 0xbf, 0xc0, 0xed, 0xf5, 0xff, 0x5c, 0x22, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x20, 0x2d, 0x2e, 0x65, 0x30];

t.test('validation: the scanner takes plain JSON, and nothing JSON.parse refuses', async (t) => {
  check(t, 'plain JSON is taken', 5_000, fc.property(plain, (text) => scans(text) && parses(Buffer.from(text))));
  check(t, 'mutated JSON: taken only when JSON.parse takes it', 30_000, fc.property(plain, fc.array(fc.tuple(fc.nat(), fc.constantFrom(...HOSTILE), fc.nat(2)), { minLength: 1, maxLength: 3 }), (text, edits) => {
    let b = Buffer.from(text);
    for (const [at, byte, how] of edits) {
      const i = at % (b.length + 1);
      if (how === 0) b = Buffer.concat([b.subarray(0, i), Buffer.from([byte]), b.subarray(i)]);
      else if (how === 1) b = Buffer.concat([b.subarray(0, i), b.subarray(i + 1)]);
      else b = b.subarray(0, i);
    }
    // Bytes >= 0x80 are the caller's to check (isUtf8); the scanner only flags them.
    const s = new JsonScanner();
    s.reset(b, b.length);
    const p = s.value(s.ws(0), 0);
    const taken = p >= 0 && s.ws(p) === b.length;
    return !taken || parses(b);
  }));
  t.ok(scans(`${'['.repeat(MAX_SCAN_DEPTH)}${']'.repeat(MAX_SCAN_DEPTH)}`), `${MAX_SCAN_DEPTH} levels are scanned`);
  t.notOk(scans(`${'['.repeat(MAX_SCAN_DEPTH + 1)}${']'.repeat(MAX_SCAN_DEPTH + 1)}`), 'one more level is left to JSON.parse');
  t.notOk(scans('"a\\nb"'), 'an escape is left to JSON.parse');
  t.notOk(scans('"a\tb"'), 'a raw control character is not JSON');
  t.notOk(scans('{"a":1,}'), 'a trailing comma is not JSON');
  t.notOk(scans('{"a" 1}'), 'a missing colon is not JSON');
  t.notOk(scans('[1 2]'), 'a missing comma is not JSON');
  t.notOk(scans('{"a":1}{'), 'text after the value is not JSON');
  t.notOk(scans(Buffer.from('{"a":1}\u00a0', 'latin1')), 'a non-JSON space is not whitespace');
});

/** string() as a byte at a time reads it: the position after the closing quote, or -1; and the high flag. */
function refString(b: Uint8Array, p: number, end: number): { at: number; high: boolean } {
  let high = false;
  for (let i = p + 1; i < end; i++) {
    const c = b[i]!;
    if (c === 0x22) return { at: i + 1, high };
    if (c === 0x5c || c < 0x20) return { at: -1, high };
    if (c >= 0x80) high = true;
  }
  return { at: -1, high };
}

t.test('strings: read four bytes a step, the same as one byte at a time', async (t) => {
  // Plain letters with the bytes that stop a string (quote, backslash, control characters, >= 0x80)
  // at every offset of a word, and an end that may fall inside a word: bytes past it are never read.
  const byte = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).filter((c) => c !== 0x22 && c !== 0x5c) },
    { weight: 1, arbitrary: fc.constantFrom(0x22, 0x5c, 0x00, 0x1f, 0x0a, 0x7f, 0x80, 0xc3, 0xff, 0x21, 0x23, 0x5b, 0x5d, 0x20) });
  check(t, 'random strings', 30_000, fc.property(fc.array(byte, { maxLength: 40 }), fc.nat(44), fc.nat(3), (body, cut, lead) => {
    const b = new Uint8Array(lead + 1 + body.length + 4).fill(0x22);
    b.set(body, lead + 1);
    const end = Math.min(b.length, lead + 1 + cut);
    const s = new JsonScanner();
    s.reset(b, end);
    const at = s.string(lead);
    const ref = refString(b, lead, end);
    return at === ref.at && (at < 0 || s.high === ref.high);
  }));
  const s = new JsonScanner();
  const b = Buffer.from('"abcdefgh"');
  s.reset(b, 8);
  t.equal(s.string(0), -1, 'a closing quote past the end is not read');
  s.reset(b, b.length);
  t.equal(s.string(0), b.length, 'a string of two words');
  const long = Buffer.from(`"${'x'.repeat(1001)}\\u0041"`);
  s.reset(long, long.length);
  t.equal(s.string(0), -1, 'a backslash after a thousand plain bytes leaves it to JSON.parse');
});

function slowIso(text: string): number {
  try {
    return parseIsoTimestamp(text, 'timestamp');
  } catch (err) {
    if (err instanceof RecordError) return NaN;
    throw err;
  }
}

const isoText = fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 25 }),
  fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }), fc.option(digits(0, 11)), fc.constantFrom('', 'Z', 'z', '+00:00', '-0130', ' '), fc.constantFrom('T', ' ', 't'))
  .map(([y, mo, d, h, mi, s, frac, zone, sep]) => {
    const p = (n: number, w: number): string => String(n).padStart(w, '0');
    return `${p(y, 4)}-${p(mo, 2)}-${p(d, 2)}${sep}${p(h, 2)}:${p(mi, 2)}:${p(s, 2)}${frac === null ? '' : `.${frac}`}${zone}`;
  });

t.test('ISO timestamps: the fast reader gives parseIsoTimestamp\'s ms for every text it takes', async (t) => {
  let taken = 0;
  check(t, 'ISO texts', 30_000, fc.property(isoText, (text) => {
    const b = Buffer.from(text);
    const fast = isoMs(b, 0, b.length);
    if (Number.isNaN(fast)) return true;
    taken++;
    return fast === slowIso(text);
  }));
  t.ok(taken > 1000, `${taken} of the texts were in the fast reader's form`);
  for (const text of ['2024-01-01T00:00:00.5', '2024-02-29T23:59:59.999999Z', '1970-01-01T00:00:00', '9999-12-31T23:59:59.123456789']) {
    const b = Buffer.from(text);
    t.equal(isoMs(b, 0, b.length), slowIso(text), `${text}`);
  }
  for (const text of ['2023-02-29T00:00:00', '2024-01-01T24:00:00', '1969-12-31T23:59:59', '2024-01-01T00:00:00+01:00', '2024-01-01 00:00:00', '2024-01-01T00:00:00.1234567890']) {
    const b = Buffer.from(text);
    t.ok(Number.isNaN(isoMs(b, 0, b.length)), `${text} is left to the slow path`);
  }
});
