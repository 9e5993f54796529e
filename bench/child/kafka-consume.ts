// Scenario 5 baselines: a plain kafkajs consumer that reads a topic from the beginning with a fresh
// group, until it has seen COUNT messages.
//   bare:  eachBatch counts the messages and resolves the batch's last offset; the bytes are untouched.
//          This is what the client library itself can deliver on this machine (the ceiling).
//   naive: the same loop, plus JSON.parse of every value and a Map of (name + dimensions, 60 s window)
//          -> count/sum/min/max on the main thread: what one would write without streamstats.
// Usage: node dist/bench/child/kafka-consume.js bare|naive BROKERS TOPIC GROUP COUNT
// Prints {"event":"first"} at the first message and {"event":"done",...} after the last one on
// stdout, so that the parent times both on its own clock, exactly as it times the engine.
import { consumeTopic } from '../lib/kafka-consume-loop.js';

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
  const aggs = new Map<string, Agg>();
  const naive = variant === 'naive';
  consumeTopic({
    name: 'kafka-consume',
    brokers,
    topic,
    groupId,
    count,
    onBatch: (messages) => {
      if (!naive) return;
      for (const m of messages) {
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
    },
    onDone: (seen, batches) => {
      const done: ConsumeDone = { event: 'done', messages: seen, aggregates: aggs.size, batches };
      process.stdout.write(`${JSON.stringify(done)}\n`);
    },
  });
}

main();
