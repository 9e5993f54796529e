// /metrics?name=: only the families asked for, the refresh told which; a name that is not registered
// (or too many) is a 400 that says what name= takes, and the full exposition stays the default.
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { MAX_SCRAPE_NAMES, HttpServer } from '../../src/http/server.js';
import { LAG_FAMILIES, createMetrics } from '../../src/metrics/index.js';

async function serve(t: Test): Promise<{ get: (path: string) => Promise<{ status: number; text: string }>; asked: Array<ReadonlySet<string> | null> }> {
  const registry = new Registry();
  const metrics = createMetrics(registry);
  metrics.records.inc({ result: 'ok' }, 7);
  metrics.decodeSeconds.observe(0.002);
  const asked: Array<ReadonlySet<string> | null> = [];
  const server = new HttpServer({ host: '127.0.0.1', port: 0, registry, ready: () => true, beforeScrape: (names) => void asked.push(names) });
  const port = await server.listen();
  t.teardown(() => server.close());
  return {
    asked,
    get: async (path) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, text: await res.text() };
    },
  };
}

const families = (text: string): string[] => [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!);

t.test('name= renders only the families asked for, in full (labels, a histogram\'s buckets, sum and count)', async (t) => {
  const { get, asked } = await serve(t);
  const all = await get('/metrics');
  t.equal(all.status, 200);
  t.ok(families(all.text).length > 30, `the default is the whole exposition (${families(all.text).length} families)`);
  t.same(asked.at(-1), null, 'the refresh is told: every family');

  const one = await get('/metrics?name=streamstats_records_total');
  t.equal(one.status, 200);
  t.same(families(one.text), ['streamstats_records_total']);
  t.match(one.text, /^streamstats_records_total\{result="ok"\} 7$/m, 'its samples as in the whole exposition');
  t.same([...asked.at(-1)!], ['streamstats_records_total'], 'the refresh is told which families');
  // The same lines as the family has in the whole exposition.
  const block = (text: string, name: string) => text.split('\n').filter((l) => l.startsWith(`${name}`) || l.includes(` ${name} `)).join('\n');
  t.equal(block(one.text, 'streamstats_records_total'), block(all.text, 'streamstats_records_total'));

  const two = await get('/metrics?name=streamstats_decode_seconds&name=streamstats_messages_total');
  t.same(families(two.text).sort(), ['streamstats_decode_seconds', 'streamstats_messages_total']);
  t.match(two.text, /^streamstats_decode_seconds_bucket\{le="\+Inf"\} 1$/m);
  t.match(two.text, /^streamstats_decode_seconds_count 1$/m);
  t.ok(two.text.endsWith('\n'), 'ends with a newline as the whole exposition does');

  const other = await get('/metrics?foo=bar');
  t.equal(families(other.text).length, families(all.text).length, 'other parameters: the whole exposition');
});

t.test('a name that is not a registered family, or too many names: 400, saying what name= takes; nothing refreshed', async (t) => {
  const { get, asked } = await serve(t);
  const before = asked.length;
  const sample = await get('/metrics?name=streamstats_decode_seconds_bucket');
  t.equal(sample.status, 400);
  t.match(sample.text, /no metric family named "streamstats_decode_seconds_bucket".*without _bucket/);
  const unknown = await get(`/metrics?name=${encodeURIComponent('x'.repeat(5000))}`);
  t.equal(unknown.status, 400);
  t.ok(unknown.text.length < 600, `a long name is cut in the answer (${unknown.text.length} bytes)`);
  const many = await get(`/metrics?${Array.from({ length: MAX_SCRAPE_NAMES + 1 }, () => 'name=streamstats_records_total').join('&')}`);
  t.equal(many.status, 400);
  t.match(many.text, new RegExp(`at most ${MAX_SCRAPE_NAMES} name parameters`));
  t.equal(asked.length, before, 'no refresh ran for a refused scrape');
});

t.test('the lag families are registered under the names LAG_FAMILIES gives (a scrape of them refreshes the lag)', async (t) => {
  const registry = new Registry();
  createMetrics(registry);
  for (const n of LAG_FAMILIES) t.not(registry.getSingleMetric(n), undefined, n);
});
