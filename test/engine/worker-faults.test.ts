import t, { type Test } from 'tap';
import { fileURLToPath } from 'node:url';
import { WORKER_YOUNG_GENERATION_MB } from '../../src/config/memory.js';
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

t.test('a worker gets bounded young and old generations: left to V8 its young generation grows to 192 MiB whatever WORKER_MAX_MEMORY_MB says', async (t) => {
  const run = await withFault(t, '"limits"', { WORKER_MAX_MEMORY_MB: '64' });
  const detail = run.deadLetters.find((d) => d.reason === 'poisoned_batch')?.detail ?? '';
  const limits = JSON.parse(/resourceLimits (\{.*?\})/.exec(detail)?.[1] ?? '{}') as Record<string, number>;
  t.equal(limits.maxOldGenerationSizeMb, 64, `the old generation is WORKER_MAX_MEMORY_MB (${detail})`);
  t.equal(limits.maxYoungGenerationSizeMb, WORKER_YOUNG_GENERATION_MB, 'the young generation is bounded too');
});

for (const [what, marker, env] of [
  ['throws every time', '"throw"', {}],
  ['exits', '"exit"', {}],
  ['runs out of memory', '"oom"', { WORKER_MAX_MEMORY_MB: '128' }],
] as const) {
  t.test(`a worker that ${what}: the batch is retried once, then bisected until the poison message stands alone; the stream goes on`, async (t) => {
    const run = await withFault(t, marker, env);
    t.same(run.rows.map((r) => r.name).sort(), ['a', 'b', 'c', 'd', 'e'], 'every good record is applied, the one sharing the poisoned batch too');
    const poisoned = run.deadLetters.filter((d) => d.reason === 'poisoned_batch');
    t.equal(poisoned.length, 1, 'only the poison message is dead-lettered');
    t.same(poisoned.map((d) => d.value), [marker], 'with its original bytes');
    t.match(poisoned[0]?.detail, /isolated by bisection; worker failed twice on this batch/);
    t.equal(run.deadLetters.length, 1);
    t.equal(run.summary.poisonedBatches, 1);
    const m = await run.registry.getSingleMetricAsString('streamstats_worker_failures_total');
    t.match(m, /retried="true"\} 2/, 'the batch, then the half holding the poison');
    t.match(m, /retried="false"\} 2/);
  });
}

t.test('regression: four poison messages in one batch cost those four only (bisection), every good record is applied', async (t) => {
  const lines: string[] = [];
  for (let i = 0; i < 40; i++) lines.push([3, 17, 18, 33].includes(i) ? '"poison"' : good(`m${i}`));
  const run = await runPipeline(
    t,
    { SOURCE: 'file:$DIR/in.ndjson', BATCH_SIZE: '40', WORKER_THREADS: '1' },
    { workerFile: fileURLToPath(new URL('../fixtures/poison-anywhere-worker.js', import.meta.url)), files: { 'in.ndjson': lines.join('\n') } },
  );
  t.equal(run.summary.ok, 36, 'the 36 good records are applied');
  t.equal(run.rows.length, 36);
  const poisoned = run.deadLetters.filter((d) => d.reason === 'poisoned_batch');
  t.same(poisoned.map((d) => d.value), ['"poison"', '"poison"', '"poison"', '"poison"'], 'the four poison messages are dead-lettered');
  t.equal(run.deadLetters.length, 4, 'and nothing else');
  t.equal(run.summary.records, 40, 'records in = ok + rejected');
});
