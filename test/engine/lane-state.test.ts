// LANE_STATE=worker against LANE_STATE=main on the same input: the rows' bytes and the dead letters
// must not depend on where the lanes' state lives. Real workers, real files.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseConfig } from '../../src/config/index.js';
import { generatePoints } from '../../src/core/generator.js';
import { runPipeline, type RunResult } from '../fixtures/harness.js';

const EXITING_LANE_WORKER = fileURLToPath(new URL('../fixtures/exiting-lane-worker.js', import.meta.url));

const rowBytes = (r: RunResult): string => readFileSync(join(r.dir, 'rows.ndjson'), 'utf8');
/** What a dead letter says, without when it was written. */
const letters = (r: RunResult) => r.deadLetters.map((d) => ({ reason: d.reason, value: d.value, detail: d.detail }));
const counts = (r: RunResult) => ({ records: r.summary.records, ok: r.summary.ok, rejected: r.summary.rejected, rows: r.summary.rows, poisonedBatches: r.summary.poisonedBatches });

const sortedRows = (r: RunResult): string[] => rowBytes(r).split('\n').filter((l) => l !== '').sort();

t.test('the default job (generator): the owners generate their lanes, and the rows are the main thread\'s, with 1 or 2 owners', async (t) => {
  const env = { GEN_COUNT: '40000', GEN_METRICS: '100' };
  const main = await runPipeline(t, { ...env, LANE_STATE: 'main', WORKER_THREADS: '1' });
  t.ok(main.rows.length > 1000, `${main.rows.length} rows`);
  const one = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: '1' });
  t.equal(rowBytes(one), rowBytes(main), 'WORKER_THREADS=1 (one lane): the same bytes in the same order');
  t.same(counts(one), counts(main), 'WORKER_THREADS=1: the same counts');
  // Two lanes, one per owner, each with half of the series: the same rows, each lane's in its order.
  const two = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: '2' });
  t.same(sortedRows(two), sortedRows(main), 'WORKER_THREADS=2 (two lanes): the same row lines');
  t.same(counts(two), counts(main), 'WORKER_THREADS=2: the same counts');
  t.equal(two.summary.messages, 40_000, 'every generated point was sent for');
  t.equal(two.rows.reduce((a, r) => a + r.count, 0), 40_000, 'every generated point is in a row');
  t.equal(two.deadLetters.length, 0, 'no dead letter');
});

t.test('the default job with MAX_SERIES refusals: every refused point dead-lettered with its bytes, everything accounted for', async (t) => {
  const env = { GEN_COUNT: '20000', GEN_METRICS: '100', GEN_HOSTS: '4', MAX_SERIES: '150' };
  const generated = new Set([...generatePoints({ count: 20_000, metrics: 100, hosts: 4, intervalMs: 30_000, startMs: Date.parse('2020-02-11T12:42:13Z'), seed: 1 })].map((p) => p.json));
  const main = await runPipeline(t, { ...env, LANE_STATE: 'main', WORKER_THREADS: '1' });
  t.ok((main.summary.rejected.series_limit ?? 0) > 1000, `the input exercises the limit (${main.summary.rejected.series_limit} refused)`);
  const one = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: '1' });
  t.equal(rowBytes(one), rowBytes(main), 'WORKER_THREADS=1: the same rows');
  t.same(letters(one), letters(main), 'WORKER_THREADS=1: the same dead letters, in order, each with its message');
  t.same(counts(one), counts(main), 'WORKER_THREADS=1: the same counts');
  // Two lanes share the budget: which series get in first is a race, what adds up is not.
  const two = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: '2' });
  const refused = two.summary.rejected.series_limit ?? 0;
  t.ok(refused > 1000, `WORKER_THREADS=2: ${refused} refused`);
  t.equal(two.summary.records, 20_000, 'every point read');
  t.equal(two.summary.ok + refused, 20_000, 'ok + series_limit = GEN_COUNT');
  t.equal(two.rows.reduce((a, r) => a + r.count, 0), two.summary.ok, 'every accepted point is in a row');
  t.equal(two.deadLetters.length, refused, 'one dead letter per refused point');
  t.ok(two.deadLetters.every((d) => d.reason === 'series_limit' && generated.has(d.value)), 'each carries the bytes of a generated point');
  t.equal(new Set(two.deadLetters.map((d) => d.value)).size, refused, 'no point dead-lettered twice');
  t.same([...new Set(two.deadLetters.map((d) => d.partition))].sort(), [0, 1], 'refusals in both lanes');
  const perWindow = new Map<string, number>();
  for (const r of two.rows) perWindow.set(r.period_start, (perWindow.get(r.period_start) ?? 0) + 1);
  t.ok([...perWindow.values()].every((n) => n <= 150), 'no window holds more series than MAX_SERIES');
});

t.test('the default job in worker mode stopped mid-stream: what was sent is applied and every open window flushed', async (t) => {
  // Far more points than are made before the stop: the run ends by stop(), not by the end of input.
  const r = await runPipeline(t, { GEN_COUNT: '50000000', GEN_METRICS: '100', LANE_STATE: 'worker', WORKER_THREADS: '2' }, {
    during: (_port, p) => {
      setTimeout(() => p.stop(), 500).unref();
    },
  });
  t.ok(r.summary.stopped, 'stopped by stop()');
  t.ok(r.summary.messages > 0 && r.summary.messages < 50_000_000, `${r.summary.messages} points sent for before the stop`);
  t.equal(r.summary.records, r.summary.messages, 'every batch sent was applied');
  t.equal(r.summary.ok, r.summary.records, 'all accepted');
  t.equal(r.rows.reduce((a, x) => a + x.count, 0), r.summary.ok, 'and every accepted point is in a row written at the close');
});

const rec = (name: string, tsMs: number, value: number | string, dims: Record<string, string> = { hostname: 'h1' }) =>
  JSON.stringify({ metric: { name, dimensions: dims, timestamp: tsMs, value }, meta: { tenantId: 't', region: 'r' } });

t.test('a file job with rejects, late records and windows closing mid-stream: the same rows and the same dead letters', async (t) => {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const lines: string[] = [];
  for (let i = 0; i < 600; i++) {
    lines.push(rec(`m${i % 7}`, t0 + i * 1000, i, { hostname: `h${i % 3}` }));
    if (i % 50 === 7) lines.push('{"metric": not json');
    if (i % 90 === 11) lines.push(rec('m1', t0 + i * 1000, 'NaN-text'));
    // Far behind the watermark once it passed the first windows: late.
    if (i > 300 && i % 40 === 0) lines.push(rec('m2', t0 + 5_000, 1));
  }
  const files = { 'in.ndjson': lines.join('\n') };
  const env = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '37', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5' };
  const main = await runPipeline(t, { ...env, LANE_STATE: 'main', WORKER_THREADS: '1' }, { files });
  const reasons = new Set(main.deadLetters.map((d) => d.reason));
  t.ok(reasons.has('late') && reasons.has('malformed_json') && reasons.has('wrong_type'), `the input exercises rejects and late records (${[...reasons].join(', ')})`);
  for (const threads of ['1', '2']) {
    const worker = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: threads }, { files });
    t.equal(rowBytes(worker), rowBytes(main), `WORKER_THREADS=${threads}: the same row bytes`);
    t.same(letters(worker), letters(main), `WORKER_THREADS=${threads}: the same dead letters, in order`);
    t.same(counts(worker), counts(main), `WORKER_THREADS=${threads}: the same counts`);
  }
});

t.test('PERCENTILES: the sketches live in the owners, and the rows (quantiles, sketches) are the main thread\'s bytes', async (t) => {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const lines: string[] = [];
  // Values over orders of magnitude, negatives and zeros: wide sketches of different shapes per series.
  for (let i = 0; i < 3000; i++) {
    const v = i % 17 === 0 ? 0 : (i % 5 === 0 ? -1 : 1) * 1.37 ** (i % 41) * (1 + (i % 7) / 10);
    lines.push(rec(`m${i % 5}`, t0 + i * 100, v, { hostname: `h${i % 3}` }));
    if (i > 1500 && i % 97 === 0) lines.push(rec('m1', t0 + 2_000, 3));
  }
  const files = { 'in.ndjson': lines.join('\n') };
  const env = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '53', WINDOW_SECONDS: '30', ALLOWED_LATENESS_SECONDS: '2', PERCENTILES: '1,50,95,99.9', PERCENTILE_ACCURACY: '0.005' };
  const main = await runPipeline(t, { ...env, LANE_STATE: 'main', WORKER_THREADS: '1' }, { files });
  t.ok(main.rows.length > 20 && main.rows.every((r) => r.percentiles?.['p99.9'] !== undefined && r.sketch !== undefined), `${main.rows.length} rows, each with its quantiles and sketch`);
  t.ok(main.deadLetters.some((d) => d.reason === 'late'), 'the input has late records too');
  for (const threads of ['1', '2']) {
    const worker = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: threads }, { files });
    t.equal(rowBytes(worker), rowBytes(main), `WORKER_THREADS=${threads}: the same row bytes`);
    t.same(letters(worker), letters(main), `WORKER_THREADS=${threads}: the same dead letters`);
    t.same(counts(worker), counts(main), `WORKER_THREADS=${threads}: the same counts`);
  }
  // The generator in its owners, with sketches: the same rows as the main thread's.
  const gen = { GEN_COUNT: '20000', GEN_METRICS: '50', PERCENTILES: '50,99' };
  const gmain = await runPipeline(t, { ...gen, LANE_STATE: 'main', WORKER_THREADS: '1' });
  const gworker = await runPipeline(t, { ...gen, LANE_STATE: 'worker', WORKER_THREADS: '1' });
  t.ok(gmain.rows.length > 100 && gmain.rows[0]?.sketch !== undefined, `generator: ${gmain.rows.length} rows with sketches`);
  t.equal(rowBytes(gworker), rowBytes(gmain), 'generator: the same row bytes');
});

t.test('PERCENTILES with MAX_STATE_MB: sketches count against the budget in the owners as on the main thread', async (t) => {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const lines: string[] = [];
  // 200 series of wide sketches (250 buckets each) in one window: about 3 MB of state.
  for (let i = 0; i < 50_000; i++) lines.push(rec(`w${i % 200}`, t0 + Math.floor(i / 200) * 10, 1.05 ** Math.floor(i / 200)));
  const files = { 'in.ndjson': lines.join('\n') };
  const env = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '500', WINDOW_SECONDS: '3600', PERCENTILES: '50,99', MAX_STATE_MB: '1' };
  const main = await runPipeline(t, { ...env, LANE_STATE: 'main', WORKER_THREADS: '1' }, { files });
  const refused = main.summary.rejected.series_limit ?? 0;
  t.ok(refused > 1000, `the budget refuses sketches that would pass it (${refused} records)`);
  const worker = await runPipeline(t, { ...env, LANE_STATE: 'worker', WORKER_THREADS: '1' }, { files });
  t.same(counts(worker), counts(main), 'the same records refused by bytes');
  t.same(letters(worker), letters(main), 'the same dead letters');
  t.equal(rowBytes(worker), rowBytes(main), 'the same rows');
});

t.test('an owner worker that dies mid-stream: the run fails with STREAMSTATS_LANE_OWNER_LOST naming the lane, and writes nothing after', async (t) => {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  // Windows of 60 s: those of the first 300 records close before the batch holding "exit" arrives.
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) lines.push(rec('before', t0 + i * 1000, i));
  lines.push('"exit"');
  for (let i = 0; i < 300; i++) lines.push(rec('after', t0 + (300 + i) * 1000, i));
  const err = await runPipeline(
    t,
    { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '50', LANE_STATE: 'worker', WORKER_THREADS: '1' },
    { workerFile: EXITING_LANE_WORKER, files: { 'in.ndjson': lines.join('\n') } },
  ).then(
    () => null,
    (e: unknown) => e as Error & { code?: string },
  );
  t.ok(err !== null, 'the run fails');
  t.equal(err?.code, 'STREAMSTATS_LANE_OWNER_LOST');
  t.match(err?.message, /owned lane 0 .*the process exits so that its supervisor restarts it, and every lane resumes from its commit point/);
  const rows = readFileSync(join(t.testdirName, 'rows.ndjson'), 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { name: string });
  t.ok(rows.length > 0, `the windows closed before the crash were written (${rows.length} rows)`);
  t.same([...new Set(rows.map((r) => r.name))], ['before'], 'no row of what came after the lost owner');
});

t.test('LANE_STATE is checked with the options it cannot run with, each named', async (t) => {
  const base = { SINK: 'stdout', LANE_STATE: 'worker', WORKER_THREADS: '1' };
  t.equal(parseConfig(base).laneState, 'worker');
  t.throws(() => parseConfig({ LANE_STATE: 'elsewhere' }), /LANE_STATE="elsewhere" is not valid: one of auto, main, worker/);
  t.throws(() => parseConfig({ ...base, WORKER_THREADS: '0' }), /LANE_STATE="worker" is not valid: needs WORKER_THREADS >= 1 .*WORKER_THREADS=0/);
  t.equal(parseConfig({ ...base, SINK: 'postgres://u@127.0.0.1:5432/test' }).laneState, 'worker', 'PostgreSQL runs (LATE_RECORDS=auto: amend)');
  t.ok(parseConfig({ ...base, SINK: 'kafka', OUTPUT_TOPIC: 'rows' }), 'Kafka at least once runs');
  t.ok(parseConfig({ ...base, SINK: 'kafka', OUTPUT_TOPIC: 'rows', EXACTLY_ONCE: 'true' }), 'Kafka exactly once runs');
  t.equal(parseConfig({ ...base, PERCENTILES: '50,99' }).percentiles.length, 2, 'PERCENTILES runs');
  t.equal(parseConfig({ ...base, LATE_RECORDS: 'amend' }).lateRecords, 'amend', 'LATE_RECORDS=amend runs');
});

t.test('LANE_STATE=auto (the default): in the owner workers where the source gains by it and the options allow it, else on the main thread, saying why', async (t) => {
  const lanes = (env: Record<string, string>) => {
    const c = parseConfig(env);
    return `${c.laneState}: ${c.laneStateReason}`;
  };
  t.match(lanes({}), /^worker: auto: in their owner workers/, 'the default job (generator)');
  t.match(lanes({ SOURCE: 'kafka', KAFKA_TOPICS: 'in' }), /^worker: /, 'Kafka');
  t.match(lanes({ SOURCE: 'kafka', KAFKA_TOPICS: 'in', SINK: 'kafka', OUTPUT_TOPIC: 'out', EXACTLY_ONCE: 'true' }), /^worker: /, 'Kafka to Kafka in transactions');
  t.match(lanes({ SOURCE: 'file:/tmp/in.ndjson' }), /^main: auto: on the main thread, since a file is one lane/, 'a file');
  t.match(lanes({ SOURCE: 'stdin' }), /^main: .*stdin is one lane/, 'stdin');
  t.match(lanes({ SOURCE: 'redis', REDIS_STREAMS: 's' }), /^worker: auto: in their owner workers/, 'Redis: the lane of a lost owner is rebuilt from its pending entries');
  t.match(lanes({ WORKER_THREADS: '0' }), /^main: .*needs WORKER_THREADS >= 1/, 'in-thread');
  t.match(lanes({ PERCENTILES: '99' }), /^worker: /, 'percentiles: the sketches live in the owners too');
  t.match(lanes({ SOURCE: 'kafka', KAFKA_TOPICS: 'in', LATE_RECORDS: 'amend' }), /^worker: /, 'amendment: the kept windows too');
  t.match(lanes({ SOURCE: 'kafka', KAFKA_TOPICS: 'in', SINK: 'postgres://u@127.0.0.1:5432/test' }), /^worker: /, 'Kafka to PostgreSQL: the owners make the COPY tuples');
  t.match(lanes({ LANE_STATE: 'main' }), /^main: LANE_STATE=main$/, 'asked for');
  t.match(lanes({ LANE_STATE: 'worker', SOURCE: 'file:/tmp/in.ndjson' }), /^worker: LANE_STATE=worker$/, 'worker asked for with a file');
  t.equal(parseConfig({}, { usable: 2, host: 2, quota: null, source: 'host' }).workerThreads, 2, 'WORKER_THREADS=auto: an owner per usable CPU');
  t.equal(parseConfig({ SOURCE: 'file:/tmp/in.ndjson' }, { usable: 2, host: 2, quota: null, source: 'host' }).workerThreads, 2, 'a file: every usable CPU decodes its large batches');
  t.equal(parseConfig({ SOURCE: 'stdin' }, { usable: 2, host: 2, quota: null, source: 'host' }).workerThreads, 1, 'and usable - 1 where the lanes stay on the main thread otherwise');
});
