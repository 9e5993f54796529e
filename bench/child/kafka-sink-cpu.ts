// The Kafka statistics sink's own CPU, in process: rows already formatted (NDJSON and identity keys,
// as a worker's row task hands them over) written through KafkaSink to a fresh 4-partition topic,
// and the CPU of the process (every thread: main, V8's GC and compiler helpers, libuv) and of the
// main thread counted from the first write to the last acknowledgement. Nothing else runs in the
// process, so this is what a row costs the sink and kafkajs, without the engine's noise.
// Usage: node dist/bench/child/kafka-sink-cpu.js BROKERS ROWS.ndjson alo|eos [ROWS_PER_WRITE] [IN_FLIGHT]
// ROWS.ndjson: statistics rows as the file sink writes them (e.g. SOURCE=generator SINK=file:PATH).
// Prints one JSON line on stdout. With KAFKA_SINK_CPU_PROFILE=PATH, a V8 CPU profile of the main
// thread over the measured span only goes to PATH (.cpuprofile).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver } from 'node:perf_hooks';
import '../../src/kafka/preload.js';
import { pino } from 'pino';
import { KafkaSink } from '../../src/sinks/kafka/index.js';
import { rowIdentityKey } from '../../src/sinks/kafka/messages.js';
import type { SinkCommit } from '../../src/sinks/types.js';
import type { RowBatch, StatsRow } from '../../src/windows/row.js';
import { createTopicOn, deleteTopicsOn, kafkaClient, uid } from '../../test/fixtures/topics.js';

const LANES = 4;

function batchOf(lines: readonly string[], input: string, lane: number): RowBatch {
  const values = Buffer.from(lines.map((l) => `${l}\n`).join(''));
  const lineEnds = new Int32Array(lines.length);
  for (let i = 0, o = -1; i < lines.length; i++) lineEnds[i] = o = values.indexOf(0x0a, o + 1);
  const keys = lines.map((l) => rowIdentityKey(JSON.parse(l) as StatsRow));
  const keyBytes = Buffer.from(keys.join(''));
  const ends = new Int32Array(keys.length);
  for (let i = 0, e = 0; i < keys.length; i++) ends[i] = e += Buffer.byteLength(keys[i]!);
  return {
    get rows(): never {
      throw new Error('kafka-sink-cpu: the sink read row objects');
    },
    ndjson: () => values.toString(),
    ndjsonBytes: () => values,
    lineEnds: () => lineEnds,
    identityKey: (i) => keyBytes.toString('utf8', i === 0 ? 0 : ends[i - 1]!, ends[i]!),
    identityKeyBytes: () => ({ bytes: keyBytes, ends }),
    where: { topic: input, partition: lane },
  };
}

/** CPU seconds (user + system) per thread name, from /proc (Linux; empty elsewhere). */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>();
  if (!existsSync('/proc/self/task')) return out;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const st = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      const name = tid === String(process.pid) ? 'main' : st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      out.set(name, (out.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / 100);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

async function main(): Promise<void> {
  const [brokers, file, mode, perWriteText, inFlightText] = process.argv.slice(2);
  if (!brokers || !file || (mode !== 'alo' && mode !== 'eos')) {
    process.stderr.write('usage: kafka-sink-cpu.js BROKERS ROWS.ndjson alo|eos [ROWS_PER_WRITE] [IN_FLIGHT]\n');
    process.exit(2);
  }
  const perWrite = Number(perWriteText ?? 2000);
  const inFlight = Number(inFlightText ?? 8);
  // Only buffers stay: a heap of row strings would charge the sink's collections for marking them.
  let lines: string[] | null = readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
  const topic = uid('ss-sink-cpu');
  const batches: RowBatch[] = [];
  const brokerList = brokers.split(',');
  // Exactly once, the commit points go to the group's offsets of a real (empty) input topic.
  const input = uid('ss-sink-cpu-in');
  for (let from = 0, k = 0; from < lines.length; from += perWrite, k++) batches.push(batchOf(lines.slice(from, from + perWrite), input, k % LANES));
  lines = null;
  await createTopicOn(brokerList, topic, LANES);
  if (mode === 'eos') await createTopicOn(brokerList, input, LANES);
  const sink = new KafkaSink({ kafka: kafkaClient(brokerList, 'kafka-sink-cpu'), topic, exactlyOnce: mode === 'eos', groupId: uid('ss-sink-cpu-g'), logger: pino({ level: 'warn' }) });
  const offsets = new Array<number>(LANES).fill(0);
  const commitOf = (b: RowBatch): SinkCommit | undefined => {
    if (mode !== 'eos') return undefined;
    const p = b.where!.partition;
    offsets[p]! += 1000;
    return { topic: input, partition: p, point: { position: offsets[p]!, watermarkMs: 1_581_425_000_000, appliedEnd: offsets[p]! } };
  };
  try {
    // Warm-up: every lane's producer connected (and its transactional id claimed), the code compiled.
    const warm = batches.splice(0, Math.min(batches.length, 2 * LANES));
    await Promise.all(warm.map((b) => sink.write(b, commitOf(b))));
    let rows = 0;
    for (const b of batches) rows += b.lineEnds!().length;
    let gcMs = 0;
    let gcs = 0;
    const gc = new PerformanceObserver((l) => {
      for (const e of l.getEntries()) {
        gcMs += e.duration;
        gcs++;
      }
    });
    gc.observe({ entryTypes: ['gc'] });
    const profilePath = process.env['KAFKA_SINK_CPU_PROFILE'];
    const session = profilePath === undefined ? null : new Session();
    if (session !== null) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    const t0 = performance.now();
    const threads0 = threadCpu();
    const cpu0 = process.cpuUsage();
    const main0 = process.threadCpuUsage();
    const pending = new Set<Promise<unknown>>();
    for (const b of batches) {
      while (pending.size >= inFlight) await Promise.race(pending);
      const w: Promise<unknown> = sink.write(b, commitOf(b)).then((r) => {
        pending.delete(w);
        if (r.rejected.length > 0) throw new Error(`kafka-sink-cpu: ${r.rejected.length} rows rejected`);
      });
      pending.add(w);
    }
    await Promise.all(pending);
    const cpu = process.cpuUsage(cpu0);
    const mainCpu = process.threadCpuUsage(main0);
    const wall = (performance.now() - t0) / 1000;
    const threadsUsPerRow: Record<string, number> = {};
    for (const [name, sec] of threadCpu()) threadsUsPerRow[name] = Math.round(((sec - (threads0.get(name) ?? 0)) * 1e7) / rows) / 10;
    gc.disconnect();
    if (session !== null) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(profilePath!, JSON.stringify(profile));
      session.disconnect();
    }
    const us = (c: { user: number; system: number }): number => (c.user + c.system) / rows;
    process.stdout.write(
      `${JSON.stringify({ mode, rows, perWrite, inFlight, wallSeconds: wall, rowsPerSecond: rows / wall, cpuUsPerRow: us(cpu), systemUsPerRow: cpu.system / rows, mainUsPerRow: us(mainCpu), gcMsMain: gcMs, gcs, threadsUsPerRow })}\n`,
    );
  } finally {
    await sink.close();
    await deleteTopicsOn(brokerList, mode === 'eos' ? [topic, input] : [topic]).catch(() => {});
  }
}

await main();
