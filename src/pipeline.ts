// Wires source -> pool -> windows -> sink, and the ordered shutdown:
// stop intake, finish in-flight batches, close windows and flush, close outputs, pool, HTTP.
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from './config/index.js';
import { Decoder, dictionaryBytesFor } from './core/decode.js';
import type { DecoderSettings } from './core/messages.js';
import { Engine, type EngineOptions, type EngineTotals } from './engine/index.js';
import { HttpServer } from './http/server.js';
import { LAG_FAMILIES, POOL_FAMILIES, createMetrics } from './metrics/index.js';
import { DecodePool } from './pool/index.js';
import { LaneOwners } from './pool/owners.js';
import { OwnedEngine } from './engine/owned.js';
import { SharedSeriesBudget } from './windows/store.js';
import { openDeadLetter } from './sinks/dead-letter.js';
import { createSink } from './sinks/index.js';
import { StreamSource } from './sources/file.js';
import { GeneratorSource, OwnedGeneratorSource } from './sources/generator.js';
import type { LaneHost, Progress, PullSource } from './sources/types.js';
import { StreamstatsError } from './errors.js';
import { BUSY_SAMPLE_MS, BusyClock, endlessProgressLine } from './progress.js';
import type { Metrics } from './metrics/index.js';
// Kafka, Redis, PostgreSQL and the statistics API are loaded only by the jobs that use them: their
// clients (node-redis above all) were most of the start-up time of every job.
import type { KafkaSource } from './sources/kafka/source.js';
import type { RedisSource } from './sources/redis/source.js';

export interface Summary extends EngineTotals {
  source: string;
  threads: number;
  elapsedSeconds: number;
  recordsPerSecond: number;
  peakRssBytes: number;
  deadLetter: string;
  sink: string;
  stopped: boolean;
  /** An endless source (Kafka, Redis): it replays after a restart or rebalance, and it idles. */
  unbounded: boolean;
  /** Wall time with work in hand (records applied or batches in the pool); recordsPerSecond of an endless source is over this. */
  busySeconds: number;
  /** An endless source: messages (entries) behind when it stopped, summed over its lanes; null when unknown. */
  lagAtStop: number | null;
}

export function decoderSettings(config: Config): DecoderSettings {
  return {
    format: config.format,
    groupBy: config.groupBy,
    windowMs: config.windowSeconds * 1000,
    maxMessageBytes: config.maxMessageBytes,
    maxDimensions: config.maxDimensions,
    maxFutureMs: config.maxFutureSeconds * 1000,
    sketchAccuracy: config.percentiles.length > 0 ? config.percentileAccuracy : 0,
    maxNameBytes: config.maxNameBytes,
    maxDimensionBytes: config.maxDimensionBytes,
    maxSeriesKeyBytes: config.maxSeriesKeyBytes,
    dictionaryBytes: dictionaryBytesFor(config.workerMaxMemoryMb),
  };
}

function createPullSource(config: Config): PullSource {
  const opts = { batchSize: config.batchSize, batchMaxBytes: config.batchMaxBytes, maxMessageBytes: config.maxMessageBytes };
  switch (config.source.kind) {
    case 'generator':
      return new GeneratorSource(config.generator, config.batchSize, config.batchMaxBytes);
    case 'file':
      return StreamSource.file(config.source.path, opts);
    case 'stdin':
      return StreamSource.stdin(opts);
    case 'kafka':
    case 'redis':
      throw new StreamstatsError('STREAMSTATS_SOURCE', `SOURCE=${config.source.kind} is not a pull source`);
  }
}

export interface PipelineDeps {
  readonly logger: Logger;
  readonly registry?: Registry;
  /** Worker entry override (tests use misbehaving fixtures). */
  readonly workerFile?: string;
  readonly onListening?: (port: number) => void;
  /** The statistics API's port once it listens (API_PORT=0 picks one). */
  readonly onApiListening?: (port: number) => void;
  /** Called once when the engine cannot go on; the CLI bounds the shutdown that follows. */
  readonly onFatal?: (err: Error) => void;
}

/** A running pipeline; stop() is idempotent and resolves when shutdown is done. */
export class Pipeline {
  readonly #config: Config;
  readonly #deps: PipelineDeps;
  #source: PullSource | OwnedGeneratorSource | KafkaSource | RedisSource | null = null;
  /** The source when it is an endless, group-managed one (Kafka, Redis): its own readiness counts. */
  #endless: KafkaSource | RedisSource | null = null;
  #ready = false;
  #stopped = false;
  #fatal: Error | null = null;
  #progressTimer: NodeJS.Timeout | null = null;

  constructor(config: Config, deps: PipelineDeps) {
    this.#config = config;
    this.#deps = deps;
  }

  get ready(): boolean {
    return this.#ready && this.#fatal === null && (this.#endless?.ready ?? true);
  }

  /** Stop intake; run() then finishes in-flight batches, flushes and returns. */
  stop(): void {
    this.#stopped = true;
    this.#source?.stop();
  }

  async run(): Promise<Summary> {
    const config = this.#config;
    const { logger } = this.#deps;
    const registry = this.#deps.registry ?? new Registry();
    const metrics = createMetrics(registry);
    const settings = decoderSettings(config);
    // LANE_STATE=worker: the lanes' owners take the decode pool's place, once the sink says what its rows need.
    const decodePool = config.laneState === 'worker' ? null : new DecodePool({
      threads: config.workerThreads,
      maxInFlight: config.poolQueue,
      settings,
      workerMaxMemoryMb: config.workerMaxMemoryMb,
      taskTimeoutMs: config.taskTimeoutSeconds * 1000,
      onPoolError: (err) => logger.error({ err }, 'decode pool error outside a task (a worker failed to start?)'),
      ...(this.#deps.workerFile === undefined ? {} : { workerFile: this.#deps.workerFile }),
      onFailure: (err, willRetry) => {
        metrics.workerFailures.inc({ retried: String(willRetry) });
        logger.warn({ err, willRetry }, willRetry ? 'worker failed on a batch; retrying it once' : 'worker failed on a batch twice; dead-lettering it');
      },
    });
    metrics.poolThreads.set(config.workerThreads);
    // Before anything loads kafkajs (the sink and the dead-letter output may): our replacements for
    // parts of kafkajs's producer and, for a Kafka source, its consumer must be in its module cache
    // first (src/kafka/preload.ts, src/sources/kafka/preload.ts).
    await import('./kafka/preload.js');
    if (config.source.kind === 'kafka') await import('./sources/kafka/preload.js');
    const sink = await createSink(config.sink, { logger, groupId: config.source.kind === 'redis' ? config.redis.groupId : config.kafka.groupId, kafka: config.kafka, maxSeries: config.maxSeries });
    const deadLetter = await openDeadLetter(config.deadLetter, { logger, kafka: config.kafka, metrics });
    const engineOptions: Omit<EngineOptions, 'pool'> = {
      sink,
      deadLetter,
      metrics,
      logger,
      sourceName: config.source.kind === 'redis' ? `redis:${config.redis.streams.join(',')}` : config.source.kind === 'kafka' ? `kafka:${config.kafka.topics.join(',')}` : config.source.kind === 'file' ? `file:${config.source.path}` : config.source.kind,
      windowSeconds: config.windowSeconds,
      allowedLatenessSeconds: config.allowedLatenessSeconds,
      watermarkConfirmRecords: config.watermarkConfirmRecords,
      maxSeries: config.maxSeries,
      maxStateMb: config.maxStateMb,
      decoder: new Decoder(settings),
      autoOpenLanes: config.source.kind !== 'kafka' && config.source.kind !== 'redis',
      // Fatal means fatal: /readyz turns 503 at once, intake stops, and run() rejects after the
      // ordered shutdown, so the process exits non-zero (the supervisor restarts it; the commit
      // protocol makes the restart safe). Never a stall behind a 200.
      onFatal: (err) => {
        this.#fatal = err;
        logger.error({ err }, `fatal: ${err.message}; shutting down`);
        this.#deps.onFatal?.(err);
        this.#source?.stop();
      },
    };
    let pool: DecodePool | LaneOwners;
    let engine: Engine | OwnedEngine;
    if (decodePool === null) {
      const budget = new SharedSeriesBudget(config.maxSeries, config.maxStateMb * 1024 * 1024, undefined, { owners: config.workerThreads });
      const owners = new LaneOwners({
        threads: config.workerThreads,
        maxInFlight: config.poolQueue,
        settings: {
          decoder: settings,
          windowMs: config.windowSeconds * 1000,
          latenessMs: config.allowedLatenessSeconds * 1000,
          confirmRecords: config.watermarkConfirmRecords,
          maxSeries: config.maxSeries,
          maxStateBytes: budget.maxBytes,
          budget: budget.buffer,
          rows: { windowMs: config.windowSeconds * 1000, maxEntries: config.maxSeries },
          ...(config.percentiles.length > 0 ? { percentiles: config.percentiles } : {}),
          ...(config.lateRecords === 'amend' ? { amend: { horizonMs: config.amendHorizonSeconds * 1000 } } : {}),
          identityKeys: sink.readsIdentityKeys === true,
          ...(sink.recordLayout === undefined ? {} : { recordLayout: sink.recordLayout }),
          copyTuples: sink.readsCopyTuples === true,
        },
        workerMaxMemoryMb: config.workerMaxMemoryMb,
        taskTimeoutMs: config.taskTimeoutSeconds * 1000,
        onPoolError: (err) => logger.error({ err }, 'lane owners error outside a task (a worker failed to start?)'),
        ...(this.#deps.workerFile === undefined ? {} : { workerFile: this.#deps.workerFile }),
      });
      pool = owners;
      engine = new OwnedEngine({ ...engineOptions, owners, budget, lateRecords: config.lateRecords, amendHorizonSeconds: config.amendHorizonSeconds });
    } else {
      pool = decodePool;
      engine = new Engine({
        ...engineOptions,
        pool: decodePool,
        lateRecords: config.lateRecords,
        amendHorizonSeconds: config.amendHorizonSeconds,
        percentiles: config.percentiles,
        percentileAccuracy: config.percentileAccuracy,
      });
    }
    let source: PullSource | OwnedGeneratorSource | KafkaSource | RedisSource;
    let pull: PullSource | null = null;
    /** SOURCE=generator with LANE_STATE=worker: the owners generate their lanes' points. */
    let generated: OwnedGeneratorSource | null = null;
    if (config.source.kind === 'kafka') {
      const { KafkaSource } = await import('./sources/kafka/source.js');
      source = this.#endless = new KafkaSource({
        kafka: config.kafka,
        lanes: engine,
        metrics,
        logger,
        batchSize: config.batchSize,
        batchMaxBytes: config.batchMaxBytes,
        intakeMaxBytes: config.kafka.intakeMaxBytes,
        maxMessageBytes: config.maxMessageBytes,
        ...(sink.positions === undefined ? {} : { positions: sink.positions }),
        // PostgreSQL keeps the points in its own table: commit them to the group too (trailing the
        // sink) so lag tools see the group's progress. The exactly-once Kafka sink's store IS the
        // group's offsets (written in its transactions): a second writer would race it.
        ...(config.sink.kind === 'postgres' ? { commitStoredPositions: true } : {}),
      });
    } else if (config.source.kind === 'redis') {
      const { RedisSource } = await import('./sources/redis/source.js');
      source = this.#endless = new RedisSource({
        redis: config.redis,
        lanes: engine,
        metrics,
        logger,
        deadLetter,
        batchSize: config.batchSize,
        batchMaxBytes: config.batchMaxBytes,
        maxMessageBytes: config.maxMessageBytes,
        commitIntervalMs: config.kafka.commitIntervalMs,
        idleFlushMs: config.kafka.idleFlushMs,
        lagIntervalMs: config.kafka.lagIntervalMs,
        ...(sink.positions === undefined ? {} : { positions: sink.positions }),
      });
    } else if (config.source.kind === 'generator' && engine instanceof OwnedEngine) {
      source = generated = new OwnedGeneratorSource(config.generator, config.workerThreads, config.batchSize, config.batchMaxBytes);
    } else {
      source = pull = createPullSource(config);
    }
    this.#source = source;
    if (this.#stopped) source.stop();
    // The statistics API reads the PostgreSQL store through its own small pool: a slow query (percentiles
    // over months) must not hold the connections the sink needs for writes and position commits.
    const api = config.api.enabled && config.sink.kind === 'postgres' ? config.api : null;
    let apiPool: import('pg').Pool | null = null;
    let apiServer: import('./http/api-server.js').ApiServer | null = null;
    if (api !== null && config.sink.kind === 'postgres') {
      const [{ default: pg }, { ApiServer }, { API_DEFAULTS, createStatisticsApi }] = await Promise.all([import('pg'), import('./http/api-server.js'), import('./api/index.js')]);
      const p = new pg.Pool({ connectionString: config.sink.url, max: api.limits.connections, statement_timeout: API_DEFAULTS.statementTimeoutMs });
      p.on('error', (err) => logger.warn({ err }, 'postgres: statistics API idle client error'));
      apiPool = p;
      apiServer = new ApiServer({ host: api.host, port: api.port, maxConnections: api.limits.maxConnections, routes: createStatisticsApi({ pool: p, logger, auth: api.tokens ?? 'none', limits: api.limits }) });
    }
    const http = new HttpServer({
      host: config.metricsHost,
      port: config.metricsPort,
      registry,
      ready: () => this.ready,
      beforeScrape: async (names) => {
        // The Kafka lag is computed now, from high watermarks polled now: a scrape must never read
        // less lag than there is. A scrape of other families only does not pay the brokers' round trip.
        if (config.source.kind === 'kafka' && (names === null || LAG_FAMILIES.some((n) => names.has(n)))) await (source as KafkaSource).refreshLag();
        // The pool's utilization summarises its run-time histogram: a poll of one other family (a
        // bench's, every 20 ms) does not pay for it.
        if (names !== null && !POOL_FAMILIES.some((n) => names.has(n))) return;
        const s = pool.stats;
        metrics.poolInFlight.set(s.inFlight);
        metrics.poolQueue.set(s.queued);
        metrics.poolUtilization.set(s.utilization);
      },
    });
    const started = performance.now();
    const busy = new BusyClock(started);
    const busyTimer = setInterval(() => busy.sample(performance.now(), engine.totals.records, pool.inFlight), BUSY_SAMPLE_MS);
    busyTimer.unref();
    let peakRss = process.memoryUsage.rss();
    const rssTimer = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
    }, 250);
    rssTimer.unref();
    try {
      const port = await http.listen();
      logger.info({ port, host: config.metricsHost }, 'metrics on /metrics, health on /healthz and /readyz');
      this.#deps.onListening?.(port);
      if (apiServer !== null && api !== null) {
        const apiPort = await apiServer.listen();
        if (api.tokens === null) logger.warn({ port: apiPort, host: api.host }, 'statistics API on /v2 WITHOUT authentication (API_AUTH=none): anyone who reaches it reads every project');
        else logger.info({ port: apiPort, host: api.host, tokens: api.tokens.size }, 'statistics API on /v2 (X-Auth-Token)');
        this.#deps.onApiListening?.(apiPort);
      } else if (!config.api.enabled && config.sink.kind === 'postgres') {
        logger.info(`statistics API off: ${config.api.reason}`);
      }
      this.#ready = true;
      if (generated !== null && engine instanceof OwnedEngine) {
        this.#startProgress(generated, engine, started);
        // One lane per owner, each generated where it lives; then, as below, every window closes.
        await generated.run(engine);
        this.#ready = false;
        await engine.closeAll();
      } else if (pull === null) {
        // Endless: runs until stop(); open windows are not flushed (they are rebuilt from the commit).
        this.#startEndlessProgress(engine, metrics);
        await this.#endless?.run();
      } else {
        this.#startProgress(pull, engine, started);
        // A pull source is one lane, opened on its first batch (autoOpenLanes): the pipeline hands its
        // batches to the lane host as the Kafka and Redis sources hand theirs.
        const lanes: LaneHost = engine;
        for await (const batch of pull.batches()) {
          await lanes.submit(batch);
          if (this.#stopped) break;
        }
        this.#ready = false;
        // End of input, or stop(): every in-flight batch is applied, then every window closes.
        await engine.closeAll();
      }
    } finally {
      this.#ready = false;
      clearInterval(rssTimer);
      clearInterval(busyTimer);
      busy.sample(performance.now(), engine.totals.records, 0);
      this.#stopProgress();
      // Ordered, each step bounded: outputs first (they hold the results), then workers, then HTTP.
      await engine.drain().catch(() => {});
      await Promise.allSettled([sink.close(), deadLetter.close()]);
      await pool.close(config.shutdownTimeoutSeconds * 1000);
      await apiServer?.close();
      await http.close();
      await apiPool?.end().catch(() => {});
    }
    if (this.#fatal !== null) throw this.#fatal;
    const elapsedSeconds = (performance.now() - started) / 1000;
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    const unbounded = pull === null && generated === null;
    const lagAtStop = !unbounded ? null : config.source.kind === 'kafka' ? (source as KafkaSource).lagAtStop : await gaugeSum(metrics.lagMessages);
    return {
      ...engine.totals,
      source: source.describe,
      threads: config.workerThreads,
      elapsedSeconds,
      // A finite input is busy from start to end; an endless one idles between loads.
      recordsPerSecond: engine.totals.records / Math.max(unbounded ? busy.busySeconds : elapsedSeconds, 1e-9),
      peakRssBytes: peakRss,
      deadLetter: deadLetter.describe,
      sink: sink.describe,
      stopped: this.#stopped,
      unbounded,
      busySeconds: busy.busySeconds,
      lagAtStop,
    };
  }

  #startProgress(source: { progress(): Progress }, engine: Pick<Engine, 'totals'>, started: number): void {
    const mode = this.#config.progress;
    if (mode === 'off' || (mode === 'auto' && !process.stderr.isTTY)) return;
    this.#progressTimer = setInterval(() => {
      const p = source.progress();
      const secs = (performance.now() - started) / 1000;
      const rate = engine.totals.records / Math.max(secs, 1e-9);
      let eta = '';
      if (p.total !== null && p.total > 0 && p.done > 0) {
        const frac = Math.min(1, p.done / p.total);
        eta = ` | ${(frac * 100).toFixed(0)}% | ETA ${Math.max(0, (secs / frac) - secs).toFixed(0)}s`;
      }
      process.stderr.write(`\rrecords ${engine.totals.records.toLocaleString('en-US')} | ${Math.round(rate).toLocaleString('en-US')} records/s${eta}   `);
    }, 1000);
    this.#progressTimer.unref();
  }

  /** Kafka, Redis: records, the recent rate, the lag and the lanes held, once a second in a TTY. */
  #startEndlessProgress(engine: Pick<Engine, 'totals'>, metrics: Metrics): void {
    const mode = this.#config.progress;
    if (mode === 'off' || (mode === 'auto' && !process.stderr.isTTY)) return;
    let prev = { at: performance.now(), records: engine.totals.records };
    this.#progressTimer = setInterval(() => {
      const now = { at: performance.now(), records: engine.totals.records };
      const rate = ((now.records - prev.records) * 1000) / Math.max(now.at - prev.at, 1e-9);
      prev = now;
      const source = this.#endless;
      const lag = source === null ? Promise.resolve(null) : 'lagMessages' in source ? Promise.resolve(source.lagMessages()) : gaugeSum(metrics.lagMessages);
      void Promise.all([lag, gaugeSum(metrics.assignedPartitions)]).then(([l, lanes]) => {
        if (this.#progressTimer !== null) process.stderr.write(`\r${endlessProgressLine({ records: now.records, rate, lag: l, lanes: lanes ?? 0 })}   `);
      });
    }, 1000);
    this.#progressTimer.unref();
  }

  #stopProgress(): void {
    if (this.#progressTimer === null) return;
    clearInterval(this.#progressTimer);
    this.#progressTimer = null;
    process.stderr.write('\n');
  }
}

/** A gauge's values summed over its label sets; null when it has none. */
async function gaugeSum(g: Metrics['lagMessages'] | Metrics['assignedPartitions']): Promise<number | null> {
  const { values } = await g.get();
  return values.length === 0 ? null : values.reduce((a, v) => a + v.value, 0);
}

export function formatSummary(s: Summary): string {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const rejected = Object.values(s.rejected).reduce((a, b) => a + (b ?? 0), 0);
  const reasons = Object.entries(s.rejected).map(([k, v]) => `${k} ${n(v ?? 0)}`).join(', ');
  const threads = s.threads === 0 ? 'in-thread (WORKER_THREADS=0)' : `${s.threads} worker thread${s.threads === 1 ? '' : 's'}`;
  return [
    `streamstats summary${s.stopped ? ' (stopped by signal)' : ''}`,
    `  source       ${s.source}: ${n(s.messages)} messages in ${n(s.batches)} batches`,
    // Replayed records (skipped after a restart or rebalance) are neither ok nor rejected: shown where
    // they can happen, so that the line adds up.
    `  records      ${n(s.records)}: ok ${n(s.ok)}, rejected ${n(rejected)}${reasons === '' ? '' : ` (${reasons})`}${s.unbounded || s.replayed > 0 ? `, replayed ${n(s.replayed)}` : ''}`,
    `  windows      ${n(s.rows)} statistics rows -> ${s.sink}`,
    `  dead letters ${n(rejected)} -> ${s.deadLetter}`,
    `  elapsed      ${s.elapsedSeconds.toFixed(2)} s${s.unbounded ? ` (busy ${s.busySeconds.toFixed(2)} s)` : ''}`,
    `  throughput   ${n(s.recordsPerSecond)} records/s${s.unbounded ? ' while busy,' : ''} with ${threads}`,
    ...(s.unbounded ? [`  lag at stop  ${s.lagAtStop === null ? 'unknown' : `${n(s.lagAtStop)} messages`}`] : []),
    `  decode       ${s.decodeSeconds.toFixed(2)} s in all, ${s.batches > 0 ? ((s.decodeSeconds / s.batches) * 1000).toFixed(2) : '0'} ms per batch`,
    `  peak RSS     ${(s.peakRssBytes / 1048576).toFixed(0)} MiB`,
  ].join('\n');
}
