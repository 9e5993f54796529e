// Metric definitions. The registry is passed in (never the global one), so tests and several
// engines in one process never share state.
import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { logLinesDropped } from '../logger.js';
import { REJECT_REASONS } from '../core/messages.js';
import { VERSION } from '../config/version.js';

// Decode of one batch runs from tens of microseconds (1 message) to seconds (100k messages).
const SECONDS_BUCKETS = [1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const MESSAGE_BUCKETS = [1, 10, 100, 500, 1000, 2500, 5000, 10000, 50000, 100000];
const BYTE_BUCKETS = [256, 1024, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

export const PREFIX = 'streamstats_';

/** The families a Kafka source computes at scrape time (from high watermarks polled then). */
export const LAG_FAMILIES: readonly string[] = [`${PREFIX}consumer_lag_messages`, `${PREFIX}consumer_lag_seconds`, `${PREFIX}catch_up_seconds`, `${PREFIX}lag_state`];
/** The pool's gauges, set from its statistics at a scrape that asks for one of them. */
export const POOL_FAMILIES: readonly string[] = [`${PREFIX}pool_in_flight_batches`, `${PREFIX}pool_queue_size`, `${PREFIX}pool_utilization_ratio`];

/**
 * prom-client's default metrics that `promtool check metrics` refuses: gauges named *_total (a
 * suffix reserved for counters). Their per-type siblings (nodejs_active_handles{type}, ...) stay,
 * and sum() of those is the same number.
 */
export const DROPPED_DEFAULT_METRICS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'] as const;

export function createMetrics(registry: Registry, opts: { defaultMetrics?: boolean } = {}) {
  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  }
  const registers = [registry];
  const m = {
    messages: new Counter({ name: `${PREFIX}messages_total`, help: 'Messages read from the source', registers }),
    records: new Counter({
      name: `${PREFIX}records_total`,
      help: 'Records by result: ok, or the rejection reason (each rejected record is in the dead-letter output)',
      labelNames: ['result'] as const,
      registers,
    }),
    decodeSeconds: new Histogram({
      name: `${PREFIX}decode_seconds`,
      help: 'Time to parse and pre-aggregate one batch, measured where it ran (worker or main thread)',
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    batchMessages: new Histogram({ name: `${PREFIX}batch_messages`, help: 'Messages per batch handed to the pool', buckets: MESSAGE_BUCKETS, registers }),
    batchBytes: new Histogram({ name: `${PREFIX}batch_bytes`, help: 'Bytes per batch handed to the pool', buckets: BYTE_BUCKETS, registers }),
    taskWaitSeconds: new Histogram({
      name: `${PREFIX}pool_task_wait_seconds`,
      help: 'Time a batch spent queued and in transit (total minus decode time)',
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    taskRunSeconds: new Histogram({ name: `${PREFIX}pool_task_run_seconds`, help: 'Time a batch ran in a worker', buckets: SECONDS_BUCKETS, registers }),
    poolThreads: new Gauge({ name: `${PREFIX}pool_threads`, help: 'Decode worker threads (0 = in-thread decode)', registers }),
    poolInFlight: new Gauge({ name: `${PREFIX}pool_in_flight_batches`, help: 'Batches queued or running in the pool', registers }),
    poolQueue: new Gauge({ name: `${PREFIX}pool_queue_size`, help: 'Batches waiting for a free worker', registers }),
    poolUtilization: new Gauge({ name: `${PREFIX}pool_utilization_ratio`, help: 'Share of worker capacity in use (0..1)', registers }),
    poolBackpressure: new Counter({ name: `${PREFIX}pool_backpressure_waits_total`, help: 'Times the source waited for pool capacity', registers }),
    workerFailures: new Counter({
      name: `${PREFIX}worker_failures_total`,
      help: 'Batches whose worker threw or died, by whether the batch was retried',
      labelNames: ['retried'] as const,
      registers,
    }),
    logLinesDropped: new Counter({
      name: `${PREFIX}log_lines_dropped_total`,
      help: 'Log lines dropped because stderr did not take them (a stuck or slow log reader)',
      registers,
      collect() {
        this.reset();
        this.inc(logLinesDropped());
      },
    }),
    poisonedBatches: new Counter({ name: `${PREFIX}poisoned_batches_total`, help: 'Poison messages (batches bisected down to one message) dead-lettered after two failures', registers }),
    windowsEmitted: new Counter({ name: `${PREFIX}windows_emitted_total`, help: 'Statistics rows emitted (one per window and series)', registers }),
    openSeries: new Gauge({ name: `${PREFIX}open_series`, help: 'Series with at least one open window', registers }),
    stateBytes: new Gauge({ name: `${PREFIX}state_bytes`, help: 'Estimated bytes of the open series (key and row cache) and their percentile sketches, counted against MAX_STATE_MB; new series beyond it are series_limit', registers }),
    stateLimitBytes: new Gauge({ name: `${PREFIX}state_limit_bytes`, help: 'MAX_STATE_MB in bytes (the budget state_bytes is counted against)', registers }),
    lateRecords: new Counter({
      name: `${PREFIX}late_records_total`,
      help: 'Records whose window was already emitted, by outcome: amended (merged, the row emitted again as a new revision; LATE_RECORDS=amend), dead_lettered (as late: LATE_RECORDS=dead-letter, or its kept state was evicted at MAX_STATE_MB), beyond_horizon (more than AMEND_HORIZON_SECONDS after the window closed: dead-lettered as late)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    amendments: new Counter({ name: `${PREFIX}amendments_total`, help: 'Rows emitted again as a new revision with late records merged (LATE_RECORDS=amend)', registers }),
    amendStateBytes: new Gauge({ name: `${PREFIX}amend_state_bytes`, help: 'Estimated bytes of the closed windows kept for amendment (part of state_bytes, counted against MAX_STATE_MB)', registers }),
    amendKeptWindows: new Gauge({ name: `${PREFIX}amend_kept_windows`, help: 'Closed windows kept for amendment, over all partitions', registers }),
    amendEvictedWindows: new Counter({ name: `${PREFIX}amend_evicted_windows_total`, help: 'Kept closed windows dropped before their horizon to stay within MAX_STATE_MB (open series come first); their late records are dead-lettered', registers }),
    openWindows: new Gauge({ name: `${PREFIX}open_windows`, help: 'Distinct open window starts, over all partitions', registers }),
    watermark: new Gauge({
      name: `${PREFIX}watermark_seconds`,
      help: 'Event-time watermark per topic and partition (seconds since the epoch; topic empty for a source without topics), labelled as the lag metrics are',
      labelNames: ['topic', 'partition'] as const,
      registers,
    }),
    replayed: new Counter({
      name: `${PREFIX}replayed_records_total`,
      help: 'Records read again after a restart or rebalance and skipped: their window was already emitted, or they were already dead-lettered',
      registers,
    }),
    laneRebuilds: new Counter({
      name: `${PREFIX}lane_rebuilds_total`,
      help: 'LANE_STATE=worker: lanes whose owner worker died (crash, WORKER_MAX_MEMORY_MB, TASK_TIMEOUT_SECONDS) and that were rebuilt by replaying their input from their commit point',
      registers,
    }),
    lagMessages: new Gauge({
      name: `${PREFIX}consumer_lag_messages`,
      help: 'High watermark minus the next offset to process, per topic and partition (SOURCE=redis: entries not yet delivered to the group, per stream)',
      labelNames: ['topic', 'partition', 'stream'] as const,
      registers,
    }),
    lagSeconds: new Gauge({
      name: `${PREFIX}consumer_lag_seconds`,
      help: 'Age of the oldest record not yet processed (0 when caught up), per topic and partition (SOURCE=redis: per stream)',
      labelNames: ['topic', 'partition', 'stream'] as const,
      registers,
    }),
    catchUpSeconds: new Gauge({
      name: `${PREFIX}catch_up_seconds`,
      help: 'Estimated seconds until the lag is gone: lag / (consume rate - produce rate) over the last minute; 0 keeping up, +Inf falling behind (labelled as the lag metrics are)',
      labelNames: ['topic', 'partition', 'stream'] as const,
      registers,
    }),
    lagState: new Gauge({
      name: `${PREFIX}lag_state`,
      help: '1 for the lane\'s state, 0 for the others: keeping_up (nothing behind, or the oldest unprocessed record at most 10 s old), catching_up (lag shrinking over the last minute), falling_behind (lag not shrinking)',
      labelNames: ['topic', 'partition', 'stream', 'state'] as const,
      registers,
    }),
    commits: new Counter({ name: `${PREFIX}commits_total`, help: 'Offset commits by result', labelNames: ['result'] as const, registers }),
    commitSeconds: new Histogram({ name: `${PREFIX}commit_seconds`, help: 'Offset commit latency', buckets: SECONDS_BUCKETS, registers }),
    rebalances: new Counter({ name: `${PREFIX}rebalances_total`, help: 'Consumer group joins (each a new assignment)', registers }),
    assignedPartitions: new Gauge({ name: `${PREFIX}assigned_partitions`, help: 'Partitions assigned to this instance', registers }),
    pausedPartitions: new Gauge({ name: `${PREFIX}paused_partitions`, help: 'Partitions paused because the pool is full', registers }),
    fetchBatchMessages: new Histogram({
      name: `${PREFIX}fetch_batch_messages`,
      help: 'Messages per batch fetched from Kafka',
      buckets: MESSAGE_BUCKETS,
      registers,
    }),
    kafkaConnected: new Gauge({ name: `${PREFIX}kafka_connected`, help: '1 while the consumer is in its group, else 0', registers }),
    kafkaReconnects: new Counter({ name: `${PREFIX}kafka_reconnects_total`, help: 'Times the consumer was rebuilt after a crash or an unreachable broker', registers }),
    sinkWriteSeconds: new Histogram({
      name: `${PREFIX}sink_write_seconds`,
      help: 'Time to hand one group of rows to the sink, by output',
      labelNames: ['output'] as const,
      buckets: SECONDS_BUCKETS,
      registers,
    }),
    sinkRejectedRows: new Counter({
      name: `${PREFIX}sink_rejected_rows_total`,
      help: 'Statistics rows the sink refused for a reason of the row (dead-lettered as sink_rejected; their records count in records_total{result="sink_rejected"})',
      registers,
    }),
    sinkWritesInFlight: new Gauge({ name: `${PREFIX}sink_writes_in_flight`, help: 'Emissions handed to the sink and not yet acknowledged', registers }),
    deadLetterRotations: new Counter({
      name: `${PREFIX}dead_letter_rotations_total`,
      help: 'Times the dead-letter file reached DEAD_LETTER_MAX_BYTES and was renamed PATH.1',
      registers,
    }),
    deadLetterDeletedBytes: new Counter({
      name: `${PREFIX}dead_letter_deleted_bytes_total`,
      help: 'Bytes of dead letters deleted with the oldest rotated file (beyond DEAD_LETTER_FILES)',
      registers,
    }),
    // SOURCE=redis (src/sources/redis): the group's pending entries (delivered, not yet acknowledged).
    redisPending: new Gauge({
      name: `${PREFIX}redis_pending_entries`,
      help: 'SOURCE=redis: entries delivered to the consumer group and not yet acknowledged (XINFO GROUPS pending), per stream',
      labelNames: ['stream'] as const,
      registers,
    }),
    redisLanesStalled: new Gauge({
      name: `${PREFIX}redis_lanes_stalled`,
      help: 'SOURCE=redis: lanes that cannot read now (Redis unreachable, or the stream or consumer group gone and being recreated); /readyz is 503 while any is',
      registers,
    }),
    buildInfo: new Gauge({
      name: `${PREFIX}build_info`,
      help: 'Always 1; the labels say which streamstats version runs on which Node',
      labelNames: ['version', 'node'] as const,
      registers,
    }),
  };
  m.buildInfo.set({ version: VERSION, node: process.version }, 1);
  // Every result label exists from the start, so rate() and alerts see zeros, not absent series.
  m.records.inc({ result: 'ok' }, 0);
  for (const r of REJECT_REASONS) m.records.inc({ result: r }, 0);
  m.workerFailures.inc({ retried: 'true' }, 0);
  m.workerFailures.inc({ retried: 'false' }, 0);
  for (const r of ['ok', 'error']) m.commits.inc({ result: r }, 0);
  for (const o of ['amended', 'dead_lettered', 'beyond_horizon']) m.lateRecords.inc({ outcome: o }, 0);
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
