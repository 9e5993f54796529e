// A real Prometheus scrapes a real engine: the repo's alert rules load and evaluate, and every query of
// the Grafana dashboard is valid PromQL that (outside the Kafka panels) returns the engine's data.
// Needs the prometheus and promtool binaries (scripts/prometheus.sh install). In CI a missing binary
// fails the test; on a laptop it is skipped with the reason.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  CLI,
  KAFKA_METRICS,
  PROMETHEUS_DIR,
  ROOT,
  RULES_FILE,
  freePort,
  loadYaml,
  metricNamesIn,
  promApi,
  promQuery,
  repoAlertRules,
  spawnOwned,
  waitFor,
  which,
} from '../fixtures/prometheus.js';

const JOB = 'streamstats'; // the alerts select job="streamstats"
const prometheus = which('prometheus');
const promtool = which('promtool');
const missing = [prometheus === null ? 'prometheus' : '', promtool === null ? 'promtool' : ''].filter((x) => x !== '');

interface ScrapeConfig {
  job_name: string;
  scrape_interval?: string;
  static_configs?: { targets: string[] }[];
  [k: string]: unknown;
}

/**
 * The repo's prometheus.yml with the compose target replaced by the engine on loopback, 1 s
 * intervals, and the repo's rules.yml by absolute path. JSON is YAML, so it is written as JSON.
 */
function testConfig(enginePort: number): string {
  const repo = loadYaml(join(PROMETHEUS_DIR, 'prometheus.yml')) as { global?: Record<string, unknown>; rule_files: string[]; scrape_configs: ScrapeConfig[] };
  const job = repo.scrape_configs.find((s) => s.job_name === JOB);
  if (job === undefined) throw new Error(`deploy/prometheus/prometheus.yml has no job "${JOB}"`);
  return JSON.stringify({
    global: { ...repo.global, scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: [RULES_FILE],
    scrape_configs: [{ ...job, scrape_interval: '1s', scrape_timeout: '1s', static_configs: [{ targets: [`127.0.0.1:${enginePort}`] }] }],
  });
}

interface RuleState {
  name: string;
  type: string;
  health: string;
  state?: string;
  lastError?: string;
  lastEvaluation?: string;
}

if (missing.length > 0 && process.env.CI !== undefined && process.env.CI !== '') {
  t.fail(`${missing.join(' and ')} not on PATH in CI: run \`bash scripts/prometheus.sh install\` before the tests (this test never skips in CI)`);
} else {
  t.test(
    'Prometheus scrapes the engine, loads the alert rules and answers every dashboard query',
    { skip: missing.length > 0 ? `${missing.join(' and ')} not on PATH: run \`bash scripts/prometheus.sh install\` (Debian/Ubuntu) to run this test` : false, timeout: 90_000 },
    async (t) => {
      const dir = t.testdir();
      const enginePort = await freePort();
      const promPort = await freePort();
      const base = `http://127.0.0.1:${promPort}`;

      // ~25 s of generated input at 2000 points/s; stopped with SIGTERM once the checks are done.
      const engine = spawnOwned(t, process.execPath, [CLI], {
        ...process.env,
        SOURCE: 'generator',
        GEN_COUNT: '50000',
        GEN_RATE: '2000',
        WORKER_THREADS: '1',
        BATCH_SIZE: '200',
        SINK: `file:${join(dir, 'rows.ndjson')}`,
        DEAD_LETTER: `file:${join(dir, 'dead-letter.ndjson')}`,
        METRICS_HOST: '127.0.0.1',
        METRICS_PORT: String(enginePort),
        LOG_LEVEL: 'warn',
        PROGRESS: 'off',
      });

      const configPath = join(dir, 'prometheus.yml');
      writeFileSync(configPath, testConfig(enginePort));
      const check = spawnSync(promtool!, ['check', 'config', configPath], { encoding: 'utf8' });
      t.equal(check.status, 0, 'promtool check config: the test config (derived from the repo\'s) is valid', { output: check.stdout + check.stderr });

      const server = spawnOwned(t, prometheus!, [
        `--config.file=${configPath}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        '--log.level=warn',
      ], process.env);
      const logs = () => ({ prometheus: server.output().slice(-3000), engine: engine.output().slice(-3000) });

      try {
        await waitFor('Prometheus /-/ready', 20_000, async () => {
          if (server.child.exitCode !== null) throw new Error(`prometheus exited with ${server.child.exitCode}`);
          const r = await fetch(`${base}/-/ready`, { signal: AbortSignal.timeout(2_000) });
          return r.ok ? true : undefined;
        });

        const records = await waitFor('streamstats_records_total{result="ok"} > 0 from the engine', 20_000, async () => {
          const rs = await promQuery(base, `streamstats_records_total{job="${JOB}"}`);
          const ok = rs.find((s) => s.metric.result === 'ok');
          return ok !== undefined && Number(ok.value[1]) > 0 ? rs : undefined;
        });
        t.ok(records.every((s) => s.metric.instance === `127.0.0.1:${enginePort}`), 'the series come from the engine under test');
        t.ok(records.some((s) => s.metric.result === 'malformed_json'), 'rejection reasons are exported from the start, as zeros');

        const up = await promQuery(base, `up{job="${JOB}"} == 1`);
        t.equal(up.length, 1, 'up{job="streamstats"} == 1');

        // Every alert of rules.yml is loaded and has been evaluated without error.
        const expected = repoAlertRules();
        const rules = await waitFor('every alert rule evaluated', 15_000, async () => {
          const data = await promApi<{ groups: { name: string; file: string; rules: RuleState[] }[] }>(base, '/api/v1/rules');
          const all = data.groups.flatMap((g) => g.rules);
          const evaluated = all.filter((r) => r.health !== 'unknown');
          return all.length >= expected.length && evaluated.length === all.length ? all : undefined;
        });
        t.same(rules.map((r) => r.name).sort(), expected.map((r) => r.alert).sort(), 'the loaded alerts are exactly those of deploy/prometheus/rules.yml');
        for (const r of rules) {
          t.equal(r.type, 'alerting', `${r.name} is an alerting rule`);
          t.equal(r.health, 'ok', `${r.name} evaluates without error${r.lastError ? `: ${r.lastError}` : ''}`);
        }
        t.equal(rules.find((r) => r.name === 'StreamstatsDown')?.state, 'inactive', 'StreamstatsDown is quiet while the engine is up');

        // Every dashboard query: valid PromQL against a real server; the panels fed by the engine
        // (everything but the Kafka source's metrics, absent with the generator) return data.
        const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/streamstats.json'), 'utf8')) as {
          panels: { title: string; targets?: { expr: string }[] }[];
        };
        // Enough samples for rate() over [1m] (two points) and histogram quantiles.
        await new Promise((r) => setTimeout(r, 2_500));
        const kafka = new Set<string>(KAFKA_METRICS);
        for (const panel of dashboard.panels) {
          for (const target of panel.targets ?? []) {
            const expr = target.expr.replaceAll('$instance', '.*');
            let result: Awaited<ReturnType<typeof promQuery>> = [];
            try {
              result = await promQuery(base, expr);
            } catch (err) {
              t.fail(`"${panel.title}": ${expr}: ${(err as Error).message}`);
              continue;
            }
            const fromKafka = metricNamesIn(expr).some((m) => kafka.has(m));
            // "> 0" filters (rejections by reason) may rightly be empty on clean input.
            if (!fromKafka && !/\)\s*>\s*0\s*$/.test(expr)) {
              t.ok(result.length > 0, `"${panel.title}" has data: ${expr}`);
            } else {
              t.pass(`"${panel.title}" is valid PromQL: ${expr}`);
            }
          }
        }

        // The repo's own checks, as CI and the README run them.
        const rulesCheck = spawnSync(promtool!, ['check', 'rules', RULES_FILE], { encoding: 'utf8' });
        t.equal(rulesCheck.status, 0, 'promtool check rules deploy/prometheus/rules.yml', { output: rulesCheck.stdout + rulesCheck.stderr });
        const scriptCheck = spawnSync('bash', [join(ROOT, 'scripts/prometheus.sh'), 'check'], { encoding: 'utf8' });
        t.equal(scriptCheck.status, 0, 'scripts/prometheus.sh check: config, rules and rule unit tests', { output: scriptCheck.stdout + scriptCheck.stderr });
        t.match(scriptCheck.stdout, /Unit Testing:\s+rules\.test\.yml\s+SUCCESS/, 'the rule unit tests pass');
      } catch (err) {
        t.fail((err as Error).message, logs());
      }

      t.equal(engine.child.exitCode, null, 'the engine was still running at the end of the checks');
      t.equal(await engine.stop(), 0, 'the engine shuts down cleanly on SIGTERM', logs());
      t.equal(await server.stop(), 0, 'prometheus shuts down cleanly on SIGTERM', logs());
    },
  );

  t.test(
    'scripts/prometheus.sh start and stop: the no-Docker path of deploy/README.md',
    { skip: missing.length > 0 ? `${missing.join(' and ')} not on PATH` : false, timeout: 60_000 },
    async (t) => {
      const dir = t.testdir();
      const port = await freePort();
      const env = { ...process.env, PROMETHEUS_PORT: String(port), PROMETHEUS_RUN_DIR: dir, STREAMSTATS_TARGET: '127.0.0.1:1' };
      const script = join(ROOT, 'scripts/prometheus.sh');
      t.teardown(() => {
        spawnSync('bash', [script, 'stop'], { env, encoding: 'utf8' });
      });
      const start = spawnSync('bash', [script, 'start'], { env, encoding: 'utf8', timeout: 40_000 });
      t.equal(start.status, 0, 'start', { output: start.stderr });
      t.equal(start.stdout.trim(), `http://127.0.0.1:${port}`, 'start prints the URL');
      const config = readFileSync(join(dir, 'prometheus.yml'), 'utf8');
      t.match(config, /targets: \["127\.0\.0\.1:1"\]/, 'the compose target is replaced by STREAMSTATS_TARGET');
      const rules = await promApi<{ groups: { rules: RuleState[] }[] }>(`http://127.0.0.1:${port}`, '/api/v1/rules');
      t.equal(rules.groups.flatMap((g) => g.rules).length, repoAlertRules().length, 'it loads the repo rules');
      const status = spawnSync('bash', [script, 'status'], { env, encoding: 'utf8' });
      t.equal(status.status, 0, 'status: running');
      const stop = spawnSync('bash', [script, 'stop'], { env, encoding: 'utf8', timeout: 20_000 });
      t.equal(stop.status, 0, 'stop', { output: stop.stderr });
      await t.rejects(fetch(`http://127.0.0.1:${port}/-/ready`, { signal: AbortSignal.timeout(2_000) }), 'nothing listens on the port after stop');
    },
  );
}
