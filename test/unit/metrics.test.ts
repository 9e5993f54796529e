// The registry as /metrics serves it: the build-info gauge, and output promtool accepts (the
// default Node metrics included).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import t from 'tap';
import { DROPPED_DEFAULT_METRICS, createMetrics } from '../../src/metrics/index.js';
import { ROOT, which } from '../fixtures/prometheus.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

t.test('streamstats_build_info{version,node} is 1, with the package.json version and this Node', async (t) => {
  const registry = new Registry();
  createMetrics(registry, { defaultMetrics: false });
  const text = await registry.metrics();
  t.match(text, /# TYPE streamstats_build_info gauge/);
  const lines = text.split('\n').filter((l) => l.startsWith('streamstats_build_info{'));
  t.same(lines, [`streamstats_build_info{version="${pkg.version}",node="${process.version}"} 1`], 'one series, value 1');
});

const promtool = which('promtool');
const inCi = process.env.CI !== undefined && process.env.CI !== '';
if (promtool === null && inCi) t.fail('promtool not on PATH in CI: run `bash scripts/prometheus.sh install` before the tests (never skipped in CI)');

t.test('promtool check metrics accepts /metrics, Node default metrics included', { skip: promtool === null && !inCi ? 'promtool not on PATH (bash scripts/prometheus.sh install)' : false }, async (t) => {
  const registry = new Registry();
  createMetrics(registry);
  const text = await registry.metrics();
  t.match(text, /^nodejs_active_handles\{/m, 'the per-type default gauges are still there');
  t.match(text, /^process_cpu_seconds_total /m, 'and the other default metrics');
  for (const name of DROPPED_DEFAULT_METRICS) t.notMatch(text, new RegExp(`^${name}\\b`, 'm'), `${name} (a gauge named like a counter) is not served`);
  if (promtool === null) return;
  const r = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  t.equal(r.status, 0, 'promtool check metrics: no problems', { output: r.stdout + r.stderr });
  t.equal((r.stdout + r.stderr).trim(), '', 'and no lint findings');
});
