// Scenario 6 load: produces seed-000-shaped Monasca points to a topic at a fixed rate for a fixed time.
// Event time follows the wall clock (the generator's round interval is set so that 4,000 series at
// RATE points/s advance event time by one second per second), keyed by series like streamstats-produce.
// Usage: node dist/bench/child/kafka-rate-produce.js BROKERS TOPIC RATE SECONDS
// Prints one JSON line with what it achieved.
import kafkajs from 'kafkajs';
import { patchRequestQueue } from '../../src/kafka/request-queue.js';
import { generatePoints } from '../../src/sources/generator.js';

export interface RateProduceResult {
  readonly rate: number;
  readonly seconds: number;
  readonly sent: number;
  readonly elapsedSeconds: number;
  readonly achievedRate: number;
  /** Largest shortfall against the schedule seen at a tick, in messages. */
  readonly maxBehind: number;
}

const TICK_MS = 20;
/** Sends in flight at once: one is not enough for 50k msg/s with acks=all on a shared machine. */
const MAX_IN_FLIGHT = 4;
/** Messages per send: after a stall the producer catches up in several sends, each well under the broker's 1 MiB limit. */
const MAX_SEND = 1000;
const METRICS = 1000;
const HOSTS = 4;

async function main(): Promise<void> {
  const [brokers, topic, rateText, secondsText] = process.argv.slice(2);
  const rate = Number(rateText);
  const seconds = Number(secondsText);
  if (!brokers || !topic || !(rate > 0) || !(seconds > 0)) {
    process.stderr.write('usage: kafka-rate-produce.js BROKERS TOPIC RATE SECONDS\n');
    process.exit(2);
  }
  // The engine's fix of kafkajs's idle request-queue timer (src/kafka/request-queue.ts): this load
  // shares the cores with what is measured.
  patchRequestQueue();
  const kafka = new kafkajs.Kafka({ clientId: 'streamstats-bench-load', brokers: brokers.split(','), logLevel: kafkajs.logLevel.ERROR });
  const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: kafkajs.Partitioners.DefaultPartitioner });
  await producer.connect();
  const total = Math.round(rate * seconds);
  const points = generatePoints({
    count: total,
    metrics: METRICS,
    hosts: HOSTS,
    intervalMs: Math.max(1, Math.round(((METRICS * HOSTS) / rate) * 1000)),
    startMs: Date.now(),
    seed: 3,
  });
  let sent = 0;
  let queued = 0;
  let maxBehind = 0;
  let inFlight = 0;
  let failure: Error | null = null;
  const started = performance.now();
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      if (failure !== null) return resolve();
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      maxBehind = Math.max(maxBehind, due - sent);
      if (queued >= total) {
        if (inFlight === 0) return resolve();
      } else if (inFlight < MAX_IN_FLIGHT && due > queued) {
        const messages: Array<{ key: string; value: string }> = [];
        while (queued < due && messages.length < MAX_SEND) {
          const p = points.next();
          if (p.done === true) break;
          messages.push({ key: `${p.value.name}|agent_${p.value.host}`, value: p.value.json });
          queued++;
        }
        inFlight++;
        producer.send({ topic, acks: -1, messages }).then(
          () => {
            inFlight--;
            sent += messages.length;
          },
          (err: unknown) => {
            failure = err as Error;
          },
        );
      }
      setTimeout(tick, TICK_MS);
    };
    tick();
  });
  if (failure !== null) throw failure;
  const elapsedSeconds = (performance.now() - started) / 1000;
  await producer.disconnect();
  const out: RateProduceResult = { rate, seconds, sent, elapsedSeconds, achievedRate: sent / elapsedSeconds, maxBehind };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`kafka-rate-produce: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
