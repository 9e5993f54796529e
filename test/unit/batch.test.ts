// BatchBuilder writes messages in parts into shared memory; the generator source uses it to write each
// point without building its string. The bytes must be exactly what the strings would have been.
import t from 'tap';
import { BatchBuilder, MAX_SEPARATOR_BYTES, messageBytes, messageRange } from '../../src/core/batch.js';
import { Decoder } from '../../src/core/decode.js';
import { settings } from '../fixtures/gen.js';
import { GeneratorSource, generatePoints } from '../../src/sources/generator.js';

t.test('appendUint writes integers as JSON does; anything else falls back to String()', async (t) => {
  const xs = [0, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 1_581_424_933_080, 99_999_999, 100_000_000, 300_000_007, Number.MAX_SAFE_INTEGER, 1.5, -1, 1e21];
  const b = new BatchBuilder(8);
  for (const x of xs) {
    b.appendUint(x);
    b.end();
  }
  const { data, offsets } = b.take();
  t.ok(data.buffer instanceof SharedArrayBuffer, 'the batch is shared memory, handed over without a copy');
  t.same(xs.map((_, i) => data.toString('utf8', offsets[i], offsets[i + 1])), xs.map(String));
});

t.test('append in parts, push and pushString make the same messages', async (t) => {
  const b = new BatchBuilder(4);
  b.append(Buffer.from('{"a":'));
  b.appendUint(12);
  b.append(Buffer.from('xx}yy'), 2, 3);
  b.end();
  b.pushString('{"é":1}');
  b.push(Buffer.from('[1,2,3]'), 1, 6);
  const { data, offsets } = b.take();
  t.same([0, 1, 2].map((i) => data.toString('utf8', offsets[i], offsets[i + 1])), ['{"a":12}', '{"é":1}', '1,2,3']);
  t.equal(b.count, 0, 'take() starts a new batch');
});

t.test('the generator source writes exactly the bytes of generatePoints, batch by batch', async (t) => {
  const cfg = { count: 20_000, metrics: 700, hosts: 3, intervalMs: 10_000, startMs: 1_581_424_933_000, seed: 3, rate: 0 };
  const want = [...generatePoints(cfg)].map((p) => p.json);
  const got: string[] = [];
  for await (const batch of new GeneratorSource(cfg, 1500, 1 << 20).batches()) {
    for (let i = 0; i + 1 < batch.offsets.length; i++) got.push(batch.data.toString('utf8', batch.offsets[i], batch.offsets[i + 1]));
  }
  t.equal(got.length, want.length);
  t.ok(got.every((g, i) => g === want[i]), 'every message equal');
});

t.test('long parts (copied natively) and Latin-1 strings, across growth of the buffer', async (t) => {
  const b = new BatchBuilder(8);
  const long = Buffer.from(`[${'x'.repeat(300)}]`);
  const want: string[] = [];
  for (let i = 0; i < 50; i++) {
    b.appendLatin1('{"k":"');
    b.append(long, 1, 1 + (i * 7) % 300);
    b.appendLatin1('"}');
    b.end();
    want.push(`{"k":"${'x'.repeat((i * 7) % 300)}"}`);
  }
  const { data, offsets } = b.take();
  t.same(want.map((_, i) => data.toString('latin1', offsets[i], offsets[i + 1])), want);
});

/** Spans of src's trimmed, non-empty lines, as the splitter reports them. */
function lineSpans(src: Buffer): Int32Array {
  const out: number[] = [];
  let s = 0;
  for (let nl = src.indexOf(10); nl !== -1; s = nl + 1, nl = src.indexOf(10, s)) {
    let a = s;
    let e = nl;
    while (a < e && (src[a] === 0x20 || src[a] === 0x0d)) a++;
    while (e > a && (src[e - 1] === 0x20 || src[e - 1] === 0x0d)) e--;
    if (e > a) out.push(a, e);
  }
  return Int32Array.from(out);
}

t.test('pushSpans copies a run of lines at once: each message is its line, what separates them is no message\'s', async (t) => {
  const src = Buffer.from('  {"a":1}\r\n\n {"bb":22}  \n{"ccc":333}\n\n   \n{"d":4}\n');
  const spans = lineSpans(src);
  const b = new BatchBuilder(4);
  b.pushString('{"before":0}');
  t.equal(b.pushSpans(src, spans, 0, spans.length, 100, 1 << 20), spans.length, 'the whole run');
  b.pushString('{"after":5}');
  const batch = b.take();
  const want = ['{"before":0}', '{"a":1}', '{"bb":22}', '{"ccc":333}', '{"d":4}', '{"after":5}'];
  t.same(want.map((_, i) => messageBytes(batch, i).toString()), want);
  t.ok(batch.ends !== undefined, 'ends given');
  t.ok(batch.data.length > want.join('').length, 'the separators were copied with the run');
  for (let i = 0; i < want.length; i++) {
    t.ok(batch.offsets[i]! <= batch.ends![i]! && batch.ends![i]! <= batch.offsets[i + 1]!, `message ${i} inside its slot`);
    t.match(batch.data.toString('latin1', batch.ends![i]!, batch.offsets[i + 1]!), /^\s*$/, `only whitespace after message ${i}`);
  }
  t.equal(batch.offsets[want.length], batch.data.length);
  const next = b.take();
  t.equal(next.ends, undefined, 'a batch without a run has no ends');
});

t.test('pushSpans stops at maxCount or maxBytes and the next call goes on where it stopped', async (t) => {
  const lines = Array.from({ length: 50 }, (_, i) => `{"i":${i},"pad":"${'x'.repeat(i % 7)}"}`);
  const src = Buffer.from(lines.map((l, i) => (i % 3 === 0 ? `  ${l}\r\n` : `${l}\n\n`)).join(''));
  const spans = lineSpans(src);
  for (const [maxCount, maxBytes] of [[7, 1 << 20], [1000, 100], [1, 1], [3, 64]] as const) {
    const b = new BatchBuilder(16);
    const got: string[] = [];
    let batches = 0;
    for (let k = 0; k < spans.length; ) {
      k = b.pushSpans(src, spans, k, spans.length, maxCount, maxBytes);
      if (b.count >= maxCount || b.bytes >= maxBytes || k >= spans.length) {
        const batch = b.take();
        batches++;
        const n = batch.offsets.length - 1;
        t.ok(n <= maxCount, `at most ${maxCount} messages`);
        // A batch over maxBytes (of messages) only by its last one: the check is push, then test.
        let before = 0;
        for (let i = 0; i + 1 < n; i++) before += batch.ends![i]! - batch.offsets[i]!;
        t.ok(before < maxBytes, 'full only by its last message');
        for (let i = 0; i < n; i++) got.push(messageBytes(batch, i).toString());
      }
    }
    t.same(got, lines, `maxCount ${maxCount} maxBytes ${maxBytes}: every line once, in order (${batches} batches)`);
  }
});

t.test('messageRange: a part of a batch with ends reads the same messages, without the separator after its last', async (t) => {
  const src = Buffer.from('{"a":1}\n  {"b":2}\r\n{"c":3}\n\n{"d":4}\n');
  const spans = lineSpans(src);
  const b = new BatchBuilder(4);
  b.pushSpans(src, spans, 0, spans.length, 100, 1 << 20);
  const batch = b.take();
  for (let lo = 0; lo < 4; lo++) {
    for (let hi = lo + 1; hi <= 4; hi++) {
      const r = messageRange(batch.offsets, batch.ends, lo, hi);
      const part = { data: batch.data.subarray(r.base, r.end), offsets: r.offsets, ...(r.ends === undefined ? {} : { ends: r.ends }) };
      const msgs = Array.from({ length: hi - lo }, (_, i) => messageBytes(part, i).toString());
      t.same(msgs, Array.from({ length: hi - lo }, (_, i) => messageBytes(batch, lo + i).toString()), `${lo}..${hi}`);
      t.equal(part.offsets[hi - lo], part.data.length, 'the part ends with its last message');
    }
  }
  const plain = new BatchBuilder(4);
  for (const m of ['{"x":1}', '{"y":2}']) plain.pushString(m);
  const p = plain.take();
  const r = messageRange(p.offsets, p.ends, 1, 2);
  t.same([r.base, r.end, [...r.offsets], r.ends], [7, 14, [0, 7], undefined], 'a batch without ends: a part without ends');
});

t.test('the decoder reads messages with separators between them as it reads them back to back', async (t) => {
  const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ metric: { name: `m${i % 9}`, dimensions: { host: `h${i % 4}` }, timestamp: 1_700_000_000_000 + i * 1000, value: i / 7 } }));
  lines[17] = '{"metric": broken';
  lines[40] = '  ';
  const src = Buffer.from(lines.map((l, i) => (i % 2 === 0 ? `${l}\n` : `${l} \r\n \n`)).join(''));
  const spans = lineSpans(src);
  const gapped = new BatchBuilder(64);
  gapped.pushSpans(src, spans, 0, spans.length, 1000, 1 << 24);
  const g = gapped.take();
  const plain = new BatchBuilder(64);
  for (let k = 0; k < spans.length; k += 2) plain.push(src, spans[k]!, spans[k + 1]!);
  const p = plain.take();
  t.ok(g.ends !== undefined && p.ends === undefined);
  const a = new Decoder(settings()).decodeBytes(g.data, g.offsets, 1_700_000_500_000, g.ends);
  const b = new Decoder(settings()).decodeBytes(p.data, p.offsets, 1_700_000_500_000);
  t.same({ ...a, decodeSeconds: 0 }, { ...b, decodeSeconds: 0 }, 'the same result, rejects and their message indexes included');
  t.equal(a.ok, 198);
  // Without ends the separators would be read as part of the messages: the fast scanner's exact
  // end check is what ends spare.
  t.not(g.data.length, p.data.length);
});

t.test('a long gap between lines is not copied: a file of records apart by a megabyte of blanks keeps small batches', async (t) => {
  const gap = ' '.repeat(70_000);
  const lines = Array.from({ length: 12 }, (_, i) => `{"i":${i}}`);
  const src = Buffer.from(lines.map((l, i) => `${l}${i % 2 === 0 ? `\n${gap}\n\n` : '\r\n'}`).join(''));
  const spans = lineSpans(src);
  const b = new BatchBuilder(16);
  t.equal(b.pushSpans(src, spans, 0, spans.length, 1000, 1 << 20), spans.length);
  const batch = b.take();
  t.same(lines.map((_, i) => messageBytes(batch, i).toString()), lines);
  const messageBytesAll = lines.join('').length;
  t.ok(batch.data.length <= messageBytesAll + lines.length * MAX_SEPARATOR_BYTES, `${batch.data.length} bytes for ${messageBytesAll} of messages`);
});
