// Issue 14's single-threaded whole-job baseline over Kafka: what a plain kafkajs application doing
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
import kafkajs from 'kafkajs';
import { registerCodecs } from '../../src/kafka/codecs.js';

interface Acc {
  name: string;
  groupby: Record<string, string>;
  count: number;
  mean: number;
  m2: number;
  min: number;
  max: number;
  sum: number;
  tsMin: number;
  tsMax: number;
}

interface MonascaMessage {
  metric: { name: string; dimensions?: Record<string, string>; timestamp: number; value: number };
  meta?: { tenantId?: string; region?: string };
}

/** One partition's windows and watermark, as the engine keeps them. */
interface PartitionState {
  readonly windows: Map<number, Map<string, Acc>>;
  maxTs: number;
}

const WINDOW_MS = 60_000;
const LATENESS_MS = 5_000;

function rowsOf(windows: Map<number, Map<string, Acc>>, pred: (ws: number) => boolean): { text: string; rows: number } {
  const starts = [...windows.keys()].filter(pred).sort((a, b) => a - b);
  let text = '';
  let rows = 0;
  for (const ws of starts) {
    const periodStart = new Date(ws).toISOString();
    const periodEnd = new Date(ws + WINDOW_MS).toISOString();
    for (const a of windows.get(ws)!.values()) {
      const row = {
        name: a.name,
        unit: null,
        groupby: a.groupby,
        count: a.count,
        sum: a.sum,
        min: a.min,
        max: a.max,
        avg: a.mean,
        stddev: a.m2 > 0 ? Math.sqrt(a.m2 / a.count) : 0,
        duration_start: new Date(a.tsMin).toISOString(),
        duration_end: new Date(a.tsMax).toISOString(),
        duration: (a.tsMax - a.tsMin) / 1000,
        period: WINDOW_MS / 1000,
        period_start: periodStart,
        period_end: periodEnd,
      };
      text += `${JSON.stringify(row)}\n`;
      rows++;
    }
    windows.delete(ws);
  }
  return { text, rows };
}

function fold(st: PartitionState, json: string): void {
  const m = JSON.parse(json) as MonascaMessage;
  const dims: Record<string, string> = { ...m.metric.dimensions };
  if (m.meta?.tenantId !== undefined) dims['_tenant_id'] = m.meta.tenantId;
  if (m.meta?.region !== undefined) dims['_region'] = m.meta.region;
  const names = Object.keys(dims).sort();
  const groupby: Record<string, string> = {};
  for (const k of names) groupby[k] = dims[k]!;
  const key = JSON.stringify([m.metric.name, groupby]);
  const ts = m.metric.timestamp;
  const ws = Math.floor(ts / WINDOW_MS) * WINDOW_MS;
  let win = st.windows.get(ws);
  if (win === undefined) st.windows.set(ws, (win = new Map()));
  let a = win.get(key);
  if (a === undefined) {
    a = { name: m.metric.name, groupby, count: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity, sum: 0, tsMin: Infinity, tsMax: -Infinity };
    win.set(key, a);
  }
  const x = m.metric.value;
  a.count++;
  const d = x - a.mean;
  a.mean += d / a.count;
  a.m2 += d * (x - a.mean);
  a.sum += x;
  if (x < a.min) a.min = x;
  if (x > a.max) a.max = x;
  if (ts < a.tsMin) a.tsMin = ts;
  if (ts > a.tsMax) a.tsMax = ts;
  if (ts > st.maxTs) st.maxTs = ts;
}

function main(): void {
  const [brokers, topic, groupId, countText, outFile] = process.argv.slice(2);
  const count = Number(countText);
  if (!brokers || !topic || !groupId || !(count > 0) || !outFile) {
    process.stderr.write('usage: kafka-baseline-job.js BROKERS TOPIC GROUP COUNT OUT_FILE\n');
    process.exit(2);
  }
  registerCodecs();
  const kafka = new kafkajs.Kafka({ clientId: 'streamstats-bench', brokers: brokers.split(','), logLevel: kafkajs.logLevel.ERROR });
  // The same consumer settings as bench/child/kafka-consume.ts (the bare baseline).
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500, maxBytesPerPartition: 1 << 20, sessionTimeout: 30_000, heartbeatInterval: 3000 });
  const out = createWriteStream(outFile);
  const parts = new Map<number, PartitionState>();
  let seen = 0;
  let rows = 0;
  let batches = 0;
  let finished = false;

  const write = async (text: string): Promise<void> => {
    if (text.length > 0 && !out.write(text)) await once(out, 'drain');
  };

  const finish = async (): Promise<void> => {
    finished = true;
    process.stdout.write(`${JSON.stringify({ event: 'done', messages: seen, rows, batches, aggregates: 0 })}\n`);
    for (const st of parts.values()) {
      const r = rowsOf(st.windows, () => true);
      rows += r.rows;
      await write(r.text);
    }
    out.end();
    await once(out, 'finish');
    process.stderr.write(`${JSON.stringify({ bench: 'rows', rows })}\n`);
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
        let st = parts.get(batch.partition);
        if (st === undefined) parts.set(batch.partition, (st = { windows: new Map(), maxTs: -Infinity }));
        for (const m of batch.messages) if (m.value !== null) fold(st, m.value.toString('utf8'));
        // Close once per fetched batch, as the engine closes once per applied batch.
        const r = rowsOf(st.windows, (w) => w + WINDOW_MS <= st.maxTs - LATENESS_MS);
        rows += r.rows;
        await write(r.text);
        seen += batch.messages.length;
        resolveOffset(batch.lastOffset());
        if (seen >= count) await finish();
      },
    });
  })().catch((err: unknown) => {
    process.stderr.write(`kafka-baseline-job: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}

main();
