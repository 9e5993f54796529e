// Open state bounded in bytes as well as series. Large-but-legal series (keys just
// under MAX_SERIES_KEY_BYTES) fill MAX_STATE_MB long before MAX_SERIES: records of new series beyond
// it are dead-lettered as series_limit with a detail naming MAX_STATE_MB, series already open go on,
// and the close writes every admitted row (in chunks: no string over V8's limit).
import t from 'tap';
import { seriesKey } from '../../src/core/series.js';
import { seriesStateBytes } from '../../src/windows/store.js';
import { runPipeline } from '../fixtures/harness.js';

const TS = 1_700_000_000_000;
const rec = (name: string, dims: Record<string, string>, i: number): string => JSON.stringify({ metric: { name, dimensions: dims, timestamp: TS + i, value: i } });

t.test('MAX_STATE_MB: hostile large series are refused by estimated bytes, the open ones go on, records in = ok + rejected', async (t) => {
  const big = (i: number): Record<string, string> => ({ a: `${String(i).padStart(5, '0')}${'x'.repeat(995)}`, b: 'y'.repeat(960) });
  const lines: string[] = [];
  for (let i = 0; i < 10; i++) lines.push(rec('small', { host: 'h' }, i));
  for (let i = 0; i < 400; i++) lines.push(rec('big', big(i), i));
  for (let i = 0; i < 10; i++) lines.push(rec('small', { host: 'h' }, 100 + i));
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', MAX_STATE_MB: '2', MAX_SERIES: '100000', WORKER_THREADS: '1', WINDOW_SECONDS: '3600' }, { files: { 'in.ndjson': `${lines.join('\n')}\n` } });

  const sorted = (d: Record<string, string>): Array<[string, string]> => Object.entries(d).sort(([x], [y]) => (x < y ? -1 : 1));
  const smallBytes = seriesStateBytes(seriesKey('small', null, sorted({ host: 'h' }), null));
  const bigBytes = seriesStateBytes(seriesKey('big', null, sorted(big(0)), null));
  t.ok(bigBytes > 12_000, `a large-but-legal series is estimated at ${bigBytes} bytes`);
  const admitted = Math.floor((2 * 1024 * 1024 - smallBytes) / bigBytes);
  t.equal(run.summary.records, 420, '420 records in');
  t.equal(run.summary.ok + (run.summary.rejected.series_limit ?? 0), 420, 'every record is ok or series_limit');
  t.equal(run.summary.rejected.series_limit, 400 - admitted, `${400 - admitted} big series refused (${admitted} fit in 2 MiB)`);
  const bigRows = run.rows.filter((r) => r.name === 'big');
  t.equal(bigRows.length, admitted, 'a row for each admitted big series');
  t.same(run.rows.filter((r) => r.name === 'small').map((r) => r.count), [20], 'the series already open keeps every record, after the budget filled');
  const refused = run.deadLetters.filter((d) => d.reason === 'series_limit');
  t.equal(refused.length, 400 - admitted);
  t.ok(refused.every((d) => /state limit reached: MAX_STATE_MB=2/.test(d.detail)), 'each says which option refused it');
  const metrics = await run.registry.getSingleMetricAsString('streamstats_records_total');
  t.match(metrics, new RegExp(`streamstats_records_total\\{result="series_limit"\\} ${400 - admitted}`));
  const gauge = async (name: string) => (await run.registry.getSingleMetric(name)!.get()).values[0]?.value;
  t.equal(await gauge('streamstats_state_limit_bytes'), 2 * 1024 * 1024, 'the budget is exported');
  t.equal(await gauge('streamstats_state_bytes'), 0, 'every closed series gave its bytes back');
});

t.test('MAX_SERIES still refuses by count (its own detail) when the byte budget has room', async (t) => {
  const lines = Array.from({ length: 6 }, (_, i) => rec(`m${i}`, { host: 'h' }, i));
  const run = await runPipeline(t, { SOURCE: 'file:$DIR/in.ndjson', MAX_SERIES: '4', WORKER_THREADS: '1' }, { files: { 'in.ndjson': lines.join('\n') } });
  const refused = run.deadLetters.filter((d) => d.reason === 'series_limit');
  t.equal(refused.length, 2);
  t.ok(refused.every((d) => /MAX_SERIES=4 open series/.test(d.detail)));
});
