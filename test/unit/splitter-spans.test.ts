// The file source takes a chunk's whole NDJSON lines from the splitter as spans (onLines) and copies
// them with BatchBuilder.pushSpans; every other message goes through onMessage one view at a time.
// Differential: for random NDJSON (whitespace, CRLF, blank lines, lines over maxBytes, a last line
// without newline) cut into chunks of every kind, the span path, the one-message-at-a-time path and
// a model written from the rules (trim, drop blank lines, cut a long line to maxBytes + 1 bytes) give
// the same messages byte for byte, and the file source the same batches as push-then-check would.
import t from 'tap';
import { messageBytes, messageCount } from '../../src/core/batch.js';
import { StreamSource } from '../../src/sources/file.js';
import { JsonSplitter } from '../../src/sources/splitter.js';
import { Rng } from '../fixtures/gen.js';

const SP = 0x20, TAB = 0x09, CR = 0x0d, LF = 0x0a;
const isWs = (b: number): boolean => b === SP || b === TAB || b === CR || b === LF;

/** Bytes as a latin1 string: one char per byte, so comparisons are byte-exact. */
const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1');

/** The messages NDJSON input holds, from the rules rather than the splitter's code. */
function model(input: Buffer, maxBytes: number): string[] {
  const out: string[] = [];
  let from = 0;
  while (from < input.length) {
    let nl = input.indexOf(LF, from);
    if (nl === -1) nl = input.length;
    let s = from;
    let e = nl;
    while (s < e && isWs(input[s]!)) s++;
    while (e > s && isWs(input[e - 1]!)) e--;
    // Content past maxBytes + 1: the first maxBytes + 1 bytes, enough for the decoder to say too_large.
    if (e - s > maxBytes + 1) e = s + maxBytes + 1;
    if (e > s) out.push(latin1(input.subarray(s, e)));
    from = nl + 1;
  }
  return out;
}

function ws(rng: Rng, max: number): string {
  let s = '';
  for (let n = rng.int(0, max); n > 0; n--) s += rng.pick([' ', '\t', '\r']);
  return s;
}

/** Random NDJSON: never `[` first (that is array input), lines of any length around maxBytes. */
function ndjson(rng: Rng, maxBytes: number): Buffer {
  const lines: string[] = [];
  for (let n = rng.int(0, 40); n > 0; n--) {
    const kind = rng.below(10);
    if (kind === 0) {
      lines.push(ws(rng, 4)); // blank
      continue;
    }
    const len = kind === 1 ? rng.int(maxBytes - 2, maxBytes + 3) : kind === 2 ? rng.int(maxBytes, 3 * maxBytes) : rng.int(1, maxBytes);
    let body = '{';
    while (body.length < len) body += rng.pick(['"a":', '1', 'é', ' ', '\t', '\r', '[', ']', '}', ',', 'xyz', '\\"']);
    lines.push(ws(rng, 3) + body + ws(rng, 3));
  }
  let text = '';
  for (const l of lines) text += l + (rng.below(3) === 0 ? '\r\n' : '\n');
  if (rng.below(3) === 0) text += ws(rng, 2) + '{"last":' + 'z'.repeat(rng.int(0, 2 * maxBytes)) + '}';
  return Buffer.from(text, 'utf8');
}

/** Cuts input into chunks: whole, single bytes, tiny, small, or around the line length. */
function chunking(rng: Rng, input: Buffer, maxBytes: number): Buffer[] {
  const kind = rng.below(5);
  const out: Buffer[] = [];
  for (let i = 0; i < input.length; ) {
    const n = kind === 0 ? input.length : kind === 1 ? 1 : kind === 2 ? rng.int(1, 7) : kind === 3 ? rng.int(1, 4 * maxBytes) : rng.int(0, 600);
    out.push(input.subarray(i, i + n));
    i += n;
  }
  return out;
}

/**
 * Splits the chunks, each pushed from one buffer overwritten right after push returns (as the file
 * source's read buffers are), with or without onLines; every message copied as it comes.
 */
function split(chunks: readonly Buffer[], maxBytes: number, spans: boolean): { msgs: string[]; spanCalls: number } {
  const msgs: string[] = [];
  let spanCalls = 0;
  const onLines = (chunk: Buffer, sp: Int32Array, count: number): void => {
    spanCalls++;
    for (let k = 0; k < count; k++) msgs.push(latin1(chunk.subarray(sp[2 * k]!, sp[2 * k + 1]!)));
  };
  const sp = new JsonSplitter(maxBytes, (m) => msgs.push(latin1(m)), spans ? onLines : undefined);
  const buf = Buffer.alloc(Math.max(1, ...chunks.map((c) => c.length)));
  for (const c of chunks) {
    c.copy(buf);
    sp.push(buf.subarray(0, c.length));
    buf.fill('"}x\\n');
  }
  sp.end();
  return { msgs, spanCalls };
}

t.test('onLines spans and onMessage give the messages of the model, for random NDJSON and chunkings', async (t) => {
  const rng = new Rng(20261202);
  const bad: string[] = [];
  let spanCalls = 0;
  let messages = 0;
  for (let run = 0; run < 3000; run++) {
    const maxBytes = rng.int(16, 120);
    const input = ndjson(rng, maxBytes);
    const chunks = chunking(rng, input, maxBytes);
    const want = model(input, maxBytes);
    const one = split(chunks, maxBytes, false).msgs;
    const many = split(chunks, maxBytes, true);
    spanCalls += many.spanCalls;
    messages += want.length;
    const same = (a: string[]): boolean => a.length === want.length && a.every((m, i) => m === want[i]);
    if (!same(one) || !same(many.msgs)) {
      bad.push(JSON.stringify({ run, maxBytes, input: input.toString('latin1'), chunks: chunks.map((c) => c.length), want, one, spans: many.msgs }));
      if (bad.length >= 3) break;
    }
  }
  t.same(bad, [], 'every run: the same messages, byte for byte, in the same order');
  t.ok(messages > 10_000 && spanCalls > 1000, `the span path was taken (${spanCalls} calls for ${messages} messages)`);
});

t.test('lines of one chunk beyond the span buffer come in several onLines calls, in order', async (t) => {
  const lines = Array.from({ length: 10_000 }, (_, i) => `{"i":${i}}`);
  const got: string[] = [];
  let calls = 0;
  const sp = new JsonSplitter(1024, (m) => got.push(latin1(m)), (chunk, spans, count) => {
    calls++;
    for (let k = 0; k < count; k++) got.push(latin1(chunk.subarray(spans[2 * k]!, spans[2 * k + 1]!)));
  });
  sp.push(Buffer.from(lines.join('\n') + '\n'));
  sp.end();
  t.equal(got.length, lines.length);
  t.ok(got.every((m, i) => m === lines[i]), 'every line, in order');
  t.ok(calls > 1, `more than one call (${calls})`);
});

/** Chunks from two buffers taken in turn, each overwritten as soon as the source asks for the next. */
async function* reusedChunks(chunks: readonly Buffer[]): AsyncGenerator<Buffer> {
  const size = Math.max(1, ...chunks.map((c) => c.length));
  const bufs = [Buffer.alloc(size), Buffer.alloc(size)];
  let k = 0;
  for (const c of chunks) {
    const b = bufs[k]!;
    k ^= 1;
    c.copy(b);
    const view = b.subarray(0, c.length);
    yield view;
    view.fill('"}x\\n');
  }
}

t.test('the file source makes the batches push-then-check makes of the model messages', async (t) => {
  const rng = new Rng(7);
  const bad: string[] = [];
  for (let run = 0; run < 600; run++) {
    const maxBytes = rng.int(16, 120);
    const input = ndjson(rng, maxBytes);
    const chunks = chunking(rng, input, maxBytes);
    const opts = { batchSize: rng.int(1, 30), batchMaxBytes: rng.int(16, 1500), maxMessageBytes: maxBytes };
    // The batches a batch-per-message rule makes: cut after the message that fills it.
    const want: string[][] = [];
    let cur: string[] = [];
    let bytes = 0;
    for (const m of model(input, maxBytes)) {
      cur.push(m);
      bytes += m.length;
      if (cur.length >= opts.batchSize || bytes >= opts.batchMaxBytes) {
        want.push(cur);
        cur = [];
        bytes = 0;
      }
    }
    if (cur.length > 0) want.push(cur);
    const got: string[][] = [];
    for await (const b of new StreamSource('test', () => reusedChunks(chunks), null, opts).batches()) {
      const msgs: string[] = [];
      for (let i = 0; i < messageCount(b); i++) msgs.push(latin1(messageBytes(b, i)));
      if (b.offsets[0] !== 0 || b.offsets[messageCount(b)] !== b.data.length) msgs.push('<offsets do not span data>');
      got.push(msgs);
    }
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      bad.push(JSON.stringify({ run, opts, input: input.toString('latin1'), chunks: chunks.map((c) => c.length), want, got }));
      if (bad.length >= 3) break;
    }
  }
  t.same(bad, [], 'every run: the same batches, message for message');
});
