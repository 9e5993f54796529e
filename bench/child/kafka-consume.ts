// Scenario 5 baselines: a plain kafkajs consumer that reads a topic from the beginning with a fresh
// group, until it has seen COUNT messages.
//   bare:  eachBatch counts the messages and resolves the batch's last offset; the bytes are untouched.
//          This is what the client library itself can deliver on this machine (the ceiling).
//   naive: the same loop, plus JSON.parse of every value and a Map of (name + dimensions, 60 s window)
//          -> count/sum/min/max on the main thread: what one would write without streamstats.
// Usage: node dist/bench/child/kafka-consume.js bare|naive BROKERS TOPIC GROUP COUNT
// Prints {"event":"first"} at the first message and {"event":"done",...} after the last one on
// stdout, so that the parent times both on its own clock, exactly as it times the engine.
import kafkajs from 'kafkajs';
import { registerCodecs } from '../../src/kafka/codecs.js';

export const CONSUME_VARIANTS = ['bare', 'naive'] as const;
export type ConsumeVariant = (typeof CONSUME_VARIANTS)[number];

export interface ConsumeDone {
  readonly event: 'done';
  readonly messages: number;
  /** naive: distinct (series, window) aggregates held at the end. */
  readonly aggregates: number;
  readonly batches: number;
}

interface Agg {
  count: number;
  sum: number;
  min: number;
  max: number;
}

interface MonascaEnvelope {
  metric: { name: string; dimensions: Record<string, string>; timestamp: number; value: number };
}

const WINDOW_MS = 60_000;

function main(): void {
  const [variant, brokers, topic, groupId, countText] = process.argv.slice(2);
  const count = Number(countText);
  if (!CONSUME_VARIANTS.includes(variant as ConsumeVariant) || !brokers || !topic || !groupId || !(count > 0)) {
    process.stderr.write('usage: kafka-consume.js bare|naive BROKERS TOPIC GROUP COUNT\n');
    process.exit(2);
  }
  registerCodecs();
  const kafka = new kafkajs.Kafka({ clientId: 'streamstats-bench', brokers: brokers.split(','), logLevel: kafkajs.logLevel.ERROR });
  // The engine's consumer settings (KAFKA_MAX_WAIT_MS=500, KAFKA_MAX_BYTES_PER_PARTITION=1 MiB, one
  // partition at a time), so that the baselines fetch exactly as the engine does.
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500, maxBytesPerPartition: 1 << 20, sessionTimeout: 30_000, heartbeatInterval: 3000 });
  const aggs = new Map<string, Agg>();
  let seen = 0;
  let batches = 0;
  let finished = false;
  const naive = variant === 'naive';

  const finish = (): void => {
    if (finished) return;
    finished = true;
    const done: ConsumeDone = { event: 'done', messages: seen, aggregates: aggs.size, batches };
    process.stdout.write(`${JSON.stringify(done)}\n`);
    // Leaving the group is not part of the measurement; bounded so that a slow leave cannot hang the run.
    const t = setTimeout(() => process.exit(0), 5000);
    void consumer.disconnect().finally(() => {
      clearTimeout(t);
      process.exit(0);
    });
  };

  void (async () => {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (finished || batch.messages.length === 0) return;
        if (seen === 0) process.stdout.write('{"event":"first"}\n');
        batches++;
        if (naive) {
          for (const m of batch.messages) {
            if (m.value === null) continue;
            const { metric } = JSON.parse(m.value.toString('utf8')) as MonascaEnvelope;
            const dims = Object.keys(metric.dimensions).sort().map((k) => `${k}=${metric.dimensions[k]}`).join(',');
            const key = `${metric.name}|${dims}|${Math.floor(metric.timestamp / WINDOW_MS)}`;
            const a = aggs.get(key);
            if (a === undefined) aggs.set(key, { count: 1, sum: metric.value, min: metric.value, max: metric.value });
            else {
              a.count++;
              a.sum += metric.value;
              if (metric.value < a.min) a.min = metric.value;
              if (metric.value > a.max) a.max = metric.value;
            }
          }
        }
        seen += batch.messages.length;
        resolveOffset(batch.lastOffset());
        if (seen >= count) finish();
      },
    });
  })().catch((err: unknown) => {
    process.stderr.write(`kafka-consume: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}

main();
