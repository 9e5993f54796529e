// The deploy files, checked without Docker, Kubernetes or Grafana: they parse, they agree with each
// other and with the code (the CLI command, option names, defaults, metric names), and the image's
// health check command works against a real HTTP server.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { parseConfig, type Env } from '../../src/config/index.js';
import { defaultThreads, detectCpus } from '../../src/config/cpus.js';
import { rssBudgetMb } from '../../src/config/memory.js';
import { OPTIONS, defaultOf } from '../../src/config/options.js';
import { createMetrics } from '../../src/metrics/index.js';
import { KAFKA_METRICS, ROOT, freePort, loadYaml, loadYamlDocuments, metricNamesIn, repoAlertRules } from '../fixtures/prometheus.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const BIN = pkg.bin.streamstats!;
const METRICS_PORT = Number(defaultOf('METRICS_PORT'));
const API_PORT = Number(defaultOf('API_PORT'));
const SHUTDOWN_TIMEOUT = Number(defaultOf('SHUTDOWN_TIMEOUT_SECONDS'));
const KNOWN_OPTIONS = new Set<string>(OPTIONS.map((o) => o.env));

// ---------------------------------------------------------------- Dockerfile

interface Instruction {
  readonly cmd: string;
  readonly args: string;
  readonly line: number;
}
interface Stage {
  readonly image: string;
  readonly name: string;
  readonly body: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped; a parser directive stays a comment. */
function dockerInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (buf === '' && (line === '' || line.startsWith('#'))) return;
    if (buf !== '' && line.startsWith('#')) return; // comments inside a continued instruction
    if (buf === '') start = i + 1;
    if (line.endsWith('\\')) {
      buf += `${line.slice(0, -1)} `;
      return;
    }
    buf += line;
    const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(buf);
    if (m === null) throw new Error(`Dockerfile line ${start}: not an instruction: ${buf}`);
    out.push({ cmd: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
    buf = '';
  });
  if (buf !== '') throw new Error('Dockerfile ends inside a continued instruction');
  return out;
}

function dockerStages(ins: Instruction[]): Stage[] {
  const globalArgs = new Map<string, string>();
  const stages: Stage[] = [];
  for (const i of ins) {
    if (i.cmd === 'ARG' && stages.length === 0) {
      const [k, v] = i.args.split('=');
      globalArgs.set(k!, v ?? '');
    } else if (i.cmd === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(i.args);
      if (m === null) throw new Error(`FROM line ${i.line}: ${i.args}`);
      const image = m[1]!.replace(/^\$\{?(\w+)\}?$/, (_, k: string) => globalArgs.get(k) ?? `<unset ${k}>`);
      stages.push({ image, name: m[2] ?? String(stages.length), body: [] });
    } else {
      const s = stages.at(-1);
      if (s === undefined) throw new Error(`Dockerfile line ${i.line}: ${i.cmd} before FROM`);
      s.body.push(i);
    }
  }
  return stages;
}

/** ENV in both forms: `ENV A=1 B="x y"` and the legacy `ENV A 1`. */
function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.body.filter((x) => x.cmd === 'ENV')) {
    if (!i.args.includes('=')) {
      const [k, ...v] = i.args.split(/\s+/);
      env[k!] = v.join(' ');
      continue;
    }
    for (const m of i.args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g)) env[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
  }
  return env;
}

function execForm(args: string): string[] {
  const v = JSON.parse(args) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not an exec-form array: ${args}`);
  return v as string[];
}

/**
 * .dockerignore with only the forms this repo uses: `*`, `name`, `name/` and their `!` negations,
 * last match wins. Anything fancier fails the test rather than being judged wrongly.
 */
function dockerIgnored(patterns: string[], path: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const p = (negate ? raw.slice(1) : raw).replace(/\/$/, '');
    if (p !== '*' && !/^[\w.-]+(\/[\w.-]+)*$/.test(p)) throw new Error(`.dockerignore pattern this test cannot judge: ${raw}`);
    const hit = p === '*' || path === p || path.startsWith(`${p}/`);
    if (hit) ignored = !negate;
  }
  return ignored;
}

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = dockerStages(dockerInstructions(dockerfile));
const final = stages.at(-1)!;
const runsIn = (s: Stage) => s.body.filter((i) => i.cmd === 'RUN').map((i) => i.args);

t.test('Dockerfile: multi-stage on node:24-bookworm-slim, dev toolchain only in the build', async (t) => {
  t.ok(stages.length >= 2, 'a build stage and a runtime stage');
  for (const s of stages) t.equal(s.image, 'node:24-bookworm-slim', `stage ${s.name} is on the official Node 24 LTS slim image`);
  const build = stages.find((s) => runsIn(s).some((r) => /\bnpm ci\b/.test(r) && !r.includes('--omit=dev')) && runsIn(s).some((r) => /\btsc\b|npm run build/.test(r)));
  t.ok(build, 'one stage runs npm ci with dev dependencies and compiles');
  t.not(build, final, 'the compiling stage is not the final one');
  const prodRun = stages.flatMap((s) => runsIn(s).map((r) => ({ s, r }))).find(({ r }) => /\bnpm ci\b/.test(r) && r.includes('--omit=dev'));
  t.ok(prodRun, 'production dependencies come from npm ci --omit=dev');
  t.match(prodRun?.r ?? '', /--ignore-scripts/, 'with --ignore-scripts: `prepare` (tsc) must not run without the toolchain');
  const copies = final.body.filter((i) => i.cmd === 'COPY');
  if (prodRun !== undefined && prodRun.s !== final) {
    t.ok(copies.some((c) => c.args.includes(`--from=${prodRun.s.name}`) && /\/node_modules\s/.test(c.args)), 'the final stage takes node_modules from the production install');
  }
  t.ok(copies.some((c) => c.args.includes(`--from=${build?.name}`) && c.args.includes('dist/src')), 'the final stage takes dist/src from the build');
  t.ok(copies.some((c) => c.args.includes(`--from=${build?.name}`) && c.args.includes('dist/workers')), 'and the compiled workers');
  t.notOk(runsIn(final).some((r) => /\bnpm (ci|install)\b/.test(r) && !r.includes('--omit=dev')), 'no dev install in the final stage');
  t.notOk(copies.some((c) => !c.args.includes('--from=') && /(^|\s)(src|test|bench)\b/.test(c.args)), 'no sources in the final stage');
});

t.test('one Node major everywhere: the image, the node devDependency the tests run on, engines, the lockfile', async (t) => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; devDependencies: Record<string, string>; allowScripts?: Record<string, boolean> };
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const imageMajor = /^node:(\d+)-/.exec(final.image)?.[1];
  t.equal(imageMajor, '24', 'the image runs Node 24 LTS');
  t.match(manifest.devDependencies['node'] ?? '', new RegExp(`^[~^]?${imageMajor}\\.`), 'the node devDependency is the image\'s major');
  t.match(lock.packages['node_modules/node']?.version ?? '', new RegExp(`^${imageMajor}\\.`), 'and the lockfile pins a release of it');
  t.equal(manifest.engines.node, `>=${imageMajor}`, 'engines names the same major as the minimum');
  // Its preinstall fetches the binary; npm 11 skips dependency install scripts not in allowScripts.
  t.equal(manifest.allowScripts?.['node'], true, 'the node package may run its install script');
  t.match(lock.packages['node_modules/@types/node']?.version ?? '', new RegExp(`^${imageMajor}\\.`), 'the Node types follow the runtime');
});

t.test('Dockerfile: non-root, exposes METRICS_PORT and API_PORT, runs the package.json bin, health check on /healthz', async (t) => {
  const users = final.body.filter((i) => i.cmd === 'USER').map((i) => i.args);
  t.ok(users.length > 0, 'the final stage sets USER');
  t.equal(users.at(-1), 'node', 'and runs as the image\'s node user');
  t.notOk(['root', '0', '0:0'].includes(users.at(-1) ?? 'root'), 'never root');
  const userAt = final.body.findIndex((i) => i.cmd === 'USER');
  t.notOk(final.body.slice(userAt).some((i) => i.cmd === 'RUN' && /apt-get|chown|mkdir/.test(i.args)), 'setup that needs root happens before USER');

  const expose = final.body.filter((i) => i.cmd === 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
  t.same([...expose].sort(), [`${METRICS_PORT}`, `${API_PORT}`].sort(), `EXPOSE ${METRICS_PORT} ${API_PORT}: the METRICS_PORT and API_PORT defaults, and nothing else`);
  const env = envOf(final);
  for (const k of Object.keys(env)) if (k !== 'NODE_ENV') t.ok(KNOWN_OPTIONS.has(k), `ENV ${k} is a streamstats option`);
  t.doesNotThrow(() => parseConfig(env), 'the image\'s ENV is a valid configuration');
  if (env.METRICS_PORT !== undefined) t.equal(Number(env.METRICS_PORT), METRICS_PORT, 'ENV METRICS_PORT matches EXPOSE');
  if (env.API_PORT !== undefined) t.equal(Number(env.API_PORT), API_PORT, 'ENV API_PORT matches EXPOSE');

  const entrypoint = final.body.filter((i) => i.cmd === 'ENTRYPOINT');
  t.equal(entrypoint.length, 1, 'one ENTRYPOINT');
  const argv = execForm(entrypoint[0]!.args);
  const command = argv[0] === 'tini' ? argv.slice(argv.indexOf('--') + 1) : argv;
  t.same(command, ['node', BIN], `ENTRYPOINT runs \`node ${BIN}\`: package.json bin, what the tests start`);
  if (argv[0] === 'tini') t.ok(runsIn(final).some((r) => /apt-get install[^&]*\btini\b/.test(r)), 'tini is installed in the final stage');
  t.notOk(final.body.some((i) => i.cmd === 'CMD'), 'no CMD: arguments after the image name are CLI flags');
  const workdir = final.body.filter((i) => i.cmd === 'WORKDIR').at(-1)?.args;
  t.ok(final.body.some((i) => i.cmd === 'COPY' && new RegExp(`\\s(\\./)?${BIN.split('/').slice(0, -1).join('/')}/?$`).test(i.args)), `${BIN} is copied relative to WORKDIR ${workdir}`);

  const hc = final.body.filter((i) => i.cmd === 'HEALTHCHECK');
  t.equal(hc.length, 1, 'one HEALTHCHECK');
  t.match(hc[0]!.args, /--interval=\S+/, 'with an interval');
  t.match(hc[0]!.args, /--timeout=\S+/, 'and a timeout');
  const hcArgv = execForm(hc[0]!.args.replace(/^.*?\bCMD\s+/, ''));
  t.equal(hcArgv[0], 'node', 'the health check uses node itself (no curl in the slim image)');
  t.match(hcArgv.join(' '), /\/healthz/, 'against /healthz');
  t.match(hcArgv.join(' '), new RegExp(`METRICS_PORT \\|\\| ${METRICS_PORT}`), `on METRICS_PORT, ${METRICS_PORT} by default`);
});

/** Runs the image's HEALTHCHECK command here, against a server answering `status` on /healthz. */
async function runHealthcheck(status: number | null): Promise<number | null> {
  const hc = final.body.find((i) => i.cmd === 'HEALTHCHECK')!;
  const argv = execForm(hc.args.replace(/^.*?\bCMD\s+/, ''));
  let server: Server | null = null;
  const port = await freePort();
  if (status !== null) {
    server = createServer((req, res) => res.writeHead(req.url === '/healthz' ? status : 404).end());
    await new Promise<void>((r) => server!.listen(port, '127.0.0.1', r));
  }
  try {
    return await new Promise((resolve, reject) => {
      const child = spawn(process.execPath, argv.slice(1), { env: { ...process.env, METRICS_PORT: String(port) }, stdio: 'ignore' });
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    });
  } finally {
    await new Promise<void>((r) => (server === null ? r() : server.close(() => r())));
  }
}

t.test('the HEALTHCHECK command: exit 0 on a healthy /healthz, 1 otherwise', async (t) => {
  t.equal(await runHealthcheck(200), 0, '200 -> healthy');
  t.equal(await runHealthcheck(503), 1, '503 -> unhealthy');
  t.equal(await runHealthcheck(null), 1, 'nothing listening -> unhealthy');
});

t.test('.dockerignore keeps the context to what the Dockerfile copies', async (t) => {
  const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  for (const p of ['node_modules', 'dist', '.git', '.cache', '.tap', 'streamstats-dead-letter.ndjson', 'stats.ndjson', 'bench/results']) {
    t.ok(dockerIgnored(patterns, p), `${p} stays out of the build context`);
  }
  const sources = stages.flatMap((s) => s.body)
    .filter((i) => i.cmd === 'COPY' && !i.args.includes('--from='))
    .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith('--')).slice(0, -1));
  t.ok(sources.length > 0, 'the Dockerfile copies from the context');
  for (const src of sources) {
    const p = src.replace(/^\.\//, '').replace(/\/$/, '');
    t.notOk(dockerIgnored(patterns, p), `COPY ${src}: in the context`);
    t.ok(existsSync(join(ROOT, p)), `COPY ${src}: exists in the repo`);
  }
});

// ---------------------------------------------------------------- docker-compose.yml

interface ComposeService {
  image?: string;
  build?: string | { context: string };
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  stop_grace_period?: string;
  [k: string]: unknown;
}

/** Compose's `${VAR:-default}` interpolation, with an empty environment. */
function interpolate(v: string): string {
  return v.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_, _k: string, d: string | undefined) => d ?? '');
}

function seconds(d: string): number {
  const m = /^(\d+)(s|m)$/.exec(d);
  if (m === null) throw new Error(`duration ${d}`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
}

function checkEngineEnv(t: Test, env: Record<string, string>, where: string) {
  for (const k of Object.keys(env)) t.ok(KNOWN_OPTIONS.has(k), `${where}: ${k} is a streamstats option`);
  t.equal(env.SOURCE, 'kafka', `${where}: SOURCE=kafka`);
  t.ok(env.KAFKA_BROKERS, `${where}: KAFKA_BROKERS set`);
  t.ok(env.KAFKA_TOPICS, `${where}: KAFKA_TOPICS set`);
  t.ok(env.WORKER_THREADS, `${where}: WORKER_THREADS set`);
  t.doesNotThrow(() => parseConfig(env as Env), `${where}: the environment is a valid configuration`);
}

t.test('docker-compose.yml: Kafka (KRaft), the engine, the producer, Prometheus and Grafana', async (t) => {
  const compose = loadYaml(join(ROOT, 'docker-compose.yml')) as { services: Record<string, ComposeService>; volumes?: Record<string, unknown> };
  const s = compose.services;
  for (const name of ['kafka', 'streamstats', 'producer', 'prometheus', 'grafana']) t.ok(s[name], `service ${name}`);

  const kafka = s.kafka!;
  t.equal(kafka.image, 'apache/kafka:3.9.1', 'the official Apache Kafka image');
  const ke = kafka.environment ?? {};
  t.match(ke.KAFKA_PROCESS_ROLES ?? '', /broker/, 'KRaft: the node is a broker');
  t.match(ke.KAFKA_PROCESS_ROLES ?? '', /controller/, 'and its own controller');
  const advertised = (ke.KAFKA_ADVERTISED_LISTENERS ?? '').split(',').map((l) => l.replace(/^\w+:\/\//, ''));

  const engine = s.streamstats!;
  t.equal(typeof engine.build === 'string' ? engine.build : engine.build?.context, '.', 'the engine is built from this repo');
  const env = Object.fromEntries(Object.entries(engine.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
  checkEngineEnv(t, env, 'compose streamstats');
  t.equal(env.KAFKA_BROKERS, 'kafka:9092', 'KAFKA_BROKERS=kafka:9092');
  t.equal(env.KAFKA_TOPICS, 'metrics', 'KAFKA_TOPICS=metrics');
  t.ok(advertised.includes(env.KAFKA_BROKERS ?? ''), 'the broker advertises the address the engine uses');
  // Durable outputs: rows into the compose PostgreSQL, rejected records into a topic.
  const sink = parseConfig(env as Env).sink;
  t.equal(sink.kind, 'postgres', 'statistics rows go to PostgreSQL, not to stdout or an unbounded file');
  const pgService = s.postgres;
  t.ok(pgService, 'a postgres service');
  if (sink.kind === 'postgres' && pgService !== undefined) {
    const url = new URL(sink.url);
    const pe = pgService.environment ?? {};
    t.equal(url.hostname, 'postgres', 'SINK points at the postgres service');
    t.equal(decodeURIComponent(url.username), pe.POSTGRES_USER, 'as its user');
    t.equal(decodeURIComponent(url.password), pe.POSTGRES_PASSWORD, 'with its password');
    t.equal(url.pathname.slice(1), pe.POSTGRES_DB, 'into its database');
    const deps = engine.depends_on as Record<string, { condition: string }>;
    t.equal(deps.postgres?.condition, 'service_healthy', 'the engine starts once PostgreSQL answers');
  }
  t.equal(env.DEAD_LETTER, 'kafka', 'dead letters to a topic (the dead-letter file has no cap)');
  t.ok(env.DLQ_TOPIC, 'DLQ_TOPIC set');
  const port = Number(env.METRICS_PORT ?? METRICS_PORT);
  t.ok((engine.ports ?? []).some((p) => String(p).endsWith(`:${port}`)), 'the metrics port is published');
  t.ok(seconds(engine.stop_grace_period ?? '10s') > Number(env.SHUTDOWN_TIMEOUT_SECONDS ?? SHUTDOWN_TIMEOUT), 'stop_grace_period outlasts SHUTDOWN_TIMEOUT_SECONDS');

  const producer = s.producer!;
  const producerCmd = [...(producer.entrypoint ?? []), ...(producer.command ?? [])];
  const nodeAt = producerCmd.indexOf('node');
  const produceBin = pkg.bin['streamstats-produce'] ?? 'dist/src/tools/produce.js';
  t.same(producerCmd.slice(nodeAt, nodeAt + 2), ['node', produceBin], `the producer runs node ${produceBin} (package.json bin streamstats-produce)`);
  t.equal(producer.image, engine.image, 'from the engine\'s image');
  for (const k of ['KAFKA_BROKERS', 'KAFKA_TOPICS', 'GEN_COUNT']) t.ok(producer.environment?.[k], `producer ${k} set`);
  t.equal(producer.environment?.KAFKA_TOPICS, env.KAFKA_TOPICS, 'the producer writes the topic the engine reads');
  t.ok(existsSync(join(ROOT, 'src/tools/produce.ts')), 'src/tools/produce.ts exists', {
    todo: existsSync(join(ROOT, 'src/tools/produce.ts')) ? false : 'the producer tool comes with the Kafka source',
  });

  const init = s['kafka-init'];
  if (init !== undefined) {
    const cmd = (init.command ?? []).join(' ');
    t.match(cmd, new RegExp(`--topic ${env.KAFKA_TOPICS}\\b`), 'kafka-init creates the engine\'s topic');
    t.match(cmd, new RegExp(`--topic ${env.DLQ_TOPIC}\\b`), 'and the dead-letter topic');
  }

  const prom = s.prometheus!;
  t.ok((prom.volumes ?? []).some((v) => v.startsWith('./deploy/prometheus:/etc/prometheus')), 'Prometheus uses the repo config and rules');
  t.ok((prom.command ?? []).includes('--config.file=/etc/prometheus/prometheus.yml'), 'and loads prometheus.yml');
  const grafana = s.grafana!;
  t.ok((grafana.volumes ?? []).some((v) => v.startsWith('./deploy/grafana/provisioning:/etc/grafana/provisioning')), 'Grafana is provisioned from the repo');

  for (const [name, svc] of Object.entries(s)) {
    for (const v of svc.volumes ?? []) {
      const [src] = v.split(':');
      if (src!.startsWith('./')) t.ok(existsSync(join(ROOT, src!)), `${name}: bind mount ${src} exists`);
      else t.ok(compose.volumes && src! in compose.volumes, `${name}: named volume ${src} is declared`);
    }
    const deps = Array.isArray(svc.depends_on) ? svc.depends_on : Object.keys(svc.depends_on ?? {});
    for (const d of deps) t.ok(s[d], `${name} depends on an existing service ${d}`);
  }
});

// ---------------------------------------------------------------- Prometheus and Grafana files

t.test('Prometheus config and rules: the streamstats job scrapes the compose engine; alerts as asked', async (t) => {
  const prom = loadYaml(join(ROOT, 'deploy/prometheus/prometheus.yml')) as { rule_files: string[]; scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[] };
  const job = prom.scrape_configs.find((j) => j.job_name === 'streamstats');
  t.ok(job, 'job "streamstats" (the alerts select it)');
  t.same(job?.static_configs.flatMap((c) => c.targets), [`streamstats:${METRICS_PORT}`], 'scrapes the compose service on METRICS_PORT');
  for (const f of prom.rule_files) t.ok(existsSync(join(ROOT, 'deploy/prometheus', f)), `rule file ${f} exists`);

  const rules = repoAlertRules();
  const find = (re: RegExp) => rules.find((r) => re.test(r.expr.replace(/\s+/g, ' ')));
  t.ok(find(/^up\{job="streamstats"\} == 0$/), 'engine down: up == 0');
  t.ok(find(/streamstats_consumer_lag_seconds.*> \d+/), 'lag seconds above a threshold');
  t.ok(find(/streamstats_records_total\{[^}]*result!="ok"/), 'rejected records rate');
  const behind = find(/streamstats_lag_state\{[^}]*state="falling_behind"[^}]*\}\) == 1$/);
  t.ok(behind, 'a lane falling behind: lag_state falling_behind');
  t.equal(behind?.for, '10m', 'for minutes, not a scrape');
  const sat = find(/streamstats_pool_utilization_ratio/);
  t.ok(sat, 'pool saturated');
  t.match(sat?.expr ?? '', /> 0\.9/, 'utilization above 0.9');
  t.match(sat?.expr ?? '', /streamstats_pool_queue_size[^]*> 0/, 'or a queue above 0');
  t.equal(sat?.for, '10m', 'for 10 minutes');
  t.ok(find(/streamstats_kafka_connected\{[^}]*\}\) == 0$/), 'broker outage: kafka_connected == 0');
  t.ok(find(/streamstats_kafka_connected/)?.for, 'for some minutes, not on one scrape');
  t.ok(find(/increase\(streamstats_commits_total\{[^}]*result!="ok"[^]*unless[^]*increase\(streamstats_commits_total\{[^}]*result="ok"/), 'commit failures: failed commits and no good one');
  t.ok(find(/streamstats_sink_writes_in_flight[^]*unless[^]*streamstats_sink_write_seconds_count/), 'sink stalled: writes waiting, none completing');
  t.ok(find(/histogram_quantile\(0\.99, [^]*streamstats_sink_write_seconds_bucket/), 'sink slow: p99 write time');
  t.ok(find(/streamstats_sink_rejected_rows_total/), 'sink rejected rows');
  const names = rules.map((r) => r.alert);
  t.equal(new Set(names).size, names.length, 'alert names are unique');
  const tested = readFileSync(join(ROOT, 'deploy/prometheus/rules.test.yml'), 'utf8');
  for (const n of names) t.match(tested, new RegExp(`alertname: ${n}\\b`), `${n} has a promtool unit test`);
  for (const r of rules) {
    t.ok(r.labels?.severity, `${r.alert} has a severity`);
    t.ok(r.annotations?.summary && r.annotations.description, `${r.alert} has a summary and a description`);
  }
  t.ok(existsSync(join(ROOT, 'deploy/prometheus/rules.test.yml')), 'the rules have promtool unit tests');
});

/** Metric names the code registers, with the series suffixes of histograms. */
async function registeredMetrics(): Promise<Set<string>> {
  const registry = new Registry();
  createMetrics(registry, { defaultMetrics: false });
  const names = new Set<string>();
  for (const { name, type } of await registry.getMetricsAsJSON()) {
    names.add(name);
    if (String(type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

t.test('dashboard and alerts use exactly the metric names of src/metrics (plus the Kafka source\'s)', async (t) => {
  const known = await registeredMetrics();
  t.ok(known.has('streamstats_records_total') && known.has('streamstats_decode_seconds_bucket'), 'the registry lists the engine\'s metrics');
  // The Kafka source's metrics are registered with the rest, under exactly these names.
  for (const k of KAFKA_METRICS) t.ok(known.has(k), `the Kafka source registers ${k}`);
  const allowed = known;

  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/streamstats.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
  const exprs = [
    ...repoAlertRules().map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => ({ where: `panel "${p.title}"`, expr: x.expr }))),
  ];
  const unknown = exprs.flatMap(({ where, expr }) => metricNamesIn(expr).filter((n) => !allowed.has(n)).map((n) => `${where}: ${n}`));
  t.same(unknown, [], 'no unknown metric names');
});

t.test('Grafana: datasource and dashboard provisioning agree with the dashboard', async (t) => {
  const ds = loadYaml(join(ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml')) as { datasources: { uid: string; type: string; url: string }[] };
  const prov = loadYaml(join(ROOT, 'deploy/grafana/provisioning/dashboards/streamstats.yml')) as { providers: { options: { path: string } }[] };
  const compose = loadYaml(join(ROOT, 'docker-compose.yml')) as { services: Record<string, ComposeService> };
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/dashboards/streamstats.json'), 'utf8')) as {
    uid: string;
    title: string;
    panels: { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; datasource?: { uid: string }; targets?: { expr: string; datasource?: { uid: string } }[] }[];
    templating: { list: { name: string; type: string; query?: unknown; current?: { value: string }; datasource?: { uid: string } }[] };
  };
  const source = ds.datasources.find((d) => d.type === 'prometheus');
  t.ok(source, 'a Prometheus datasource');
  // Panels name the datasource through a variable, so an import into a Grafana whose Prometheus has
  // another uid picks it from the menu; its default is the provisioned uid.
  const dsVar = dashboard.templating.list.find((v) => v.type === 'datasource');
  t.equal(dsVar?.query, 'prometheus', 'a datasource variable of Prometheus datasources');
  t.equal(dsVar?.current?.value, source?.uid, 'defaulting to the provisioned datasource');
  const viaVar = `\${${dsVar?.name ?? 'datasource'}}`;
  for (const v of dashboard.templating.list) if (v.datasource !== undefined) t.equal(v.datasource.uid, viaVar, `variable ${v.name} queries through it`);
  t.equal(source?.url, 'http://prometheus:9090', 'pointing at the compose Prometheus');
  const mounts = compose.services.grafana?.volumes ?? [];
  t.ok(mounts.some((v) => v.startsWith('./deploy/grafana/dashboards:') && v.split(':')[1] === prov.providers[0]?.options.path), 'the provider path is where the dashboards are mounted');

  t.equal(dashboard.uid, 'streamstats', 'a stable dashboard uid');
  const ids = dashboard.panels.map((p) => p.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  const cells = new Set<string>();
  let overlaps = 0;
  for (const p of dashboard.panels) {
    t.ok(p.gridPos.x + p.gridPos.w <= 24, `"${p.title}" fits the 24-column grid`);
    for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++) {
      for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
        if (cells.has(`${x},${y}`)) overlaps++;
        cells.add(`${x},${y}`);
      }
    }
    if (p.type === 'row') continue;
    t.equal(p.datasource?.uid, viaVar, `"${p.title}" uses the datasource variable`);
    for (const x of p.targets ?? []) t.equal(x.datasource?.uid ?? p.datasource?.uid, viaVar, `"${p.title}" targets use it too`);
  }
  t.equal(overlaps, 0, 'no panels overlap');

  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr.replace(/\s+/g, ' ')));
  const has = (re: RegExp, what: string) => t.ok(exprs.some((e) => re.test(e)), what);
  has(/sum by \(result\) \(rate\(streamstats_records_total\{[^}]*\}\[1m\]\)\)/, 'throughput: rate(streamstats_records_total[1m]) by result');
  has(/histogram_quantile\(0\.99, sum by \(le\) \(rate\(streamstats_decode_seconds_bucket/, 'decode time quantiles');
  has(/streamstats_batch_messages/, 'batch size');
  has(/by \(topic, partition\) \(streamstats_consumer_lag_messages/, 'lag in messages per partition');
  has(/by \(topic, partition\) \(streamstats_consumer_lag_seconds/, 'lag in seconds per partition');
  has(/by \(topic, partition, stream\) \(streamstats_catch_up_seconds/, 'time to catch up per lane');
  has(/sum by \(state\) \(streamstats_lag_state/, 'lanes by catch-up state');
  has(/streamstats_late_records_total/, 'late records by outcome');
  has(/streamstats_amendments_total/, 'amendments');
  has(/streamstats_pool_utilization_ratio/, 'pool utilization');
  has(/streamstats_pool_queue_size/, 'pool queue');
  has(/streamstats_records_total\{[^}]*result="late"/, 'late records');
  has(/streamstats_records_total\{[^}]*result!~"ok\|late"/, 'rejected records');
  has(/histogram_quantile\(0\.99, sum by \(le, output\) \(rate\(streamstats_sink_write_seconds_bucket/, 'sink write time by output');
  has(/streamstats_sink_writes_in_flight/, 'sink writes in flight');
  has(/rate\(streamstats_sink_rejected_rows_total/, 'sink rejected rows');
  has(/streamstats_build_info/, 'versions running');
});

t.test('LICENSE: the full Apache License 2.0 that package.json names', async (t) => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { license: string };
  t.equal(manifest.license, 'Apache-2.0');
  const text = readFileSync(join(ROOT, 'LICENSE'), 'utf8');
  t.match(text, /^\s*Apache License\s+Version 2\.0, January 2004\s+http:\/\/www\.apache\.org\/licenses\//, 'its title');
  for (let n = 1; n <= 9; n++) t.match(text, new RegExp(`\\n\\s*${n}\\. \\w`), `section ${n}`);
  t.match(text, /END OF TERMS AND CONDITIONS/, 'the whole terms, not a notice');
  t.match(text, /APPENDIX: How to apply the Apache License to your work/, 'and the appendix');
});

// ---------------------------------------------------------------- Kubernetes

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}
interface Container {
  image: string;
  env: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  ports: { name: string; containerPort: number }[];
  resources: { requests: { cpu: string; memory: string }; limits: { cpu: string; memory: string } };
  livenessProbe: { httpGet: { path: string; port: string | number } };
  readinessProbe: { httpGet: { path: string; port: string | number } };
}

interface PodSpec {
  volumes?: { name: string; secret?: { secretName: string; defaultMode?: number; items?: unknown[] } }[];
}
interface MountedContainer {
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

function portOfContainer(c: Container, name: string): number | undefined {
  return c.ports.find((p) => p.name === name)?.containerPort;
}

/**
 * The API token file of the manifest: API_TOKENS_FILE is the key "tokens" of a Secret of the same
 * manifest, mounted read-only. What the Secret holds as shipped is written to a temp file and parsed
 * by the real config: it must be refused (a placeholder holds no token, so nobody runs with a token
 * everyone who read the manifest knows). Then that content with one token line added, as an operator
 * fills it in, is written there: the path returned, for the parse of the pod's whole environment.
 */
function k8sTokenFile(t: Test, docs: readonly K8sObject[], pod: PodSpec, c: Container & MountedContainer, env: Record<string, string>): string {
  const path = env['API_TOKENS_FILE'] ?? '';
  t.ok(path.startsWith('/'), `API_TOKENS_FILE is an absolute path (${path})`);
  const mount = (c.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
  t.ok(mount, 'API_TOKENS_FILE is inside a volumeMount');
  t.equal(mount?.readOnly, true, 'mounted read-only');
  const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  t.ok(volume?.secret, 'the mounted volume is a Secret');
  t.equal(volume?.secret?.items, undefined, 'every key of the Secret is a file (no items list)');
  t.equal(volume?.secret?.defaultMode, 0o440, 'mode 0440: readable by the pod\'s fsGroup, writable by nobody');
  const key = path.slice((mount?.mountPath.replace(/\/$/, '') ?? '').length + 1);
  const secret = docs.find((d) => d.kind === 'Secret' && d.metadata.name === volume?.secret?.secretName) as (K8sObject & { stringData?: Record<string, string> }) | undefined;
  t.ok(secret, `the Secret ${volume?.secret?.secretName} is in the manifest`);
  const shipped = secret?.stringData?.[key];
  t.type(shipped, 'string', `it holds the key ${key} (stringData)`);
  const dir = t.testdir();
  const file = join(dir, key);
  writeFileSync(file, shipped ?? '', { mode: 0o600 });
  t.throws(() => parseConfig({ ...env, API_TOKENS_FILE: file } as Env), { name: 'ConfigError', variable: 'API_TOKENS_FILE', message: /holds no token/ }, 'as shipped the token file is refused: it holds no token');
  writeFileSync(file, `${shipped ?? ''}${randomBytes(32).toString('hex')} admin\n`, { mode: 0o600 });
  return file;
}

/** Kubernetes CPU quantity: "4", "1.5", "3500m". */
function cpuQuantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(q));
  if (m === null) throw new Error(`cpu quantity ${q}`);
  return Number(m[1]) / (m[2] === 'm' ? 1000 : 1);
}

t.test('deploy/kubernetes/streamstats.yaml: a Deployment with probes, resources and scrape annotations, and a Service', async (t) => {
  const docs = loadYamlDocuments(join(ROOT, 'deploy/kubernetes/streamstats.yaml')) as K8sObject[];
  const dep = docs.find((d) => d.kind === 'Deployment');
  const svc = docs.find((d) => d.kind === 'Service');
  t.equal(dep?.apiVersion, 'apps/v1', 'Deployment apps/v1');
  t.equal(svc?.apiVersion, 'v1', 'Service v1');
  if (dep === undefined || svc === undefined) return;
  const spec = dep.spec as { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: { containers: Container[]; terminationGracePeriodSeconds: number; securityContext: { runAsNonRoot: boolean } } } };
  const podLabels = spec.template.metadata.labels;
  for (const [k, v] of Object.entries(spec.selector.matchLabels)) t.equal(podLabels[k], v, `the Deployment selects its pods (${k})`);
  for (const [k, v] of Object.entries((svc.spec as { selector: Record<string, string> }).selector)) t.equal(podLabels[k], v, `the Service selects the pods (${k})`);

  const c = spec.template.spec.containers[0]!;
  const secretRefs = c.env.filter((e) => e.valueFrom?.secretKeyRef !== undefined);
  // A value from a Secret stands in here as what the Secret must hold.
  const env = Object.fromEntries(c.env.map((e) => [e.name, e.valueFrom?.secretKeyRef !== undefined ? 'postgres://user:secret@db.example:5432/streamstats' : (e.value ?? '')]));
  const tokensFile = k8sTokenFile(t, docs, spec.template.spec as unknown as PodSpec, c as Container & MountedContainer, env);
  checkEngineEnv(t, { ...env, API_TOKENS_FILE: tokensFile }, 'k8s (the token Secret filled in)');
  t.same(secretRefs.map((e) => e.name), ['SINK'], 'the sink URL (it holds a password) comes from a Secret, and only it');
  const config = parseConfig({ ...env, API_TOKENS_FILE: tokensFile } as Env);
  t.equal(config.sink.kind, 'postgres', 'statistics rows go to PostgreSQL, not to the container log');
  t.match(config.api, { enabled: true, host: '0.0.0.0', port: API_PORT }, `the statistics API serves on every interface of the pod, port ${API_PORT}`);
  t.equal(portOfContainer(c, 'api'), API_PORT, 'the container declares the API port as "api"');
  t.ok((svc.spec as { ports: { targetPort: string | number }[] }).ports.some((p) => p.targetPort === 'api' || p.targetPort === API_PORT), 'the Service exposes the API port');
  t.equal(env.DEAD_LETTER, 'kafka', 'dead letters go to a topic (the dead-letter file has no rotation or cap)');
  t.match(env.DLQ_TOPIC ?? '', /^[A-Za-z0-9._-]+$/, 'DLQ_TOPIC set');
  const volumes = (spec.template.spec as unknown as { volumes?: { name: string; emptyDir?: { sizeLimit?: string } }[] }).volumes ?? [];
  for (const v of volumes.filter((x) => x.emptyDir !== undefined)) t.ok(v.emptyDir?.sizeLimit, `emptyDir ${v.name} has a sizeLimit`);
  t.equal((spec.template.spec as unknown as { enableServiceLinks?: boolean }).enableServiceLinks, false, 'no service-link variables that look like KAFKA_* options');
  const metricsPort = c.ports.find((p) => p.containerPort === Number(env.METRICS_PORT ?? METRICS_PORT));
  t.ok(metricsPort, 'the container declares METRICS_PORT');
  const portOf = (p: string | number) => (typeof p === 'number' ? p : c.ports.find((x) => x.name === p)?.containerPort);
  t.equal(c.livenessProbe.httpGet.path, '/healthz', 'liveness on /healthz');
  t.equal(portOf(c.livenessProbe.httpGet.port), METRICS_PORT, `on port ${METRICS_PORT}`);
  t.equal(c.readinessProbe.httpGet.path, '/readyz', 'readiness on /readyz');
  t.equal(portOf(c.readinessProbe.httpGet.port), METRICS_PORT, `on port ${METRICS_PORT}`);
  const ann = spec.template.metadata.annotations;
  t.equal(ann['prometheus.io/scrape'], 'true', 'prometheus.io/scrape');
  t.equal(Number(ann['prometheus.io/port']), METRICS_PORT, 'prometheus.io/port');
  t.equal(ann['prometheus.io/path'], '/metrics', 'prometheus.io/path');
  const svcPorts = (svc.spec as { ports: { port: number; targetPort: string | number }[] }).ports;
  t.ok(svcPorts.some((p) => portOf(p.targetPort) === METRICS_PORT), 'the Service exposes the metrics port');
  t.ok(spec.template.spec.securityContext.runAsNonRoot, 'runAsNonRoot');
  t.ok(spec.template.spec.terminationGracePeriodSeconds > Number(env.SHUTDOWN_TIMEOUT_SECONDS ?? SHUTDOWN_TIMEOUT), 'the grace period outlasts SHUTDOWN_TIMEOUT_SECONDS');

  // The CPU limit becomes the cgroup quota; WORKER_THREADS=auto follows it (src/config/cpus.ts).
  const limit = cpuQuantity(c.resources.limits.cpu);
  t.ok(limit >= 2, 'a CPU limit of at least 2: the main thread and one decode thread');
  t.ok(cpuQuantity(c.resources.requests.cpu) <= limit, 'requests within limits');
  t.ok(c.resources.limits.memory, 'a memory limit');
  // The memory limit holds the README's budget for the threads auto starts under the CPU limit, with
  // the manifest's settings or the defaults: a pod killed for memory inside the budget is a lie.
  const mib = (q: string): number => {
    const m = /^(\d+)(Mi|Gi)$/.exec(q);
    return m === null ? NaN : Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
  };
  const setting = (name: 'MAX_STATE_MB' | 'WORKER_MAX_MEMORY_MB'): number => Number(env[name] ?? defaultOf(name));
  const budget = rssBudgetMb({ maxStateMb: setting('MAX_STATE_MB'), workerThreads: Math.max(1, Math.floor(limit) - 1), workerMaxMemoryMb: setting('WORKER_MAX_MEMORY_MB') });
  t.ok(mib(c.resources.limits.memory) >= budget, `the memory limit ${c.resources.limits.memory} holds the RSS budget, ${budget} MiB`);
  const cgroup = t.testdir();
  writeFileSync(join(cgroup, 'cpu.max'), `${Math.round(limit * 100000)} 100000\n`);
  const cpus = detectCpus(cgroup);
  t.equal(cpus.quota, limit, 'the pod\'s CPU limit is read back as the quota');
  t.equal(defaultThreads(cpus), Math.max(1, Math.min(availableParallelism(), Math.floor(limit)) - 1), 'auto = min(host, limit) - 1 decode threads');
});
