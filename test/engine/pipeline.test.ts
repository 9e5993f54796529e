import t, { type Test } from 'tap';
import { generatePoints } from '../../src/sources/generator.js';
import { byKey, rowKey, runPipeline } from '../fixtures/harness.js';
import { close, reference, type RefRecord } from '../fixtures/reference.js';
import { Rng } from '../fixtures/gen.js';

const GEN = { GEN_COUNT: '24000', GEN_METRICS: '100', GEN_HOSTS: '3', BATCH_SIZE: '500' };

function monascaToRef(json: string): RefRecord {
  const o = JSON.parse(json) as {
    metric: { name: string; dimensions: Record<string, string>; timestamp: number; value: number };
    meta: { tenantId: string; region: string };
  };
  return {
    name: o.metric.name,
    dims: { ...o.metric.dimensions, _tenant_id: o.meta.tenantId, _region: o.meta.region },
    tsMs: o.metric.timestamp,
    value: o.metric.value,
  };
}

function compareRows(t: Test, actual: ReturnType<typeof byKey>, expected: ReturnType<typeof reference>['rows']): void {
  t.equal(actual.size, expected.size, 'as many rows as the reference');
  let mismatches = 0;
  for (const [k, e] of expected) {
    const a = actual.get(k);
    const ok = a !== undefined && a.count === e.count && a.min === e.min && a.max === e.max && close(a.sum, e.sum) &&
      close(a.avg, e.avg) && close(a.stddev, e.stddev, 1e-7) && a.duration_start === e.duration_start && a.duration_end === e.duration_end;
    if (!ok && mismatches++ < 3) t.fail(`row ${k}`, { actual: a, expected: e });
  }
  t.equal(mismatches, 0, 'every row equals the reference');
}


t.test('generator workload: rows equal an independent computation, pool and in-thread alike', async (t) => {
  const cfg = { count: 24000, metrics: 100, hosts: 3, intervalMs: 30000, startMs: Date.parse('2020-02-11T12:42:13Z'), seed: 1 };
  const records: RefRecord[] = [];
  for (const p of generatePoints(cfg)) records.push(monascaToRef(p.json));
  const batches: RefRecord[][] = [];
  for (let i = 0; i < records.length; i += 500) batches.push(records.slice(i, i + 500));
  const ref = reference(batches, 60_000, 5_000);
  t.equal(ref.late.length, 0, 'the generator workload has no late records at 5 s lateness');

  const inThread = await runPipeline(t, { ...GEN, WORKER_THREADS: '0' });
  const pooled = await runPipeline(t, { ...GEN, WORKER_THREADS: '2' });
  compareRows(t, byKey(inThread.rows), ref.rows);
  t.same(
    pooled.rows.map(rowKey).sort(),
    inThread.rows.map(rowKey).sort(),
    'the pool emits the same windows as in-thread decode',
  );
  t.same(byKey(pooled.rows), byKey(inThread.rows), 'with identical statistics');
  t.equal(pooled.summary.records, 24000);
  t.equal(pooled.summary.ok, 24000);
  t.equal(pooled.deadLetters.length, 0);
  t.equal(pooled.summary.rows, pooled.rows.length, 'summary counts the rows written');
});

t.test('out-of-order and late records: windows and late dead letters match the per-batch reference', async (t) => {
  const rng = new Rng(7);
  const base = Date.parse('2024-01-01T00:00:00Z');
  const records: RefRecord[] = [];
  for (let i = 0; i < 3000; i++) {
    const delay = rng.bool(0.05) ? rng.int(60_000, 300_000) : rng.int(0, 4_000);
    records.push({
      name: rng.pick(['cpu', 'mem', 'disk']),
      dims: { host: rng.pick(['a', 'b']) },
      tsMs: base + i * 200 - delay + rng.int(0, 999) / 8,
      value: rng.range(-50, 50),
    });
  }
  const lines = records.map((r) => JSON.stringify({ metric: { name: r.name, dimensions: r.dims, timestamp: r.tsMs, value: r.value } }));
  const batches: RefRecord[][] = [];
  for (let i = 0; i < records.length; i += 50) batches.push(records.slice(i, i + 50));
  const ref = reference(batches, 10_000, 3_000);
  t.ok(ref.late.length > 50, `the input has late records (${ref.late.length})`);

  const run = await runPipeline(
    t,
    { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '50', WINDOW_SECONDS: '10', ALLOWED_LATENESS_SECONDS: '3', WORKER_THREADS: '2' },
    { files: { 'in.ndjson': `${lines.join('\n')}\n` } },
  );
  compareRows(t, byKey(run.rows), ref.rows);
  const late = run.deadLetters.filter((d) => d.reason === 'late');
  t.equal(late.length, ref.late.length, 'every late record is dead-lettered as late');
  t.same(
    late.map((d) => JSON.parse(d.value).metric.timestamp as number).sort((a, b) => a - b),
    ref.late.map((r) => r.tsMs).sort((a, b) => a - b),
    'and they are exactly the reference late records',
  );
  t.match(late[0]?.detail, /window .* closed: watermark .*ALLOWED_LATENESS_SECONDS=3/);
  t.equal(run.summary.rejected.late, ref.late.length);
  t.equal(run.summary.ok + ref.late.length, 3000, 'every record is a row contribution or a dead letter');
});

t.test('MAX_SERIES: records of new series beyond the cap are dead-lettered as series_limit', async (t) => {
  const lines: string[] = [];
  for (let i = 0; i < 4; i++) {
    for (let s = 0; s < 5; s++) lines.push(JSON.stringify({ metric: { name: `m${s}`, timestamp: 1_700_000_000_000 + i, value: i } }));
  }
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', MAX_SERIES: '3', WORKER_THREADS: '1' }, { files: { 'in.ndjson': lines.join('\n') } });
  t.same(run.rows.map((r) => r.name).sort(), ['m0', 'm1', 'm2']);
  const limited = run.deadLetters.filter((d) => d.reason === 'series_limit');
  t.equal(limited.length, 8, 'two series x four records');
  t.same([...new Set(limited.map((d) => JSON.parse(d.value).metric.name as string))].sort(), ['m3', 'm4']);
  t.match(limited[0]?.detail, /MAX_SERIES=3/);
  const metrics = await run.registry.getSingleMetricAsString('streamstats_records_total');
  t.match(metrics, /streamstats_records_total\{result="series_limit"\} 8/);
});

t.test('hostile input: each record dead-lettered with its reason, the stream goes on', async (t) => {
  const ok = (name: string, ts = 1_700_000_000_000, dims: Record<string, string> = {}) =>
    JSON.stringify({ metric: { name, dimensions: dims, timestamp: ts, value: 1 } });
  const lines: Array<string | Buffer> = [
    ok('good1'),
    '{"metric":',
    Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
    '42',
    'null',
    JSON.stringify({ metric: { name: 'x', timestamp: 1_700_000_000_000, value: 'abc' } }),
    '{"metric":{"name":"x","timestamp":1700000000000,"value":1e999}}',
    JSON.stringify({ metric: { name: 'x', timestamp: -5, value: 1 } }),
    JSON.stringify({ metric: { timestamp: 1_700_000_000_000, value: 1 } }),
    '['.repeat(100_000),
    `[${ok('inarray')},{"metric":{"name":"bad"}}]`,
    ok('protos', 1_700_000_000_000, { __proto__: 'p', constructor: 'c', hasOwnProperty: 'h' } as unknown as Record<string, string>),
    JSON.stringify({ metric: { name: 'x', timestamp: 1_700_000_000_000, value: 1, dimensions: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`d${i}`, 'v'])) } }),
    ok('good2'),
  ];
  // The __proto__ key must be an own key in the JSON text, not swallowed by the object literal above.
  lines[11] = '{"metric":{"name":"protos","dimensions":{"__proto__":"p","constructor":"c","hasOwnProperty":"h"},"timestamp":1700000000000,"value":1}}';
  const body = Buffer.concat(lines.map((l) => Buffer.concat([Buffer.isBuffer(l) ? l : Buffer.from(l), Buffer.from('\n')])));
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', WORKER_THREADS: '1' }, { files: { 'in.ndjson': body } });

  const reasons = run.deadLetters.map((d) => d.reason).sort();
  t.same(reasons, [
    'bad_timestamp', 'malformed_json', 'malformed_json', 'missing_field', 'missing_field',
    'non_finite_value', 'not_an_object', 'not_an_object', 'invalid_utf8', 'too_many_dimensions', 'wrong_type',
  ].sort());
  const utf8 = run.deadLetters.find((d) => d.reason === 'invalid_utf8');
  t.equal(utf8?.value_encoding, 'base64', 'invalid UTF-8 is kept byte-exact as base64');
  t.same(Buffer.from(utf8?.value ?? '', 'base64'), lines[2]);
  const inArray = run.deadLetters.find((d) => d.element === 1);
  t.equal(inArray?.reason, 'missing_field');
  t.match(inArray?.detail, /^\[1\]\.metric\.value: missing/);
  t.same(JSON.parse(inArray?.value ?? 'null'), { metric: { name: 'bad' } }, 'the array element itself is dead-lettered');
  t.match(run.deadLetters.find((d) => d.reason === 'wrong_type')?.detail, /metric\.value: expected a finite number, got "abc"/);

  t.same(run.rows.map((r) => r.name).sort(), ['good1', 'good2', 'inarray', 'protos']);
  const protos = run.rows.find((r) => r.name === 'protos')!;
  t.same(Object.keys(protos.groupby).sort(), ['__proto__', 'constructor', 'hasOwnProperty']);
  t.equal(Object.getOwnPropertyDescriptor(protos.groupby, '__proto__')?.value, 'p', '__proto__ is kept as an ordinary dimension');
  t.equal(({} as Record<string, unknown>)['p'], undefined);
  const rejected = Object.values(run.summary.rejected).reduce((a, b) => a + (b ?? 0), 0);
  t.equal(run.summary.records, run.summary.ok + rejected, 'records = ok + rejected');
  t.equal(rejected, run.deadLetters.length, 'every rejection is in the dead-letter output');
});

t.test('/metrics, /healthz and /readyz during a run; metric content after it', async (t) => {
  let seen: { ready: number; health: string; metrics: string; type: string | null; missing: number } | undefined;
  const run = await runPipeline(t, { ...GEN, WORKER_THREADS: '2', GEN_RATE: '40000' }, {
    during: async (port) => {
      await new Promise((r) => setTimeout(r, 200));
      const base = `http://127.0.0.1:${port}`;
      const ready = await fetch(`${base}/readyz`);
      const health = await fetch(`${base}/healthz`);
      const metrics = await fetch(`${base}/metrics`);
      const missing = await fetch(`${base}/nope`);
      seen = { ready: ready.status, health: await health.text(), metrics: await metrics.text(), type: metrics.headers.get('content-type'), missing: missing.status };
    },
  });
  t.equal(seen?.ready, 200, 'ready while running');
  t.equal(seen?.health, 'ok\n');
  t.equal(seen?.missing, 404);
  t.match(seen?.type, /text\/plain/);
  t.match(seen?.metrics, /streamstats_pool_threads 2/);
  const text = await run.registry.metrics();
  t.match(text, /streamstats_records_total\{result="ok"\} 24000/);
  t.match(text, /streamstats_records_total\{result="late"\} 0/, 'every reason is exported from the start');
  t.match(text, /streamstats_messages_total 24000/);
  t.match(text, new RegExp(`streamstats_windows_emitted_total ${run.rows.length}\\b`));
  t.match(text, /streamstats_decode_seconds_count 48\b/, 'one decode observation per batch');
  t.match(text, /streamstats_decode_seconds_bucket\{le="0.00001"\}/, 'decode buckets start at 10 microseconds');
  t.match(text, /streamstats_batch_messages_sum 24000/);
  t.match(text, /streamstats_pool_task_run_seconds_count 48/);
  t.match(text, /streamstats_sink_write_seconds_count\{output="statistics"\} \d+/);
  t.match(text, /process_cpu_user_seconds_total/, 'Node default metrics');
  t.match(text, /streamstats_open_series 0/, 'all windows closed at the end');
});
