// SINK=postgres with LANE_STATE=worker against LANE_STATE=main on the same input: the owners hand the
// sink COPY tuples instead of row objects, and what is stored (windows, series, rollups, positions)
// and what is dead-lettered must not depend on it. Real workers, real PostgreSQL.
import t from 'tap';
import { runPipeline, type RunResult } from '../fixtures/harness.js';
import { storedTables, testSchema } from '../fixtures/pg.js';

const letters = (r: RunResult) => r.deadLetters.map((d) => ({ reason: d.reason, value: d.value, detail: d.detail }));
const counts = (r: RunResult) => ({ records: r.summary.records, ok: r.summary.ok, rejected: r.summary.rejected, rows: r.summary.rows });

const rec = (name: string, tsMs: number, value: number | string, dims: Record<string, string> = { hostname: 'h1' }) =>
  JSON.stringify({ metric: { name, dimensions: dims, timestamp: tsMs, value }, meta: { tenantId: 't', region: 'r' } });

t.test('a file job with rejects, late records, text PostgreSQL cannot store and hours to roll up: the same tables and dead letters', async (t) => {
  const t0 = Date.parse('2024-03-01T00:00:00Z');
  const lines: string[] = [];
  for (let i = 0; i < 900; i++) {
    lines.push(rec(`m${i % 7}`, t0 + i * 15_000, i * 0.25, { hostname: `h${i % 3}` }));
    if (i % 50 === 7) lines.push('{"metric": not json');
    if (i % 90 === 11) lines.push(rec('m1', t0 + i * 15_000, 'NaN-text'));
    // A dimension value PostgreSQL jsonb cannot store: the decoder refuses it (invalid_text) in both modes.
    if (i % 100 === 3) lines.push(rec('nul', t0 + i * 15_000, 1, { hostname: 'a\u0000b' }));
    // Far behind the watermark once it passed the first windows: late.
    if (i > 300 && i % 40 === 0) lines.push(rec('m2', t0 + 5_000, 1));
  }
  const files = { 'in.ndjson': lines.join('\n') };
  const env = { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '37', WINDOW_SECONDS: '60', ALLOWED_LATENESS_SECONDS: '5', LATE_RECORDS: 'dead-letter' };
  const run = async (mode: string, threads: string) => {
    const s = await testSchema(t);
    const r = await runPipeline(t, { ...env, SINK: s.url, LANE_STATE: mode, WORKER_THREADS: threads }, { files });
    return { r, tables: await storedTables(s.pool) };
  };
  const main = await run('main', '1');
  const reasons = new Set(main.r.deadLetters.map((d) => d.reason));
  t.ok(reasons.has('late') && reasons.has('malformed_json') && reasons.has('invalid_text'), `the input exercises rejects and late records (${[...reasons].join(', ')})`);
  t.ok(main.tables.windows!.length > 500, `${main.tables.windows!.length} windows stored`);
  t.ok(main.tables.rollups!.length > 0, `${main.tables.rollups!.length} rollups`);
  for (const threads of ['1', '2']) {
    const worker = await run('worker', threads);
    t.same(worker.tables, main.tables, `WORKER_THREADS=${threads}: the same windows, series and rollups`);
    t.same(letters(worker.r), letters(main.r), `WORKER_THREADS=${threads}: the same dead letters, in order`);
    t.same(counts(worker.r), counts(main.r), `WORKER_THREADS=${threads}: the same counts`);
  }
});
