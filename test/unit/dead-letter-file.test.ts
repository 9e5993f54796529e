// The dead-letter file on a real disk: capped per file, rotated PATH -> PATH.1 -> PATH.2, the oldest
// deleted beyond DEAD_LETTER_FILES, with the rotations and deleted bytes counted in the metrics.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
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

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'streamstats-dlq-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function entry(i: number, pad = 0): DeadLetterEntry {
  return { time: '2026-01-01T00:00:00.000Z', reason: 'late', detail: `n${i}`, source: 'test', partition: 0, batch_seq: i, message_index: 0, element: -1, value: 'x'.repeat(pad), value_encoding: 'utf8' };
}

/** Events a test of a plain regular file never expects. */
function noEvents(t: Test): RotationEvents {
  return { rotated: () => {}, deleted: () => {}, unrotated: (k) => t.fail(`unrotated ${k}`), replaced: (d) => t.fail(`replaced: ${d}`) };
}

const CPUS: CpuInfo = { usable: 2, host: 2, quota: 2, source: 'test' };
const lineBytes = (e: DeadLetterEntry) => Buffer.byteLength(`${JSON.stringify(e)}\n`);

async function lines(path: string): Promise<DeadLetterEntry[]> {
  const text = await readFile(path, 'utf8');
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as DeadLetterEntry);
}

t.test('files never pass the cap; rotated in order; the oldest deleted and counted', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'dl.ndjson');
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const one = lineBytes(entry(10, 400)); // batch_seq 10..29: every line the same size
  const cap = one * 3; // three lines a file
  const config = parseConfig({ DEAD_LETTER: `file:${path}`, DEAD_LETTER_MAX_BYTES: String(cap), DEAD_LETTER_FILES: '3' }, CPUS);
  const dl = createDeadLetter(config.deadLetter, { logger: pino({ level: 'silent' }), kafka: config.kafka, metrics });
  // 20 entries in uneven writes: 7 files' worth, 3 kept.
  let i = 10;
  for (const n of [1, 4, 2, 6, 3, 4]) {
    await dl.write(Array.from({ length: n }, () => entry(i++, 400)));
  }
  await dl.close();
  t.equal(i, 30);
  t.same((await readdir(dir)).sort(), ['dl.ndjson', 'dl.ndjson.1', 'dl.ndjson.2']);
  for (const f of ['dl.ndjson', 'dl.ndjson.1', 'dl.ndjson.2']) t.ok((await stat(join(dir, f))).size <= cap, `${f} within the cap`);
  // Newest in PATH, then .1, .2: the kept entries are the last 8 (20 = 6 full files + 2), in order.
  const kept = [...(await lines(`${path}.2`)), ...(await lines(`${path}.1`)), ...(await lines(path))];
  t.same(kept.map((e) => e.batch_seq), [22, 23, 24, 25, 26, 27, 28, 29]);
  t.equal(await registry.getSingleMetricAsString('streamstats_dead_letter_rotations_total').then((s) => /_total (\d+)/.exec(s)?.[1]), '6');
  t.equal(await registry.getSingleMetricAsString('streamstats_dead_letter_deleted_bytes_total').then((s) => Number(/_total (\d+)/.exec(s)?.[1])), 4 * cap, 'files 1-4 deleted, 3 lines each');
});

t.test('an earlier run\'s file counts toward the cap; a line larger than the cap gets its own file', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'dl.ndjson');
  const small = lineBytes(entry(1, 10));
  await writeFile(path, `${JSON.stringify(entry(0, 10))}\n`);
  const events = { rotated: 0, deleted: 0 };
  const f = new RotatingNdjsonFile(path, { maxBytes: small * 2, files: 5 }, { ...noEvents(t), rotated: () => events.rotated++, deleted: (b) => (events.deleted += b) });
  await f.writeLines([entry(1, 10), entry(2, 10)]); // the old line + 1 fill PATH; 2 starts a new one
  await f.writeLines([entry(3, small * 3)]); // bigger than the cap: alone in a file
  await f.writeLines([entry(4, 10)]);
  await f.close();
  t.same((await lines(`${path}.3`)).map((e) => e.batch_seq), [0, 1]);
  t.same((await lines(`${path}.2`)).map((e) => e.batch_seq), [2]);
  t.same((await lines(`${path}.1`)).map((e) => e.batch_seq), [3]);
  t.same((await lines(path)).map((e) => e.batch_seq), [4]);
  t.same(events, { rotated: 3, deleted: 0 });
});

t.test('DEAD_LETTER_FILES=1 keeps only the current file; concurrent writes stay whole lines', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'dl.ndjson');
  let deleted = 0;
  const cap = lineBytes(entry(10, 50)) * 4;
  const f = new RotatingNdjsonFile(path, { maxBytes: cap, files: 1 }, { ...noEvents(t), rotated: () => t.fail('no rotated file is kept'), deleted: (b) => (deleted += b) });
  await Promise.all(Array.from({ length: 10 }, (_, k) => f.writeLines([entry(10 + k, 50), entry(20 + k, 50)])));
  await f.close();
  t.same(await readdir(dir), ['dl.ndjson']);
  const last = await lines(path);
  t.equal(last.length, 4, '20 lines, 4 a file: the last file is full');
  t.equal(deleted, 4 * cap);
  // Each call's two lines went in together (the turn is held across a rotation).
  t.same(last.map((e) => e.batch_seq), [18, 28, 19, 29]);
});

t.test('the options: defaults bound the disk; values outside the range are refused by name', async (t) => {
  const c = parseConfig({}, CPUS);
  t.match(c.deadLetter, { maxBytes: 100 * 1024 * 1024, files: 5 });
  t.throws(() => parseConfig({ DEAD_LETTER_MAX_BYTES: '10' }, CPUS), /DEAD_LETTER_MAX_BYTES/);
  t.throws(() => parseConfig({ DEAD_LETTER_FILES: '0' }, CPUS), /DEAD_LETTER_FILES/);
});
