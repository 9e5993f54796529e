// Scenario 6: sustained load (seed 003: "could the consumer keep up?"). For each rate, a fresh topic
// (4 partitions) and a fresh streamstats (SOURCE=kafka, fresh group) that has joined before the load
// starts; a rate-limited kafkajs producer child (bench/child/kafka-rate-produce.ts) then writes
// seed-000-shaped points with event time = wall clock for a fixed time. /metrics is sampled every
// 250 ms during the load and until the engine has drained what was produced.
import { sleep } from '../../src/async/index.js';
import { loadavg } from 'node:os';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { PATHS, scratchDir } from '../lib/child.js';
import { fmt, summarize, type Summary } from '../lib/stats.js';
import type { Scenario } from '../lib/scenario.js';
import type { RateProduceResult } from '../child/kafka-rate-produce.js';
import { BROKERS, createTopic, deleteTopic, metricMax, metricSum, requireBroker, startEngine, uid } from './kafka-e2e.js';

const SAMPLE_MS = 250;
/** After the producer stops, the engine gets this long to apply everything that was produced. */
const DRAIN_LIMIT_S = 60;
/** Kept up: lag (max over partitions) p99 within this during the load, and everything produced applied within drainSeconds after the load. */
const KEPT_UP = { p99LagSeconds: 5, drainSeconds: 3 };
const PARTITIONS = 4;

interface Point {
  readonly t: number;
  readonly lagMax: number;
  readonly lagSum: number;
  readonly lagMessages: number;
  readonly queue: number;
  readonly inFlight: number;
  readonly paused: number;
  readonly ok: number;
}

interface RateResult {
  readonly rate: number;
  readonly seconds: number;
  readonly producer: RateProduceResult;
  readonly consumedPerSecond: number;
  readonly lagMax: Summary;
  readonly lagMaxP99: number;
  readonly lagSum: Summary;
  readonly maxLagMessages: number;
  readonly maxQueue: number;
  readonly maxInFlight: number;
  readonly maxPaused: number;
  readonly drainSeconds: number | null;
  readonly keptUp: boolean;
  readonly loadavgBefore: number;
  readonly samples: number;
  readonly threads: number;
}


function produce(topic: string, rate: number, seconds: number): Promise<RateProduceResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PATHS.child('kafka-rate-produce'), BROKERS, topic, String(rate), String(seconds)], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let result: RateProduceResult | null = null;
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    createInterface({ input: child.stdout }).on('line', (l) => (result = JSON.parse(l) as RateProduceResult));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 && result !== null ? resolve(result) : reject(new Error(`kafka-rate-produce exited with ${code}: ${err.slice(-1000)}`))));
  });
}

/** p-th percentile (nearest rank) of the values. */
function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}

async function runRate(rate: number, seconds: number, dir: string, log: (l: string) => void): Promise<RateResult> {
  const topic = uid('ss-bench-sustained');
  await createTopic(topic, PARTITIONS);
  const e = startEngine({ KAFKA_TOPICS: topic, KAFKA_GROUP_ID: uid('ss-bench-g'), LAG_INTERVAL_SECONDS: '1' }, dir);
  try {
    await e.port;
    const joinBy = performance.now() + 60_000;
    while (!(await e.ready())) {
      if (performance.now() > joinBy) throw new Error('sustained: streamstats did not join its group within 60 s');
      await sleep(100);
    }
    const loadavgBefore = loadavg()[0]!;
    const points: Point[] = [];
    let producing = true;
    const t0 = performance.now();
    const sample = async (): Promise<Point> => {
      const ms = await e.scrape();
      const lag = ms.get('streamstats_consumer_lag_seconds') ?? [];
      const p: Point = {
        t: (performance.now() - t0) / 1000,
        lagMax: metricMax(ms, 'streamstats_consumer_lag_seconds'),
        lagSum: lag.reduce((a, x) => a + x.value, 0),
        lagMessages: metricSum(ms, 'streamstats_consumer_lag_messages'),
        queue: metricSum(ms, 'streamstats_pool_queue_size'),
        inFlight: metricSum(ms, 'streamstats_pool_in_flight_batches'),
        paused: metricSum(ms, 'streamstats_paused_partitions'),
        ok: metricSum(ms, 'streamstats_records_total', { result: 'ok' }),
      };
      points.push(p);
      return p;
    };
    const sampler = (async () => {
      while (producing) {
        const next = performance.now() + SAMPLE_MS;
        await sample();
        await sleep(Math.max(0, next - performance.now()));
      }
    })();
    let producer: RateProduceResult;
    try {
      producer = await produce(topic, rate, seconds);
    } finally {
      producing = false;
      await sampler;
    }
    const loadEnd = (performance.now() - t0) / 1000;
    const atEnd = points[points.length - 1]!;
    // Drain: everything produced applied (records ok = messages sent; every point is one valid record).
    let drainSeconds: number | null = null;
    for (;;) {
      const p = await sample();
      if (p.ok >= producer.sent) {
        drainSeconds = Math.max(0, p.t - loadEnd);
        break;
      }
      if (p.t - loadEnd > DRAIN_LIMIT_S) break;
      await sleep(SAMPLE_MS);
    }
    const during = points.filter((p) => p.t <= loadEnd);
    const lagMax = summarize(during.map((p) => p.lagMax));
    const lagSum = summarize(during.map((p) => p.lagSum));
    const p99 = percentile(during.map((p) => p.lagMax), 99);
    const threads = metricSum(await e.scrape(), 'streamstats_pool_threads');
    const keptUp = drainSeconds !== null && drainSeconds <= KEPT_UP.drainSeconds && p99 <= KEPT_UP.p99LagSeconds;
    const r: RateResult = {
      rate,
      seconds,
      producer,
      consumedPerSecond: atEnd.ok / loadEnd,
      lagMax,
      lagMaxP99: p99,
      lagSum,
      maxLagMessages: Math.max(...points.map((p) => p.lagMessages)),
      maxQueue: Math.max(...points.map((p) => p.queue)),
      maxInFlight: Math.max(...points.map((p) => p.inFlight)),
      maxPaused: Math.max(...points.map((p) => p.paused)),
      drainSeconds,
      keptUp,
      loadavgBefore,
      samples: during.length,
      threads,
    };
    log(
      `  sustained ${fmt.int(rate)} msg/s: produced ${fmt.int(producer.achievedRate)}/s, lag max-over-partitions p50 ${fmt.secs(r.lagMax.median)} s p99 ${fmt.secs(p99)} s max ${fmt.secs(lagMax.max)} s, ` +
        `queue max ${r.maxQueue}, drained ${drainSeconds === null ? 'no' : `${fmt.secs(drainSeconds)} s`} -> ${keptUp ? 'kept up' : 'did NOT keep up'}`,
    );
    const s = await e.stop();
    if (s.code !== 0) throw new Error(`sustained: streamstats exited with ${s.code} after SIGTERM:\n${s.stderrTail}`);
    return r;
  } finally {
    if (e.child.exitCode === null) e.child.kill('SIGKILL');
    await deleteTopic(topic);
  }
}

export const sustainedScenario: Scenario = {
  id: 'sustained',
  order: 6,
  title: 'Scenario 6: seed 003, sustained load on Kafka (lag and queues at a fixed rate)',
  async run(ctx) {
    const rates = [1_000, 10_000, 50_000];
    const seconds = ctx.mode === 'quick' ? 30 : 60;
    await requireBroker();
    const scratch = scratchDir('sustained');
    const results: RateResult[] = [];
    try {
      for (const rate of rates) results.push(await runRate(rate, seconds, scratch.dir, ctx.log));
    } finally {
      scratch.remove();
    }
    const p99 = (r: RateResult): number => r.lagMaxP99;
    const threads = results[0]?.threads ?? NaN;
    const markdown = [
      `## ${this.title}`,
      '',
      `Seed 003 asks whether a consumer keeps up with a steady event rate (there, a Redis-bus consumer fell 390 s behind at 1k events). For each rate, a fresh topic of ${PARTITIONS} partitions ` +
        `and a fresh \`node dist/src/cli.js\` (\`SOURCE=kafka\`, fresh \`KAFKA_GROUP_ID\`, \`LAG_INTERVAL_SECONDS=1\`, rows to a file, every other variable at its default: ` +
        `\`WORKER_THREADS=auto\` = ${threads} worker thread${threads === 1 ? '' : 's'}) that has joined its group; then \`bench/child/kafka-rate-produce.ts\`, a kafkajs producer on a 20 ms ` +
        `schedule (acks=all, up to 4 sends of at most 1,000 messages in flight), writes seed-000-shaped Monasca points (1000 names x 4 hosts, event time = wall clock) for ${seconds} s. ` +
        `/metrics is sampled every ${SAMPLE_MS} ms during the load; after it, until the engine has applied every message produced. ` +
        'The producer, the engine and the broker share the 2 CPUs (and another engineer\'s tests were running): the load is real, and it is one run per rate, not a comparison.',
      '',
      `*Lag* is \`streamstats_consumer_lag_seconds\` (age of the oldest record not yet applied, per partition; updated about once a second): the max over the ${PARTITIONS} partitions, ` +
        `and its sum over them, in percentiles over the samples taken during the load. *Kept up* means: p99 of the max lag <= ${KEPT_UP.p99LagSeconds} s during the load, and everything produced applied ` +
        `within ${KEPT_UP.drainSeconds} s after the producer stopped.`,
      '',
      '| rate asked msg/s | produced msg/s | applied msg/s during load | lag s (max over partitions) p50 / p99 / max | lag s (sum over partitions) p50 / max | lag msgs max | pool queue max | in-flight batches max | paused partitions max | drained after load | kept up? |',
      '|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|',
      ...results.map((r) =>
        `| ${fmt.int(r.rate)} | ${fmt.int(r.producer.achievedRate)} | ${fmt.int(r.consumedPerSecond)} | ${fmt.secs(r.lagMax.median)} / ${fmt.secs(p99(r))} / ${fmt.secs(r.lagMax.max)} | ` +
          `${fmt.secs(r.lagSum.median)} / ${fmt.secs(r.lagSum.max)} | ${fmt.int(r.maxLagMessages)} | ${r.maxQueue} | ${r.maxInFlight} | ${r.maxPaused} | ` +
          `${r.drainSeconds === null ? `not within ${DRAIN_LIMIT_S} s` : `${fmt.secs(r.drainSeconds)} s`} | ${r.keptUp ? 'yes' : '**no**'} |`,
      ),
      '',
      `Load average (1 min) before each rate: ${results.map((r) => `${fmt.int(r.rate)}/s: ${r.loadavgBefore.toFixed(2)}`).join(', ')}. ` +
        `${results.filter((r) => r.producer.achievedRate < 0.97 * r.rate).map((r) => `At ${fmt.int(r.rate)}/s the producer itself fell short (${fmt.int(r.producer.achievedRate)}/s): the engine was offered less than asked. `).join('')}`,
      '',
    ].join('\n');
    return {
      config: { partitions: PARTITIONS, seconds, rates: rates.join(','), sampleMs: SAMPLE_MS, LAG_INTERVAL_SECONDS: 1, 'protocol.warmup': 0, 'protocol.runs': 1 },
      groups: [],
      markdown,
      headline: results.map((r) =>
        `sustained ${fmt.int(r.rate)}/s x ${seconds} s: produced ${fmt.int(r.producer.achievedRate)}/s, lag p50/p99/max ${fmt.secs(r.lagMax.median)}/${fmt.secs(p99(r))}/${fmt.secs(r.lagMax.max)} s, ` +
          `queue max ${r.maxQueue}, in-flight max ${r.maxInFlight}, drained ${r.drainSeconds === null ? 'no' : `${fmt.secs(r.drainSeconds)} s`}: ${r.keptUp ? 'kept up' : 'did NOT keep up'}`,
      ),
    };
  },
};
