// Element-level resynchronisation in a top-level JSON array, through the real path (file source, pool, engine, dead letters): in a top-level
// JSON array of 2,000 elements with one broken element, 1,999 records are applied, one is
// dead-lettered as malformed_json, and records in = ok + rejected.
import t from 'tap';
import { runPipeline } from '../fixtures/harness.js';

const el = (i: number): string => JSON.stringify({ metric: { name: `m${i % 5}`, dimensions: { host: 'a' }, timestamp: 1_700_000_000_000 + i * 10, value: i } });

for (const [label, broken] of [
  ['a stray } in element 2', (e: string) => `${e}}`],
  ['an unterminated string in element 2', (e: string) => e.replace('"m1"', '"m1')],
] as const) {
  t.test(`regression: ${label} costs that element only`, async (t) => {
    const elems = Array.from({ length: 2000 }, (_, i) => el(i));
    elems[1] = broken(elems[1]!);
    const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.json', WORKER_THREADS: '1', BATCH_SIZE: '500' }, { files: { 'in.json': `[${elems.join(',')}]\n` } });
    t.equal(run.summary.records, 2000, '2,000 records in');
    t.equal(run.summary.ok, 1999, '1,999 applied');
    t.same(run.summary.rejected, { malformed_json: 1 }, 'one malformed_json');
    t.equal(run.deadLetters.length, 1);
    t.equal(run.deadLetters[0]?.value, elems[1], 'the dead letter holds the broken element');
    t.equal(run.rows.reduce((a, r) => a + r.count, 0), 1999, 'the rows count every good record');
  });
}

t.test('a message over MAX_MESSAGE_BYTES keeps its first MAX_MESSAGE_BYTES in the dead letter, flagged', async (t) => {
  const big = `{"metric":{"name":"${'x'.repeat(5000)}","timestamp":1700000000000,"value":1}}`;
  const run = await runPipeline(
    t,
    { SOURCE: 'file:$DIR/in.ndjson', WORKER_THREADS: '0', MAX_MESSAGE_BYTES: '1024', BATCH_MAX_BYTES: '4096' },
    { files: { 'in.ndjson': `${el(0)}\n${big}\n${el(1)}\n` } },
  );
  t.equal(run.summary.ok, 2);
  const d = run.deadLetters.find((x) => x.reason === 'too_large');
  t.ok(d !== undefined, 'the large one is dead-lettered as too_large');
  t.equal(Buffer.byteLength(d!.value), 1024, 'its first MAX_MESSAGE_BYTES bytes');
  t.equal(d!.value, big.slice(0, 1024));
  t.equal(d!.value_truncated, true, 'flagged as cut');
  t.ok(d!.value_bytes! > 1024, 'with the size received');
});
