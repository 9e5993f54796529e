// Scenario 8: seed 003's table (xAPI learning events over a Redis bus) with streamstats as the
// consumer. For 1,000 and 100,000 events and batch sizes 1, 10, 100, 1000: a producer writes the
// events as fast as it can while the consumer runs; events/s = events / (last processed - first
// produced), lag = how far the consumer was behind when the producer finished (seed 003's "seconds
// behind at the end"). Consumers: streamstats (SOURCE=redis, one instance and two in one group) and
// a naive single-threaded XREADGROUP consumer that parses and aggregates per entry (this file, run
// as a child with `--naive`). Each consumer is its own process; CPU seconds are read from /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sleep } from '../../src/async/index.js';
import { connect, text, type RedisConn, type Reply } from '../../src/sources/redis/client.js';
import { parseRedisConfig } from '../../src/sources/redis/config.js';
import { XAPI_JSON_MAPPING, xapiStatements } from '../../src/sources/redis/xapi.js';
import { pino } from 'pino';
import { loadavg } from 'node:os';
import { PATHS, scratchDir } from '../lib/child.js';
import { alternate, ratio, type Variant, type VariantResult } from '../lib/measure.js';
import { fmt } from '../lib/stats.js';
import type { Scenario } from '../lib/scenario.js';

const SELF = fileURLToPath(import.meta.url);
const URL_ = process.env['STREAMSTATS_BENCH_REDIS'] ?? 'redis://127.0.0.1:6379';
const SIZES = [1000, 100_000] as const;
const BATCHES = [1, 10, 100, 1000] as const;
/** The cell the target is judged on, measured under the bench's protocol. */
const HEAD = { events: 100_000, batch: 1000 } as const;
type Consumer = 'naive' | 'streamstats-1' | 'streamstats-2';

const redisConfig = (stream: string) => parseRedisConfig((n) => ({ REDIS_URL: URL_, REDIS_STREAMS: stream })[n as 'REDIS_URL'] ?? defaults[n] ?? '', true);
const defaults: Record<string, string> = { REDIS_GROUP_ID: 'bench', REDIS_CONSUMER: 'naive', REDIS_FIELD: 'data', REDIS_FROM: 'earliest', REDIS_READ_COUNT: '1000', REDIS_BLOCK_MS: '1000', REDIS_CLAIM_IDLE_MS: '30000', REDIS_READ_MAX_BYTES: '16777216', REDIS_TLS_CA: '', REDIS_TLS_REJECT_UNAUTHORIZED: 'true' };
const silent = pino({ level: 'silent' });

function cpuSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

async function metricsSum(port: number, name: string, labels = ''): Promise<number> {
  try {
    // That family only: a whole exposition every 20 ms cost the consumer 2-4 ms of CPU a poll.
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics?name=${name}`, { signal: AbortSignal.timeout(2000) })).text();
    let s = 0;
    for (const l of text.split('\n')) if (l.startsWith(`${name}${labels}`)) s += Number(l.slice(l.lastIndexOf(' ') + 1));
    return s;
  } catch {
    return NaN;
  }
}

interface Proc { child: ChildProcess; port: number; stdout: () => string }

function startProc(args: string[], env: Record<string, string>, port: number): Proc {
  const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  return { child, port, stdout: () => out };
}


interface Cell { consumer: Consumer; events: number; batch: number; eventsPerSecond: number; lagSeconds: number; cpuSeconds: number }

let runs = 0;

async function measure(consumer: Consumer, events: number, batch: number, ctl: RedisConn, dir: string, basePort: number): Promise<Cell> {
  // Fresh names every run: a group's stored positions and watermark outlive its stream, and a second
  // run under the same names resumes from them (its older events then count as late).
  const run = `${process.pid}-${++runs}`;
  const stream = `ss-bench-${run}-${consumer}-${events}-${batch}`;
  const group = `bench-${run}-${consumer}-${events}-${batch}`;
  await ctl.send(['DEL', stream]);
  await ctl.send(['XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM']);
  const procs: Proc[] = [];
  if (consumer === 'naive') {
    procs.push(startProc([SELF, '--naive', stream, group, String(events), String(batch)], {}, 0));
    while (!procs[0]!.stdout().includes('ready')) await sleep(20);
  } else {
    const n = consumer === 'streamstats-2' ? 2 : 1;
    for (let i = 0; i < n; i++) {
      const port = basePort + i;
      procs.push(startProc([PATHS.cli], {
        SOURCE: 'redis', REDIS_URL: URL_, REDIS_STREAMS: stream, REDIS_GROUP_ID: group, REDIS_CONSUMER: `c${i}`,
        REDIS_READ_COUNT: String(batch), BATCH_SIZE: String(batch), REDIS_BLOCK_MS: '100', WORKER_THREADS: '1',
        METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1', LOG_LEVEL: 'warn', PROGRESS: 'off',
        SINK: `file:${join(dir, `rows-${i}.ndjson`)}`, DEAD_LETTER: `file:${join(dir, `dlq-${i}.ndjson`)}`, ...XAPI_JSON_MAPPING,
      }, port));
    }
    for (const p of procs) {
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${p.port}/readyz`).then((r) => r.status === 200, () => false);
        if (ok) break;
        await sleep(50);
      }
    }
  }
  // Start-up (module loading, worker spawn) is not consumption: CPU is counted from ready on.
  const cpuAtReady = procs.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0);
  const t0 = performance.now();
  const now = Date.now();
  let pending: Array<Promise<unknown>> = [];
  for (const s of xapiStatements({ count: events, learners: 500, courses: 10, startMs: now - events, stepMs: 1, seed: 3 })) {
    pending.push(ctl.send(['XADD', stream, '*', 'data', s.json]));
    if (pending.length >= 500) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  const produced = performance.now();
  let cpu = 0;
  if (consumer === 'naive') {
    await new Promise((r) => procs[0]!.child.once('exit', r));
  } else {
    const deadline = performance.now() + 300_000;
    for (;;) {
      let ok = 0;
      for (const p of procs) ok += await metricsSum(p.port, 'streamstats_records_total', '{result="ok"}');
      if (ok >= events) break;
      if (performance.now() > deadline || procs.some((p) => p.child.exitCode !== null)) {
        for (const p of procs) p.child.kill('SIGKILL');
        throw new Error(`redis-xapi: ${consumer} applied ${ok} of ${events} events (batch ${batch}) ${performance.now() > deadline ? 'in 300 s' : 'before it exited'}`);
      }
      await sleep(20);
    }
    cpu = procs.reduce((a, p) => a + cpuSeconds(p.child.pid!), 0) - cpuAtReady;
    for (const p of procs) p.child.kill('SIGTERM');
    await Promise.all(procs.map((p) => new Promise((r) => (p.child.exitCode !== null ? r(null) : p.child.once('exit', r)))));
  }
  const done = consumer === 'naive' ? performance.now() - (JSON.parse(procs[0]!.stdout().trim().split('\n').pop()!) as { exitLagMs: number }).exitLagMs : performance.now();
  if (consumer === 'naive') cpu = (JSON.parse(procs[0]!.stdout().trim().split('\n').pop()!) as { cpuSeconds: number }).cpuSeconds;
  await ctl.send(['DEL', stream]);
  // The group's own keys (positions, slots, leases) go with it.
  const own = await ctl.send(['KEYS', `streamstats:{${group}}:*`]);
  if (Array.isArray(own) && own.length > 0) await ctl.send(['DEL', ...own.map((k) => text(k))]);
  return { consumer, events, batch, eventsPerSecond: events / ((done - t0) / 1000), lagSeconds: Math.max(0, (done - produced) / 1000), cpuSeconds: cpu };
}

/** One entry as XREADGROUP returns it; fields null when it was deleted while pending. */
interface StreamEntry {
  readonly id: string;
  readonly fields: readonly Buffer[] | null;
}

/** XREADGROUP's reply, as node-redis gives it, for one stream -> entries (null reply = nothing within BLOCK). */
function parseRead(r: Reply): StreamEntry[] {
  if (!Array.isArray(r) || r.length === 0) return [];
  const perStream = r[0];
  if (!Array.isArray(perStream) || !Array.isArray(perStream[1])) return [];
  const out: StreamEntry[] = [];
  for (const e of perStream[1]) {
    if (!Array.isArray(e)) continue;
    const fields = e[1];
    out.push({ id: text(e[0]), fields: Array.isArray(fields) ? (fields as Buffer[]) : null });
  }
  return out;
}

/** The naive consumer: one thread, XREADGROUP COUNT batch, JSON.parse and aggregate each entry, XACK per read. */
async function naive(stream: string, group: string, events: number, batch: number): Promise<void> {
  const conn = await connect(redisConfig(stream), silent, 'naive');
  const cells = new Map<string, { n: number; sum: number; min: number; max: number }>();
  process.stdout.write('ready\n');
  const c0 = process.cpuUsage();
  let seen = 0;
  while (seen < events) {
    const entries = parseRead(await conn.send(['XREADGROUP', 'GROUP', group, 'naive', 'COUNT', String(batch), 'BLOCK', '1000', 'STREAMS', stream, '>']));
    for (const e of entries) {
      const st = JSON.parse(e.fields![1]!.toString('utf8')) as { verb: { id: string }; context: { extensions: { course: string } }; timestamp: string; result: { score: { scaled: number } } };
      const key = `${st.verb.id}|${st.context.extensions.course}|${Math.floor(Date.parse(st.timestamp) / 60_000)}`;
      const v = st.result.score.scaled;
      const c = cells.get(key);
      if (c === undefined) cells.set(key, { n: 1, sum: v, min: v, max: v });
      else { c.n++; c.sum += v; c.min = Math.min(c.min, v); c.max = Math.max(c.max, v); }
    }
    if (entries.length > 0) await conn.send(['XACK', stream, group, ...entries.map((e) => e.id)]);
    seen += entries.length;
  }
  const t = performance.now();
  const cu = process.cpuUsage(c0);
  await conn.close();
  process.stdout.write(`${JSON.stringify({ cpuSeconds: (cu.user + cu.system) / 1e6, cells: cells.size, exitLagMs: performance.now() - t })}\n`);
}

function table(cells: readonly Cell[], events: number): string {
  const rows = BATCHES.map((b) => {
    const get = (c: Consumer) => cells.find((x) => x.consumer === c && x.events === events && x.batch === b);
    const col = (c: Consumer) => {
      const x = get(c);
      return x === undefined ? '| | |' : `| ${fmt.int(x.eventsPerSecond)} | ${fmt.secs(x.lagSeconds)} s / ${fmt.secs(x.cpuSeconds)} s |`;
    };
    return `| ${b} ${col('naive')}${col('streamstats-1').slice(1)}${col('streamstats-2').slice(1)}`;
  });
  return [
    `| batch | naive events/s | naive lag / CPU | streamstats x1 events/s | x1 lag / CPU | streamstats x2 events/s | x2 lag / CPU |`,
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

export const redisXapiScenario: Scenario = {
  id: 'redis-xapi',
  order: 8,
  title: 'Scenario 8: seed 003, xAPI events over a Redis stream: streamstats against a naive XREADGROUP consumer',
  async run(ctx) {
    const ctl = await connect(redisConfig('unused'), silent, 'bench');
    const scratch = scratchDir('ss-bench-redis');
    const cells: Cell[] = [];
    const port = () => 19500 + Math.floor(Math.random() * 400);
    const loadBefore = loadavg()[1]!;
    let head: VariantResult[];
    try {
      for (const events of SIZES) {
        for (const batch of BATCHES) {
          // Alternated per cell: the three consumers run back to back on the same machine state.
          for (const consumer of ['naive', 'streamstats-1', 'streamstats-2'] as const) {
            const c = await measure(consumer, events, batch, ctl, scratch.dir, port());
            ctx.log(`  ${consumer} events ${events} batch ${batch}: ${fmt.int(c.eventsPerSecond)} events/s, lag ${fmt.secs(c.lagSeconds)} s, CPU ${fmt.secs(c.cpuSeconds)} s`);
            cells.push(c);
          }
        }
      }
      // The comparison the target is judged on, under the bench's protocol: warm-up, alternated rounds, medians.
      const headVariant = (consumer: 'naive' | 'streamstats-1', label: string): Variant => ({
        id: consumer,
        label,
        config: { events: HEAD.events, batch: HEAD.batch },
        run: async () => {
          const c = await measure(consumer, HEAD.events, HEAD.batch, ctl, scratch.dir, port());
          return { recordsPerSecond: c.eventsPerSecond, elapsedSeconds: HEAD.events / c.eventsPerSecond, peakRssBytes: NaN, extra: { lagSeconds: c.lagSeconds, cpuSeconds: c.cpuSeconds } };
        },
      });
      head = await alternate(`redis-xapi ${fmt.int(HEAD.events)} events, batch ${HEAD.batch}`, [headVariant('naive', 'naive XREADGROUP loop'), headVariant('streamstats-1', 'streamstats x1 (WORKER_THREADS=1)')], ctx.protocol, ctx.log);
    } finally {
      await ctl.close();
      scratch.remove();
    }
    const loadAfter = loadavg()[1]!;
    const [naiveHead, ssHead] = head as [VariantResult, VariantResult];
    const headRatio = ratio(ssHead, naiveHead);
    const perRound = ssHead.samples.map((x, i) => x.recordsPerSecond / naiveHead.samples[i]!.recordsPerSecond);
    const headRow = (v: VariantResult) => `| ${v.label} | ${fmt.int(v.recordsPerSecond.median)} | ${fmt.int(v.recordsPerSecond.min)}-${fmt.int(v.recordsPerSecond.max)} | ${fmt.secs(v.extra['lagSeconds']!.median)} s | ${fmt.secs(v.extra['cpuSeconds']!.median)} s |`;
    const b1 = cells.find((c) => c.consumer === 'streamstats-1' && c.events === 100_000 && c.batch === 1);
    const perEntryMs = b1 === undefined ? 'n/a' : ((b1.cpuSeconds / b1.events) * 1000).toFixed(2);
    const markdown = [
      `## ${this.title}`,
      '',
      'Seed 003 measured a Python consumer of xAPI events on a Redis stream: 2.4 rows/s unbatched (390 s behind on a 420 s run at 1,000 events), 24 at batch 10, 40-60 at batch 100. ' +
        'Here a producer writes the events (`XADD *`, 500 pipelined) as fast as it can while the consumer runs. events/s = events / (last event processed - first produced); ' +
        'lag = how far behind the consumer was when the producer finished; CPU = user + system seconds of the consumer process(es) from ready to done (start-up excluded; /proc for streamstats, `process.cpuUsage` for the naive loop). ' +
        'streamstats: `SOURCE=redis`, `FORMAT=json` with the xAPI mapping of the README, `WORKER_THREADS=1`, `BATCH_SIZE` = `REDIS_READ_COUNT` = batch, file sink; "processed" = applied to the windows (counted in `streamstats_records_total`). ' +
        'x2 = two instances in one consumer group. Naive: one thread, `XREADGROUP COUNT batch`, `JSON.parse` and a per-(verb, course, minute) aggregate of each entry, `XACK` per read.',
      '',
      'Completion is seen by polling `/metrics?name=streamstats_records_total` every 20 ms (up to 20 ms added to streamstats\' lag; one family, not the whole exposition, whose 2-4 ms a poll were charged to the consumer before). ' +
        'Reading it: both consumers are three to four orders of magnitude above seed 003\'s 2.4-60 rows/s, whose bottleneck was the insert into ClickHouse through Ralph, not the stream. ' +
        'The naive loop computes count, sum, min and max per (verb, course, minute) and acknowledges as it reads (a crash loses its aggregates); streamstats computes mean and variance (Welford) per window, ' +
        'dead-letters bad entries, acknowledges only below emitted windows and keeps lag metrics, and hands each batch to a worker thread: at batch 1 every entry is a pool task of its own ' +
        `(${perEntryMs} ms of CPU per entry in one instance here), its worst case; ` +
        'it is built for its defaults (`REDIS_READ_COUNT=1000`, `BATCH_SIZE=4000`), where the producer, not the consumer, sets the pace. ' +
        'Two instances cannot add CPU on two shared cores; they show that a group of streamstats instances splits the stream and still emits complete statistics (tested in test/integration/redis.test.ts).',
      '',
      `### ${fmt.int(HEAD.events)} events at batch ${HEAD.batch}: streamstats against the naive loop`,
      '',
      `${ctx.protocol.warmup} warm-up + ${ctx.protocol.runs} measured rounds, the two consumers alternated, medians (a fresh stream, group and consumer process per run).`,
      '',
      '| consumer | median events/s | range | lag at the end (median) | CPU (median) |',
      '|---|---:|---:|---:|---:|',
      headRow(naiveHead),
      headRow(ssHead),
      '',
      `**Target** (ratio of medians of events/s): streamstats x1 / naive ${fmt.ratio(headRatio)} (per round ${perRound.map((r) => fmt.ratio(r)).join(', ')}; target >= 1: **${headRatio >= 1 ? 'met' : 'not met'}**).`,
      '',
      `### Every batch size, one run per cell`,
      '',
      `The grid below is one run per cell (the consumers alternated within each cell), as context for batch sizes: a single run moves with whatever else the machine does. Load average (5 min) ${loadBefore.toFixed(1)} before and ${loadAfter.toFixed(1)} after the scenario (2 CPUs: above 2, other work competed with the runs).`,
      '',
      '#### 1,000 events', '', table(cells, 1000), '',
      '#### 100,000 events', '', table(cells, 100_000), '',
    ].join('\n');
    const best = (c: Consumer) => Math.max(...cells.filter((x) => x.consumer === c && x.events === 100_000).map((x) => x.eventsPerSecond));
    return {
      config: { redis: URL_, 'grid.protocol.warmup': 0, 'grid.protocol.runs': 1, 'head.events': HEAD.events, 'head.batch': HEAD.batch },
      groups: [{ id: 'head', title: `${fmt.int(HEAD.events)} events at batch ${HEAD.batch}`, variants: head, baseline: 'naive' }],
      markdown,
      headline: [
        `redis-xapi: ${fmt.int(HEAD.events)} events at batch ${HEAD.batch}, medians: naive ${fmt.int(naiveHead.recordsPerSecond.median)} events/s, streamstats x1 ${fmt.int(ssHead.recordsPerSecond.median)} (${fmt.ratio(headRatio)})`,
        `redis-xapi grid, 100k events, best batch: naive ${fmt.int(best('naive'))} events/s, streamstats x1 ${fmt.int(best('streamstats-1'))}, x2 ${fmt.int(best('streamstats-2'))}`,
      ],
    };
  },
};

if (process.argv[1] === SELF && process.argv[2] === '--naive') {
  const [stream, group, events, batch] = process.argv.slice(3);
  await naive(stream!, group!, Number(events), Number(batch));
}
