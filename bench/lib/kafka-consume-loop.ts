// The kafkajs loop of the benches' plain consumers (bench/child/kafka-consume.ts, the bare and naive
// baselines; bench/child/kafka-baseline-job.ts, the whole-job baseline): a fresh group reads the topic
// from the beginning with the engine's fetch settings, one batch at a time, until COUNT messages were
// seen. It prints {"event":"first"} at the first message (the parent times from there, on its own
// clock, as it times the engine); the caller prints its own "done" line in onDone.
import kafkajs, { type KafkaMessage } from 'kafkajs';
import { registerCodecs } from '../../src/kafka/codecs.js';
import { patchRequestQueue } from '../../src/kafka/request-queue.js';

export interface ConsumeLoop {
  /** For error lines: the child's name. */
  readonly name: string;
  readonly brokers: string;
  readonly topic: string;
  readonly groupId: string;
  readonly count: number;
  /** One fetched batch's messages (never empty), before its offset is resolved. */
  onBatch(messages: readonly KafkaMessage[], partition: number): Promise<void> | void;
  /** Once COUNT messages were seen: the caller's result line and anything it writes after it. */
  onDone(seen: number, batches: number): Promise<void> | void;
}

export function consumeTopic(o: ConsumeLoop): void {
  registerCodecs();
  // The fix of kafkajs's idle request-queue timer that the engine's clients get (src/kafka/request-queue.ts):
  // unpatched, every connection woke the loop each millisecond (and Node warned TimeoutNegativeWarning).
  patchRequestQueue();
  const kafka = new kafkajs.Kafka({ clientId: 'streamstats-bench', brokers: o.brokers.split(','), logLevel: kafkajs.logLevel.ERROR });
  // The engine's consumer settings (KAFKA_MAX_WAIT_MS=500, KAFKA_MAX_BYTES_PER_PARTITION=1 MiB, one
  // partition at a time), so that the baselines fetch exactly as the engine does.
  const consumer = kafka.consumer({ groupId: o.groupId, maxWaitTimeInMs: 500, maxBytesPerPartition: 1 << 20, sessionTimeout: 30_000, heartbeatInterval: 3000 });
  let seen = 0;
  let batches = 0;
  let finished = false;

  const finish = async (): Promise<void> => {
    finished = true;
    await o.onDone(seen, batches);
    // Leaving the group is not part of the measurement; bounded so that a slow leave cannot hang the run.
    const t = setTimeout(() => process.exit(0), 5000);
    void consumer.disconnect().finally(() => {
      clearTimeout(t);
      process.exit(0);
    });
  };

  void (async () => {
    await consumer.connect();
    await consumer.subscribe({ topics: [o.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset }) => {
        if (finished || batch.messages.length === 0) return;
        if (seen === 0) process.stdout.write('{"event":"first"}\n');
        batches++;
        await o.onBatch(batch.messages, batch.partition);
        seen += batch.messages.length;
        resolveOffset(batch.lastOffset());
        if (seen >= o.count) await finish();
      },
    });
  })().catch((err: unknown) => {
    process.stderr.write(`${o.name}: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
