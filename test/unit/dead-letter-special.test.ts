// A dead-letter path that is not a regular file is written as it is and never rotated, renamed or
// deleted: a character device (run as root, rotating /dev/null once replaced the machine's device node
// with a regular file and then deleted it), a FIFO, a Unix socket, a symbolic link; and a PATH replaced
// under the writer, or a PATH.n that is not a regular file, is noticed and left alone. Every special
// file here is the test's own, made in a temporary directory (never the machine's /dev/null).
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { parseConfig } from '../../src/config/index.js';
import type { CpuInfo } from '../../src/config/cpus.js';
import { createMetrics } from '../../src/metrics/index.js';
import { createDeadLetter } from '../../src/sinks/dead-letter.js';
import { RotatingNdjsonFile, type RotationEvents } from '../../src/sinks/rotating-file.js';
import type { DeadLetterEntry } from '../../src/sinks/types.js';

const CPUS: CpuInfo = { usable: 2, host: 2, quota: 2, source: 'test' };

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'streamstats-dlq-special-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function entry(i: number): DeadLetterEntry {
  return { time: '2026-01-01T00:00:00.000Z', reason: 'late', detail: `n${i}`, source: 'test', partition: 0, batch_seq: i, message_index: 0, element: -1, value: 'x'.repeat(600), value_encoding: 'utf8' };
}
const LINE = Buffer.byteLength(`${JSON.stringify(entry(10))}\n`);

/** A null device node of the test's own (major 1, minor 3), or null with the reason it could not be made. */
function makeNullDevice(path: string): string | null {
  try {
    execFileSync('mknod', [path, 'c', '1', '3'], { stdio: 'pipe' });
    return null;
  } catch (err) {
    return `mknod is not permitted here (${String((err as { stderr?: Buffer }).stderr ?? err).trim()}): needs root or CAP_MKNOD`;
  }
}

/** Whether this run may make device nodes: null if so, else why the device tests are skipped. */
const NO_MKNOD = ((): string | null => {
  const dir = mkdtempSync(join(tmpdir(), 'streamstats-mknod-'));
  try {
    return makeNullDevice(join(dir, 'probe'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

type Seen = { rotated: number; deleted: number; unrotated: string[]; replaced: string[] };
function recorder(): { seen: Seen; events: RotationEvents } {
  const seen: Seen = { rotated: 0, deleted: 0, unrotated: [], replaced: [] };
  return { seen, events: { rotated: () => seen.rotated++, deleted: (b) => (seen.deleted += b), unrotated: (k) => seen.unrotated.push(k), replaced: (d) => seen.replaced.push(d) } };
}

/** Writes n lines in batches of 3 through the real DEAD_LETTER=file: output, 2 lines a file, 3 kept. */
async function writeThroughConfig(path: string, n: number, files = 3): Promise<Registry> {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const config = parseConfig({ DEAD_LETTER: `file:${path}`, DEAD_LETTER_MAX_BYTES: String(LINE * 2), DEAD_LETTER_FILES: String(files) }, CPUS);
  const dl = createDeadLetter(config.deadLetter, { logger: pino({ level: 'silent' }), kafka: config.kafka, metrics });
  for (let i = 0; i < n; i += 3) await dl.write([entry(i), entry(i + 1), entry(i + 2)]);
  await dl.close();
  return registry;
}

for (const files of [3, 1]) {
  t.test(`a character device (DEAD_LETTER_FILES=${files}) is written as it is: never renamed, replaced or deleted`, { skip: NO_MKNOD ?? false }, async (t) => {
    const dir = await tempDir(t);
    const dev = join(dir, 'null');
    t.equal(makeNullDevice(dev), null);
    const before = statSync(dev);
    const registry = await writeThroughConfig(dev, 30, files); // 15 files' worth at the cap
    const after = await lstat(dev);
    t.ok(after.isCharacterDevice(), 'still a character device');
    t.equal(after.ino, before.ino, 'the same node');
    t.equal(after.rdev, before.rdev, 'the same device numbers');
    t.same(await readdir(dir), ['null'], 'no PATH.1, no PATH.2');
    t.match(await registry.getSingleMetricAsString('streamstats_dead_letter_rotations_total'), /_total 0\n?$/m);
    t.match(await registry.getSingleMetricAsString('streamstats_dead_letter_deleted_bytes_total'), /_total 0\n?$/m);
  });
}

t.test('a FIFO is written as it is: every line reaches its reader, the FIFO stays', async (t) => {
  const dir = await tempDir(t);
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const chunks: Buffer[] = [];
  const reader = createReadStream(fifo);
  reader.on('data', (c) => chunks.push(c as Buffer));
  const ended = new Promise<void>((resolve) => reader.on('end', () => resolve()));
  const { seen, events } = recorder();
  const f = new RotatingNdjsonFile(fifo, { maxBytes: LINE * 2, files: 3 }, events);
  for (let i = 0; i < 12; i += 3) await f.writeLines([entry(i), entry(i + 1), entry(i + 2)]);
  await f.close();
  await ended;
  const got = Buffer.concat(chunks).toString().split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as DeadLetterEntry).batch_seq);
  t.same(got, Array.from({ length: 12 }, (_, i) => i), 'all 12 lines, in order');
  t.ok((await lstat(fifo)).isFIFO(), 'still a FIFO');
  t.same(await readdir(dir), ['fifo']);
  t.same(seen, { rotated: 0, deleted: 0, unrotated: ['FIFO'], replaced: [] });
});

t.test('a Unix socket is connected to and written, never rotated', async (t) => {
  const dir = await tempDir(t);
  const sock = join(dir, 'dl.sock');
  const chunks: Buffer[] = [];
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  const server = createServer((c: Socket) => {
    c.on('data', (d) => chunks.push(d));
    c.on('end', () => closed());
  });
  await new Promise<void>((resolve) => server.listen(sock, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { seen, events } = recorder();
  const f = new RotatingNdjsonFile(sock, { maxBytes: LINE * 2, files: 2 }, events);
  for (let i = 0; i < 9; i += 3) await f.writeLines([entry(i), entry(i + 1), entry(i + 2)]);
  await f.close();
  await done;
  t.equal(Buffer.concat(chunks).toString().split('\n').filter((l) => l !== '').length, 9);
  t.ok((await lstat(sock)).isSocket());
  t.same(await readdir(dir), ['dl.sock']);
  t.same(seen.unrotated, ['socket']);
});

t.test('a symbolic link is written through, never rotated: the link and its target stay', async (t) => {
  const dir = await tempDir(t);
  const target = join(dir, 'target.ndjson');
  await writeFile(target, '');
  const link = join(dir, 'dl.ndjson');
  await symlink(target, link);
  const { seen, events } = recorder();
  const f = new RotatingNdjsonFile(link, { maxBytes: LINE * 2, files: 2 }, events);
  for (let i = 0; i < 9; i += 3) await f.writeLines([entry(i), entry(i + 1), entry(i + 2)]);
  await f.close();
  t.ok((await lstat(link)).isSymbolicLink());
  t.equal((await readFile(target, 'utf8')).split('\n').filter((l) => l !== '').length, 9);
  t.same((await readdir(dir)).sort(), ['dl.ndjson', 'target.ndjson']);
  t.same(seen.unrotated, ['symbolic link']);
});

t.test('a PATH replaced under the writer by a device is noticed: nothing renamed or deleted', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'dl.ndjson');
  const { seen, events } = recorder();
  const f = new RotatingNdjsonFile(path, { maxBytes: LINE * 2, files: 2 }, events);
  await f.writeLines([entry(0)]);
  // Someone moves our file away and puts a device node (or, without mknod, a FIFO with a reader) in its place.
  await rename(path, join(dir, 'moved.ndjson'));
  let reader: ReturnType<typeof createReadStream> | null = null;
  if (makeNullDevice(path) !== null) {
    execFileSync('mkfifo', [path]);
    reader = createReadStream(path);
    reader.resume();
  }
  await f.writeLines([entry(1), entry(2), entry(3), entry(4), entry(5)]);
  await f.close();
  const now = await lstat(path);
  t.ok(now.isCharacterDevice() || now.isFIFO(), 'the new node is still at PATH');
  t.same((await readdir(dir)).sort(), ['dl.ndjson', 'moved.ndjson'], 'no PATH.1: the device was not rotated');
  t.same((await readFile(join(dir, 'moved.ndjson'), 'utf8')).split('\n').filter((l) => l !== '').length, 2, 'the moved file kept what was written before the rotation point');
  t.equal(seen.rotated, 0);
  t.equal(seen.deleted, 0);
  t.match(seen.replaced, [/moved|now a (character device|FIFO)/]);
  t.same(seen.unrotated, [now.isFIFO() ? 'FIFO' : 'character device']);
});

t.test('a PATH.n that is not a regular file stops the rotation with an error naming it, and is kept', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'dl.ndjson');
  const slot = `${path}.1`;
  execFileSync('mkfifo', [slot]);
  const { seen, events } = recorder();
  const f = new RotatingNdjsonFile(path, { maxBytes: LINE * 2, files: 2 }, events);
  await t.rejects(f.writeLines([entry(0), entry(1), entry(2)]), { code: 'STREAMSTATS_SINK', message: /dl\.ndjson\.1 is a FIFO, not a regular file/ });
  await f.close();
  t.ok((await lstat(slot)).isFIFO(), 'PATH.1 is still the FIFO');
  t.equal((await readFile(path, 'utf8')).split('\n').filter((l) => l !== '').length, 2, 'PATH keeps the lines written before the rotation point');
  t.equal(seen.rotated, 0);
  t.equal(seen.deleted, 0);
});
