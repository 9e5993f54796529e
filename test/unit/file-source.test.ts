import t from 'tap';
import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { messageBytes, messageCount } from '../../src/core/batch.js';
import { StreamstatsError } from '../../src/errors.js';
import { StreamSource, type StreamSourceOptions } from '../../src/sources/file.js';
import type { SourceBatch } from '../../src/sources/types.js';

/** The subtest type (the last overload of t.test takes just the callback). */
type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

const MB = 1 << 20;

function record(i: number): Record<string, unknown> {
  // Varying lengths, non-ASCII and structure characters inside strings.
  return { i, name: `m${i % 97}`, tags: { k: 'v,]}' + 'x'.repeat(i % 37) }, s: i % 5 === 0 ? 'é😀"\\' : 'plain', v: i * 0.5 };
}

async function collect(src: StreamSource, onBatch?: (b: SourceBatch, index: number) => void): Promise<SourceBatch[]> {
  const out: SourceBatch[] = [];
  for await (const b of src.batches()) {
    onBatch?.(b, out.length);
    out.push(b);
  }
  return out;
}

function messagesOf(batches: readonly SourceBatch[]): string[] {
  const out: string[] = [];
  for (const b of batches) for (let i = 0; i < messageCount(b); i++) out.push(messageBytes(b, i).toString('utf8'));
  return out;
}

/** Structural checks of every batch; one assertion per property over all batches. */
function checkBatches(t: TapTest, batches: readonly SourceBatch[], opts: StreamSourceOptions): void {
  const problems: string[] = [];
  batches.forEach((b, k) => {
    const o = b.offsets;
    const n = o.length - 1;
    if (b.lane !== 0) problems.push(`batch ${k}: lane ${b.lane}`);
    if (!(o instanceof Uint32Array)) problems.push(`batch ${k}: offsets not a Uint32Array`);
    if (n < 1) problems.push(`batch ${k}: empty batch`);
    if (o[0] !== 0) problems.push(`batch ${k}: offsets[0]=${o[0]}`);
    if (o[n] !== b.data.length) problems.push(`batch ${k}: last offset ${o[n]} != data.length ${b.data.length}`);
    for (let i = 0; i < n; i++) {
      if (o[i + 1]! < o[i]!) problems.push(`batch ${k}: offsets decrease at ${i}`);
      if (o[i + 1] === o[i]) problems.push(`batch ${k}: empty message at ${i}`);
    }
    if (n > opts.batchSize) problems.push(`batch ${k}: ${n} messages > batchSize ${opts.batchSize}`);
    // "A batch is cut once it holds BATCH_MAX_BYTES" of messages (not what separates them: Batch.ends):
    // only the last message may take it over the limit.
    let beforeLast = 0;
    for (let i = 0; i + 1 < n; i++) beforeLast += (b.ends?.[i] ?? o[i + 1]!) - o[i]!;
    if (beforeLast >= opts.batchMaxBytes) problems.push(`batch ${k}: ${beforeLast} bytes before its last message >= batchMaxBytes`);
    if (b.data.length > opts.batchMaxBytes + opts.maxMessageBytes + 1) problems.push(`batch ${k}: ${b.data.length} bytes`);
    // Every batch but the last was cut for a reason.
    if (k < batches.length - 1 && n < opts.batchSize && b.data.length < opts.batchMaxBytes) {
      problems.push(`batch ${k}: cut early (${n} messages, ${b.data.length} bytes)`);
    }
  });
  t.same(problems, [], `${batches.length} batches: offsets consistent, sizes within batchSize/batchMaxBytes`);
}

async function checkProgressToEnd(t: TapTest, src: StreamSource, size: number): Promise<SourceBatch[]> {
  const p0 = src.progress();
  t.same(p0, { done: 0, total: size, unit: 'bytes' }, 'progress before reading: 0 of the file size');
  let prev = 0;
  const bad: string[] = [];
  const batches = await collect(src, () => {
    const p = src.progress();
    if (p.done < prev) bad.push(`done went back ${prev} -> ${p.done}`);
    if (p.done > size) bad.push(`done ${p.done} > size ${size}`);
    if (p.total !== size) bad.push(`total ${p.total}`);
    prev = p.done;
  });
  t.same(bad, [], 'progress monotonic, bounded by total, total fixed while reading');
  t.same(src.progress(), { done: size, total: size, unit: 'bytes' }, 'progress at the end: done == total == file size');
  return batches;
}

t.test('NDJSON file: all messages in order, batches of batchSize', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'in.ndjson');
  const n = 10_000;
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify(record(i)));
  // Mixed LF / CRLF, some blank lines, last line without a newline.
  let text = '';
  lines.forEach((l, i) => {
    text += l + (i % 3 === 0 ? '\r\n' : '\n');
    if (i % 1000 === 0) text += '\n   \n';
  });
  text = text.replace(/\r?\n$/, '');
  writeFileSync(path, text);
  const size = statSync(path).size;
  const opts = { batchSize: 100, batchMaxBytes: 1 << 30, maxMessageBytes: MB };
  const src = StreamSource.file(path, opts);
  t.equal(src.describe, `file:${path}`, 'describe names the file');
  const batches = await checkProgressToEnd(t, src, size);
  checkBatches(t, batches, opts);
  t.equal(batches.length, n / 100, 'exactly n / batchSize batches');
  t.ok(batches.every((b) => messageCount(b) === 100), 'every batch holds exactly batchSize messages');
  const msgs = messagesOf(batches);
  t.equal(msgs.length, n, 'message count');
  t.same(msgs, lines, 'messages equal the lines, in order, byte-exact');
});

t.test('NDJSON file: batches cut by batchMaxBytes', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'in.ndjson');
  const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify(record(i)));
  writeFileSync(path, lines.join('\n') + '\n');
  const opts = { batchSize: 100_000, batchMaxBytes: 4096, maxMessageBytes: 1024 };
  const batches = await checkProgressToEnd(t, StreamSource.file(path, opts), statSync(path).size);
  checkBatches(t, batches, opts);
  t.ok(batches.length > 50, `many byte-limited batches (${batches.length})`);
  t.ok(batches.slice(0, -1).every((b) => b.data.length >= opts.batchMaxBytes), 'every batch but the last reached batchMaxBytes');
  t.same(messagesOf(batches), lines, 'messages in order');
});

t.test('NDJSON file of several read chunks: lines across chunk ends, one line longer than two chunks', async (t) => {
  // The source reads 1 MiB at a time into two buffers taken in turn: a line that starts in one
  // chunk and ends two chunks later must still come out whole.
  const dir = t.testdir();
  const path = join(dir, 'in.ndjson');
  const lines = Array.from({ length: 30_000 }, (_, i) => JSON.stringify(record(i)));
  lines.splice(9_000, 0, JSON.stringify({ big: 'é'.repeat(1_200_000), end: 1 }));
  writeFileSync(path, lines.join('\n') + '\n');
  const size = statSync(path).size;
  t.ok(size > 4 * MB, `file spans several chunks (${size} bytes)`);
  const opts = { batchSize: 1000, batchMaxBytes: 4 * MB, maxMessageBytes: 3 * MB };
  const batches = await checkProgressToEnd(t, StreamSource.file(path, opts), size);
  checkBatches(t, batches, opts);
  t.same(messagesOf(batches), lines, 'messages equal the lines, in order, byte-exact');
});

t.test('large top-level array file (50,000 elements, several MB)', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'big.json');
  const n = 50_000;
  const elems = Array.from({ length: n }, (_, i) => JSON.stringify({ ...record(i), pad: 'p'.repeat(40 + (i % 50)) }));
  // Whitespace between elements, as pretty printers leave it.
  writeFileSync(path, '[\n  ' + elems.join(',\n  ') + '\n]\n');
  const size = statSync(path).size;
  t.ok(size > 5 * MB, `file is several MB (${size} bytes), so it is read in several chunks`);

  for (const opts of [
    { batchSize: 1000, batchMaxBytes: 1 << 30, maxMessageBytes: MB },
    { batchSize: 1000, batchMaxBytes: 65_536, maxMessageBytes: 4096 },
    { batchSize: 7, batchMaxBytes: MB, maxMessageBytes: 4096 },
  ]) {
    await t.test(`batchSize ${opts.batchSize}, batchMaxBytes ${opts.batchMaxBytes}`, async (t) => {
      const batches = await checkProgressToEnd(t, StreamSource.file(path, opts), size);
      checkBatches(t, batches, opts);
      const msgs = messagesOf(batches);
      t.equal(msgs.length, n, 'every element arrives');
      let firstBad = -1;
      for (let i = 0; i < n && firstBad < 0; i++) if (msgs[i] !== elems[i]) firstBad = i;
      t.equal(firstBad, -1, 'every message equals JSON.stringify of its element, in order');
      const data = batches.reduce((s, b) => s + b.data.length, 0);
      t.equal(data, elems.reduce((s, e) => s + Buffer.byteLength(e), 0), 'total message bytes = sum of element bytes');
    });
  }
});

t.test('mixed file: arrays back to back, then NDJSON', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'mixed.json');
  const a = Array.from({ length: 300 }, (_, i) => JSON.stringify(record(i)));
  const b = Array.from({ length: 200 }, (_, i) => JSON.stringify(record(1000 + i)));
  const c = Array.from({ length: 100 }, (_, i) => JSON.stringify(record(2000 + i)));
  writeFileSync(path, `[${a.join(',')}]\n[ ${b.join(' , ')} ]\n${c.join('\n')}\n`);
  const opts = { batchSize: 64, batchMaxBytes: MB, maxMessageBytes: MB };
  const batches = await checkProgressToEnd(t, StreamSource.file(path, opts), statSync(path).size);
  checkBatches(t, batches, opts);
  t.same(messagesOf(batches), [...a, ...b, ...c], 'all messages in order');
});

t.test('oversized messages in a file are cut to maxMessageBytes + 1 and the rest arrive', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'over.json');
  const maxMessageBytes = 64;
  const elems = Array.from({ length: 300 }, (_, i) => JSON.stringify({ i, s: 'q'.repeat(i % 3 === 0 ? 200 : 10) }));
  writeFileSync(path, '[' + elems.join(',') + ']');
  const opts = { batchSize: 50, batchMaxBytes: 1024, maxMessageBytes };
  const batches = await collect(StreamSource.file(path, opts));
  checkBatches(t, batches, opts);
  const expected = elems.map((e) => (e.length > maxMessageBytes ? e.slice(0, maxMessageBytes + 1) : e));
  t.same(messagesOf(batches), expected, 'oversized elements cut, the others whole, in order');
});

t.test('empty file and a file with only whitespace / an empty array', async (t) => {
  const dir = t.testdir();
  const opts = { batchSize: 10, batchMaxBytes: MB, maxMessageBytes: MB };
  for (const [name, body] of [['empty', ''], ['blank', '\n \r\n\t\n'], ['emptyarray', ' [ ] \n']] as const) {
    const path = join(dir, name);
    writeFileSync(path, body);
    const src = StreamSource.file(path, opts);
    const batches = await collect(src);
    t.equal(batches.length, 0, `${name}: no batches`);
    t.same(src.progress(), { done: body.length, total: body.length, unit: 'bytes' }, `${name}: progress`);
  }
});

t.test('StreamSource.file on a missing path throws STREAMSTATS_SOURCE naming SOURCE=file:<path>', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'does-not-exist.ndjson');
  let caught: unknown;
  try {
    StreamSource.file(path, { batchSize: 10, batchMaxBytes: MB, maxMessageBytes: MB });
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof StreamstatsError, 'a StreamstatsError');
  const e = caught as StreamstatsError;
  t.equal(e.code, 'STREAMSTATS_SOURCE', 'code');
  t.ok(e.message.includes(`SOURCE=file:${path}`), `message names the source: ${e.message}`);
  t.ok(e.cause instanceof Error && (e.cause as NodeJS.ErrnoException).code === 'ENOENT', 'cause is the ENOENT error');
});

t.test('stop() ends iteration early', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'big.json');
  const n = 50_000;
  const elems = Array.from({ length: n }, (_, i) => JSON.stringify({ ...record(i), pad: 'p'.repeat(60) }));
  writeFileSync(path, '[' + elems.join(',') + ']');
  const size = statSync(path).size;
  t.ok(size > 3 * MB, 'file spans several read chunks');
  const opts = { batchSize: 100, batchMaxBytes: MB, maxMessageBytes: MB };
  const src = StreamSource.file(path, opts);
  const batches = await collect(src, (_b, k) => {
    if (k === 0) {
      src.stop();
      src.stop(); // idempotent
    }
  });
  const msgs = messagesOf(batches);
  t.ok(batches.length >= 1, 'the first batch arrived');
  t.ok(msgs.length < n, `stopped before the end (${msgs.length} of ${n} messages)`);
  t.ok(msgs.length <= n / 2, 'stopped within the first read chunks, well before the end');
  t.same(msgs, elems.slice(0, msgs.length), 'what arrived is an in-order prefix');
  const p = src.progress();
  t.ok(p.done < size, `progress shows the file was not read to the end (${p.done} of ${size})`);
  // A fresh source on the same file still reads everything (stop is per source).
  const all = messagesOf(await collect(StreamSource.file(path, opts)));
  t.equal(all.length, n, 'a new source reads the whole file');
});

t.test('breaking out of the loop early closes cleanly', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'in.ndjson');
  writeFileSync(path, Array.from({ length: 1000 }, (_, i) => JSON.stringify(record(i))).join('\n'));
  const src = StreamSource.file(path, { batchSize: 10, batchMaxBytes: MB, maxMessageBytes: MB });
  let seen = 0;
  for await (const b of src.batches()) {
    seen += messageCount(b);
    if (seen >= 30) break;
  }
  t.equal(seen, 30, 'three batches consumed, then the generator returned');
});

t.test('StreamSource.stdin reads NDJSON and arrays from standard input (child process)', async (t) => {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const fileJs = join(here, '../../src/sources/file.js');
  const script = `
    import { StreamSource } from ${JSON.stringify('file://' + fileJs)};
    const src = StreamSource.stdin({ batchSize: 3, batchMaxBytes: 1 << 20, maxMessageBytes: 1 << 20 });
    const out = { describe: src.describe, batches: [], msgs: [] };
    for await (const b of src.batches()) {
      out.batches.push(b.offsets.length - 1);
      for (let i = 0; i + 1 < b.offsets.length; i++) out.msgs.push(b.data.subarray(b.offsets[i], b.ends ? b.ends[i] : b.offsets[i + 1]).toString('utf8'));
    }
    out.progress = src.progress();
    process.stdout.write(JSON.stringify(out));
  `;
  const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify(record(i)));
  const input = `[${lines.slice(0, 4).join(',')}]\n${lines.slice(4).join('\n')}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { input, encoding: 'utf8', timeout: 30_000 });
  t.equal(r.status, 0, `child exits 0 ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { describe: string; batches: number[]; msgs: string[]; progress: unknown };
  t.equal(out.describe, 'stdin');
  t.same(out.msgs, lines, 'all messages in order');
  t.same(out.batches, [3, 3, 3, 1], 'batches of batchSize, the rest at the end');
  t.same(out.progress, { done: Buffer.byteLength(input), total: null, unit: 'bytes' }, 'progress: bytes read, total unknown');
});
