// Rows no sink can refuse (issue: "no record can stop a partition"). Every record class that a store
// refused once goes through the real path: the file source and the Kafka source, into the real
// PostgreSQL and the real Kafka sink. Each hostile record is dead-lettered with its reason, every
// other row arrives, ok + rejected = input, and the engine keeps going. A sink error the engine cannot
// get past turns /readyz 503 and exits non-zero.
// First, as in the CLI: our produce path and the source's decoder in kafkajs's module cache.
import '../../src/kafka/preload.js';
import '../../src/sources/kafka/preload.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { TimeoutError, withTimeout } from '../../src/async/index.js';
import type { DeadLetterEntry } from '../../src/sinks/dead-letter.js';
import type { StatsRow } from '../../src/windows/row.js';
import { startEngineProcess, until } from '../fixtures/engine-process.js';
import { readNdjson, rowKey, runPipeline } from '../fixtures/harness.js';
import { brokers, client, createTopic, keyed, produce, startEngine, uid, waitFor, workloadPoints } from '../fixtures/kafka.js';
import { producePaths } from '../../src/kafka/produce-request.js';
import { testSchema } from '../fixtures/pg.js';

const GOOD = workloadPoints({ count: 400, metrics: 25, hosts: 4 });
const TS = GOOD[0]!.timestamp;

function monasca(name: string, dims: Record<string, string>, timestamp: number | string = TS): string {
  return JSON.stringify({ metric: { name, dimensions: dims, timestamp, value: 1, value_meta: {} }, meta: { tenantId: 't1', region: 'r1' }, creation_time: 0 });
}

const rand = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x21 + ((i * 7919) % 0x5d) + (i % 3 === 0 ? 0x3000 : 0))).join('');

/** The record classes users saw a sink refuse, each marked with a `case` dimension (or name) to find it. */
const HOSTILE: ReadonlyArray<{ what: string; json: string }> = [
  { what: 'U+0000 in a name', json: monasca('cpu\u0000idle', { case: 'nul-name' }) },
  { what: 'U+0000 in a dimension name', json: monasca('cpu.idle', { case: 'nul-dim-name', 'host\u0000': 'a' }) },
  { what: 'U+0000 in a dimension value', json: monasca('cpu.idle', { case: 'nul-dim-value', host: 'a\u0000b' }) },
  // JSON.stringify writes a lone surrogate as the escape \udXXX, which JSON.parse turns back into one.
  { what: 'a lone surrogate in a dimension value', json: monasca('cpu.idle', { case: 'surrogate-dim', host: 'a\ud800b' }) },
  { what: 'two names that differ only in lone surrogates (1)', json: monasca('disk\ud800', { case: 'surrogate-name-1' }) },
  { what: 'two names that differ only in lone surrogates (2)', json: monasca('disk\udfff', { case: 'surrogate-name-2' }) },
  { what: 'a dimension value of ~3,000 random characters', json: monasca('cpu.idle', { case: 'long-dim', host: rand(3000) }) },
  { what: 'a 10 KB name', json: monasca(`n${'x'.repeat(10_240)}`, { case: 'long-name' }) },
  { what: 'a window in year 9999', json: monasca('cpu.idle', { case: 'year-9999' }, '9999-12-31T23:59:30Z') },
];

const ENV = { FORMAT: 'monasca', MAX_FUTURE_SECONDS: '0', WORKER_THREADS: '1', BATCH_SIZE: '50' };

/** The good records keyed by series (a series stays in one partition), the hostile ones spread among them. */
function messages(): Array<{ key: string; value: string }> {
  const items = keyed(GOOD);
  // Spread the hostile records through the stream so that they share batches and windows with good ones.
  HOSTILE.forEach((h, i) => items.splice(20 + i * 37, 0, { key: `hostile-${i}`, value: h.json }));
  return items;
}

function input(): string {
  return `${messages().map((m) => m.value).join('\n')}\n`;
}

let referenceRows: Promise<Map<string, StatsRow>> | undefined;

/**
 * The rows of the good records alone (file sink): what every run must deliver besides the refusals.
 * The same for every test, so it is computed once, by (and asserted in) the first test that asks.
 */
function reference(t: Test): Promise<Map<string, StatsRow>> {
  referenceRows ??= (async () => {
    const r = await runPipeline(t, { ...ENV, SOURCE: 'file:$DIR/in.ndjson' }, { files: { 'in.ndjson': `${GOOD.map((p) => p.json).join('\n')}\n` } });
    t.equal(r.summary.ok, GOOD.length, 'reference: all good records ok');
    return new Map(r.rows.map((row) => [rowKey(row), row]));
  })();
  return referenceRows;
}

function checkDeadLetters(t: Test, dlq: readonly DeadLetterEntry[]): void {
  for (const [i, h] of HOSTILE.entries()) {
    const marker = JSON.parse(h.json) as { metric: { dimensions: { case: string } } };
    const found = dlq.filter((e) => e.value.includes(`"case":"${marker.metric.dimensions.case}"`) || e.value.includes(`\\"case\\":\\"${marker.metric.dimensions.case}\\"`));
    t.equal(found.length, 1, `${h.what}: dead-lettered once (${found.map((e) => `${e.reason}: ${e.detail.slice(0, 120)}`).join('; ')})`);
    t.ok(found[0] !== undefined && found[0].reason.length > 0 && found[0].detail.length > 0, `case ${i}: with a reason and a detail`);
  }
}

async function pgRows(url: string): Promise<Array<{ name: string; count: number }>> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ name: string; count: string }>('SELECT name, count FROM streamstats_statistics');
    return rows.map((r) => ({ name: r.name, count: Number(r.count) }));
  } finally {
    await c.end();
  }
}

function checkPgRows(t: Test, got: ReadonlyArray<{ name: string; count: number }>, ref: Map<string, StatsRow>): void {
  t.equal(got.length, ref.size, 'every good row is stored, and no other');
  t.equal(got.reduce((a, r) => a + r.count, 0), GOOD.length, 'the stored counts add up to the good records');
}

async function readRows(topic: string, expected: number): Promise<StatsRow[]> {
  const consumer = client().consumer({ groupId: uid('reader'), maxWaitTimeInMs: 100 });
  const got: StatsRow[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void got.push(JSON.parse(message.value!.toString()) as StatsRow) });
    const end = Date.now() + 30_000;
    while (got.length < expected && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await consumer.disconnect();
  }
  return got;
}

function checkKafkaRows(t: Test, got: readonly StatsRow[], ref: Map<string, StatsRow>): void {
  t.equal(got.length, ref.size, 'every good row arrives once');
  t.ok(got.every((r) => ref.get(rowKey(r))?.count === r.count), 'each equals the reference row');
}

t.test('file source: every refused class is dead-lettered, every other row is stored (PostgreSQL)', async (t) => {
  const ref = await reference(t);
  const { url } = await testSchema(t);
  const r = await runPipeline(t, { ...ENV, SOURCE: 'file:$DIR/in.ndjson', SINK: url }, { files: { 'in.ndjson': input() } });
  const rejected = Object.values(r.summary.rejected).reduce((a, b) => a + (b ?? 0), 0);
  t.equal(r.summary.records, GOOD.length + HOSTILE.length, 'every record was read');
  t.equal(r.summary.ok + rejected, r.summary.records, 'ok + rejected = input');
  t.equal(rejected, HOSTILE.length, 'exactly the hostile records were rejected');
  checkDeadLetters(t, r.deadLetters);
  checkPgRows(t, await pgRows(url), ref);
});

t.test('file source: every refused class is dead-lettered, every other row arrives (Kafka sink)', async (t) => {
  const ref = await reference(t);
  const out = await createTopic(t, 2);
  const r = await runPipeline(t, { ...ENV, SOURCE: 'file:$DIR/in.ndjson', SINK: 'kafka', OUTPUT_TOPIC: out, KAFKA_BROKERS: brokers().join(',') }, { files: { 'in.ndjson': input() } });
  const rejected = Object.values(r.summary.rejected).reduce((a, b) => a + (b ?? 0), 0);
  t.equal(r.summary.ok + rejected, GOOD.length + HOSTILE.length, 'ok + rejected = input');
  t.equal(rejected, HOSTILE.length);
  checkDeadLetters(t, r.deadLetters);
  checkKafkaRows(t, await readRows(out, ref.size), ref);
});

/** The CLI on the Kafka source: a fresh group, idle flush after 1 s, dead letters to a file in dir. */
function kafkaEngineEnv(topic: string, dir: string, more: Record<string, string>): Record<string, string> {
  return {
    ...ENV,
    SOURCE: 'kafka',
    KAFKA_BROKERS: brokers().join(','),
    KAFKA_TOPICS: topic,
    KAFKA_GROUP_ID: uid('g'),
    IDLE_FLUSH_SECONDS: '1',
    DEAD_LETTER: `file:${join(dir, 'dlq.ndjson')}`,
    ...more,
  };
}

for (const sinkKind of ['postgres', 'kafka'] as const) {
  t.test(`Kafka source: the refused classes do not stop the partition (${sinkKind} sink)`, async (t) => {
    const ref = await reference(t);
    const topic = await createTopic(t, 2);
    const lines = messages();
    await produce(topic, lines);
    const dir = t.testdir({});
    const out = sinkKind === 'kafka' ? await createTopic(t, 2) : '';
    const sink = sinkKind === 'kafka' ? 'kafka' : (await testSchema(t)).url;
    const e = await startEngineProcess(t, kafkaEngineEnv(topic, dir, { SINK: sink, OUTPUT_TOPIC: out === '' ? 'unused' : out, SHUTDOWN_TIMEOUT_SECONDS: '20' }));
    await until(async () => {
      const m = await e.metrics();
      return m !== null && e.sum(m, 'streamstats_windows_emitted_total') >= ref.size && e.sum(m, 'streamstats_records_total') >= lines.length;
    }, 'every record processed and every good window emitted', 90_000);
    t.ok(await e.ready(), '/readyz stays 200: nothing is fatal');
    const m = (await e.metrics())!;
    t.equal(e.sum(m, 'streamstats_records_total') - (m.get('streamstats_records_total{result="ok"}') ?? 0), HOSTILE.length, 'the hostile records are counted as rejected');
    e.child.kill('SIGTERM');
    t.equal(await e.exited, 0, 'clean exit');
    checkDeadLetters(t, readNdjson<DeadLetterEntry>(join(dir, 'dlq.ndjson')));
    if (sinkKind === 'kafka') checkKafkaRows(t, await readRows(out, ref.size), ref);
    else checkPgRows(t, await pgRows(sink), ref);
  });
}

t.test('a row over the output topic\'s max.message.bytes is dead-lettered as sink_rejected; the rest arrive', async (t) => {
  const ref = await reference(t);
  const out = await createTopic(t, 1, { 'max.message.bytes': '3500' });
  // Within the extraction limits, but its row (the value twice: groupby and identity key) is over 3,500 bytes.
  const big = monasca('cpu.idle', { case: 'big-row', a: 'x'.repeat(600), b: 'y'.repeat(600), c: 'z'.repeat(600) });
  const file = `${[...GOOD.map((p) => p.json).slice(0, 200), big, ...GOOD.map((p) => p.json).slice(200)].join('\n')}\n`;
  const r = await runPipeline(t, { ...ENV, SOURCE: 'file:$DIR/in.ndjson', SINK: 'kafka', OUTPUT_TOPIC: out, KAFKA_BROKERS: brokers().join(',') }, { files: { 'in.ndjson': file } });
  t.equal(r.summary.rejected.sink_rejected, 1, 'its one record is counted as sink_rejected');
  t.equal(r.summary.ok + 1, GOOD.length + 1, 'ok + rejected = input');
  const dl = r.deadLetters.filter((e) => e.reason === 'sink_rejected');
  t.equal(dl.length, 1);
  t.match(dl[0]?.detail, /max\.message\.bytes=3500/, 'the detail names the limit');
  t.match(dl[0]?.value, /"case":"big-row"/, 'the dead letter holds the row');
  checkKafkaRows(t, await readRows(out, ref.size), ref);
});

// With the Kafka source, lanes live in their worker, which writes rows as record-batch sections once
// the sink has said the output's layout (after its first read of the topic's limits): a row over
// max.message.bytes is then found by the main thread in a section, not by its own encoder.
// Windows of 5 s: the big record comes after an idle flush took the watermark to the wall clock, so it
// is stamped now and its window closes within seconds.
const SHORT = { ...ENV, WINDOW_SECONDS: '5' };
let shortReference: Promise<Map<string, StatsRow>> | undefined;
for (const exactlyOnce of [false, true]) {
  t.test(`Kafka source, rows written as records by the lane's worker: a row over max.message.bytes after the first writes is dead-lettered as sink_rejected (${exactlyOnce ? 'exactly once' : 'at least once'})`, async (t) => {
    shortReference ??= runPipeline(t, { ...SHORT, SOURCE: 'file:$DIR/in.ndjson' }, { files: { 'in.ndjson': `${GOOD.map((p) => p.json).join('\n')}\n` } })
      .then((r) => new Map(r.rows.map((row) => [rowKey(row), row])));
    const ref = await shortReference;
    const [topic, out] = await Promise.all([createTopic(t, 1), createTopic(t, 1, { 'max.message.bytes': '3500' })]);
    await produce(topic, keyed(GOOD));
    const sectionsBefore = producePaths.sections;
    const e = startEngine(t, {
      ...SHORT,
      KAFKA_TOPICS: topic,
      KAFKA_GROUP_ID: uid('g'),
      SINK: 'kafka',
      OUTPUT_TOPIC: out,
      EXACTLY_ONCE: String(exactlyOnce),
    });
    await waitFor([e], () => e.sum('streamstats_windows_emitted_total') >= ref.size, 'every good window emitted', 60_000);
    t.ok(producePaths.sections > sectionsBefore, `the good rows went out as the worker's sections (${producePaths.sections - sectionsBefore})`);
    // The idle flush has taken the lane's watermark to the wall clock: stamped now (not within 1 s of
    // its window's end), the big record is in a window of its own that a later idle flush closes.
    const into = Date.now() % 5000;
    if (into > 4000) await new Promise((r) => setTimeout(r, 5100 - into));
    await produce(topic, [{ key: 'big', value: monasca('cpu.idle', { case: 'big-row', a: 'x'.repeat(600), b: 'y'.repeat(600), c: 'z'.repeat(600) }, Date.now()) }]);
    await waitFor([e], () => e.metric('streamstats_records_total', { result: 'sink_rejected' }) >= 1, 'the big row refused', 60_000);
    const summary = await e.stop();
    t.equal(summary.rejected.sink_rejected, 1, 'its one record is counted as sink_rejected');
    t.equal(summary.ok, GOOD.length, 'every good record ok');
    const dl = e.deadLetters().filter((d) => d.reason === 'sink_rejected');
    t.equal(dl.length, 1, 'one dead letter');
    t.match(dl[0]?.detail, /max\.message\.bytes=3500/, 'the detail names the limit');
    t.match(dl[0]?.value, /"case":"big-row"/, 'the dead letter holds the row');
    checkKafkaRows(t, await readRows(out, ref.size), ref);
  });
}

t.test('fatal means fatal: a sink that cannot go on turns /readyz 503 and exits non-zero', async (t) => {
  const topic = await createTopic(t, 1);
  const { url, pool } = await testSchema(t);
  const dir = t.testdir({});
  const e = await startEngineProcess(t, kafkaEngineEnv(topic, dir, { SINK: url, SHUTDOWN_TIMEOUT_SECONDS: '5' }));
  await until(() => e.ready(), 'engine ready', 60_000);
  // Not a row's fault: the table is gone. No retry can help, so the engine must stop.
  await pool.query('ALTER TABLE streamstats_windows RENAME TO gone');
  // Watch /readyz from before the records arrive: the shutdown after the fatal error is quick.
  let saw503 = false;
  const watch = (async () => {
    while (e.child.exitCode === null && e.child.signalCode === null) {
      const r = await fetch(`http://127.0.0.1:${e.port}/readyz`).catch(() => null);
      if (r?.status === 503) saw503 = true;
      await new Promise((res) => setTimeout(res, 10));
    }
  })();
  await produce(topic, keyed(GOOD.slice(0, 100)));
  // withTimeout clears its timer: a bare setTimeout here kept the test process alive for a minute.
  const code = await withTimeout(e.exited, 60_000, 'the engine exit').catch((err: unknown) => (err instanceof TimeoutError ? 'hung' as const : Promise.reject(err)));
  await watch;
  t.not(code, 'hung', 'the process exits');
  t.not(code, 0, 'with a non-zero code');
  t.ok(saw503, '/readyz answered 503 before the exit');
  t.match(e.stderr(), /streamstats: fatal: .*postgres/, 'a one-line reason on stderr');
  writeFileSync(join(dir, 'stderr.log'), e.stderr());
});
