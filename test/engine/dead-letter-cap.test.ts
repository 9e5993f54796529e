// One message must not amplify into hundreds of thousands of dead letters.
// Regression: a 1 MiB message `[0,0,...]` gave 524,287 dead letters (149 MB).
import t from 'tap';
import { MAX_ELEMENT_DEAD_LETTERS } from '../../src/core/decode.js';
import { runPipeline } from '../fixtures/harness.js';

t.test('regression: a message of 524,287 bad elements gives 101 dead letters (100 and a summary), and the counts still add up', async (t) => {
  const n = 524_287;
  const bomb = `[${new Array(n).fill('0').join(',')}]`;
  const mixed = JSON.stringify([
    { metric: { name: 'cpu', timestamp: 1_700_000_000_000, value: 1 } },
    ...Array.from({ length: 150 }, () => ({ metric: { name: 'cpu', timestamp: 1_700_000_000_000, value: 'x' } })),
    ...Array.from({ length: 50 }, () => 7),
  ]);
  const good = JSON.stringify({ metric: { name: 'cpu', timestamp: 1_700_000_000_001, value: 2 } });
  // NDJSON (a file starting with `[` would be read as one top-level array): the bomb is one message.
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', WORKER_THREADS: '1' }, { files: { 'in.ndjson': `${good}\n${bomb}\n${mixed}\n` } });
  t.equal(run.summary.records, n + 201 + 1, 'every element is a record');
  t.equal(run.summary.ok, 2, 'the good records are applied');
  t.same(run.summary.rejected, { not_an_object: n + 50, wrong_type: 150 }, 'every rejected element is counted under its reason');
  t.ok(run.deadLetters.length <= 2 * (MAX_ELEMENT_DEAD_LETTERS + 1), `${run.deadLetters.length} dead letters in all`);
  const summaries = run.deadLetters.filter((d) => d.element === -1);
  t.equal(summaries.length, 2, 'one summary entry per message');
  t.match(summaries.map((d) => d.detail).join('\n'), new RegExp(`${n - MAX_ELEMENT_DEAD_LETTERS} more rejected elements beyond the first ${MAX_ELEMENT_DEAD_LETTERS} \\(not_an_object ${n - MAX_ELEMENT_DEAD_LETTERS}\\)`));
  t.match(summaries.map((d) => d.detail).join('\n'), /100 more rejected elements beyond the first 100 \(wrong_type 50, not_an_object 50\)/);
});
