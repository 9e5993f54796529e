// The single-threaded whole-job baseline over Kafka: what a plain kafkajs application doing
// streamstats' default job on one thread costs. bench/scenarios/baseline-job.ts is the generator
// version; this one reads the topic instead and keeps the same work per message: JSON.parse, name,
// dimensions and the envelope's meta (tenant, region), the series keyed by JSON.stringify of its
// sorted dimensions, a per (series, 60 s window) accumulator, windows closed behind the partition's
// largest event time minus the allowed lateness (per partition, as the engine's watermark), each closed
// window written as one NDJSON row with the engine's fields to OUT_FILE. No validation, dead letters,
// metrics or commits: a floor for the engine's own work, not a rival.
// Usage: node dist/bench/child/kafka-baseline-job.js BROKERS TOPIC GROUP COUNT OUT_FILE
// Prints {"event":"first"} at the first message and {"event":"done",...} once COUNT messages are
// folded in (the windows still open are written after that line, then the process exits), on stdout.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { BaselineWindows } from '../lib/baseline-windows.js';
import { consumeTopic } from '../lib/kafka-consume-loop.js';

function main(): void {
  const [brokers, topic, groupId, countText, outFile] = process.argv.slice(2);
  const count = Number(countText);
  if (!brokers || !topic || !groupId || !(count > 0) || !outFile) {
    process.stderr.write('usage: kafka-baseline-job.js BROKERS TOPIC GROUP COUNT OUT_FILE\n');
    process.exit(2);
  }
  const out = createWriteStream(outFile);
  const parts = new Map<number, BaselineWindows>();
  let rows = 0;

  const write = async (text: string): Promise<void> => {
    if (text.length > 0 && !out.write(text)) await once(out, 'drain');
  };

  consumeTopic({
    name: 'kafka-baseline-job',
    brokers,
    topic,
    groupId,
    count,
    onBatch: async (messages, partition) => {
      let st = parts.get(partition);
      if (st === undefined) parts.set(partition, (st = new BaselineWindows()));
      for (const m of messages) if (m.value !== null) st.fold(m.value.toString('utf8'));
      // Close once per fetched batch, as the engine closes once per applied batch.
      const r = st.take();
      rows += r.rows;
      await write(r.text);
    },
    onDone: async (seen, batches) => {
      process.stdout.write(`${JSON.stringify({ event: 'done', messages: seen, rows, batches, aggregates: 0 })}\n`);
      for (const st of parts.values()) {
        const r = st.take(true);
        rows += r.rows;
        await write(r.text);
      }
      out.end();
      await once(out, 'finish');
      process.stderr.write(`${JSON.stringify({ bench: 'rows', rows })}\n`);
    },
  });
}

main();
