import t, { type Test } from 'tap';
import { CRASHING_WORKER, runPipeline } from '../fixtures/harness.js';

const good = (name: string) => JSON.stringify({ metric: { name, timestamp: 1_700_000_000_000, value: 2 } });

async function withFault(t: Test, marker: string, env: Record<string, string> = {}) {
  // Batches of two messages: [good a, good b], [marker, good c], [good d, good e]
  const lines = [good('a'), good('b'), marker, good('c'), good('d'), good('e')];
  return runPipeline(
    t,
    { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '2', WORKER_THREADS: '1', ...env },
    { workerFile: CRASHING_WORKER, files: { 'in.ndjson': lines.join('\n') } },
  );
}

t.test('a worker that throws once: the batch is retried and nothing is lost', async (t) => {
  const dir = t.testdir();
  const run = await withFault(t, `"throw-once:${dir}/marker"`);
  t.same(run.rows.map((r) => r.name).sort(), ['a', 'b', 'c', 'd', 'e']);
  t.same(run.deadLetters.map((d) => d.reason), ['not_an_object'], 'only the marker string itself is rejected');
  const m = await run.registry.getSingleMetricAsString('streamstats_worker_failures_total');
  t.match(m, /retried="true"\} 1/);
  t.match(m, /retried="false"\} 0/);
});

for (const [what, marker, env] of [
  ['throws every time', '"throw"', {}],
  ['exits', '"exit"', {}],
  ['runs out of memory', '"oom"', { WORKER_MAX_MEMORY_MB: '128' }],
] as const) {
  t.test(`a worker that ${what}: the batch is retried once, then dead-lettered whole; the stream goes on`, async (t) => {
    const run = await withFault(t, marker, env);
    t.same(run.rows.map((r) => r.name).sort(), ['a', 'b', 'd', 'e'], 'the other batches are applied');
    const poisoned = run.deadLetters.filter((d) => d.reason === 'poisoned_batch');
    t.equal(poisoned.length, 2, 'both messages of the failed batch are dead-lettered');
    t.same(poisoned.map((d) => d.value), [marker, good('c')], 'with their original bytes');
    t.match(poisoned[0]?.detail, /worker failed twice on this batch/);
    t.equal(run.summary.poisonedBatches, 1);
    const m = await run.registry.getSingleMetricAsString('streamstats_worker_failures_total');
    t.match(m, /retried="true"\} 1/);
    t.match(m, /retried="false"\} 1/);
  });
}
