// The main thread's CPU per record, Kafka in -> PostgreSQL out, LANE_STATE=main against
// LANE_STATE=worker: one topic loaded once (the seed-000 workload and its flush points, as kafka-e2e
// loads it), then ROUNDS rounds of both modes alternated, each run with a fresh group and schema and
// ended on SIGTERM once every row is stored. The main thread's CPU per record is read from /proc over
// the span from the first message seen to the last row stored (/metrics polled every POLL_MS, so
// the span's ends are that coarse); bench/lib/thread-cpu-preload.ts's MAIN, spawn to exit, beside it.
// Usage: [PG_LANE_CPU_PROFILE_DIR=DIR] node dist/bench/child/pg-lane-cpu.js [COUNT] [ROUNDS] [WORKER_THREADS] [postgres|devnull]
// Prints one JSON line per run and a summary line on stdout.
import { createPgSchema, dropPgSchema } from '../lib/outputs.js';
import { scratchDir } from '../lib/child.js';
import { createTopic, deleteTopic, loadWorkload, requireBroker, runEngine } from '../scenarios/kafka-e2e.js';
import { uid } from '../../test/fixtures/topics.js';

const count = Number(process.argv[2] ?? '1000000');
const rounds = Number(process.argv[3] ?? '3');
const threads = process.argv[4] ?? '2';
/** `devnull`: SINK=file:/dev/null instead (what the main thread costs without the PostgreSQL sink). */
const sinkKind = process.argv[5] ?? 'postgres';
const PARTITIONS = 4;
/** PG_LANE_CPU_PROFILE_DIR: V8 CPU profiles of each run's threads go under DIR/<mode>. */
const profileDir = process.env['PG_LANE_CPU_PROFILE_DIR'];

await requireBroker();
const topic = uid('ss-bench-pg-lanes');
await createTopic(topic, PARTITIONS);
const scratch = scratchDir('pg-lane-cpu');
const dir = scratch.dir;
const perRecord: Record<string, number[]> = { main: [], worker: [] };
try {
  const w = await loadWorkload(topic, count, PARTITIONS);
  for (let round = 1; round <= rounds; round++) {
    for (const mode of round % 2 === 1 ? ['main', 'worker'] : ['worker', 'main']) {
      const { schema, url } = await createPgSchema('ss_bench_lanes');
      try {
        const vars: Record<string, string> = { SINK: sinkKind === 'devnull' ? 'file:/dev/null' : url, LANE_STATE: mode, WORKER_THREADS: threads, LATE_RECORDS: 'dead-letter' };
        if (profileDir !== undefined) vars['NODE_OPTIONS'] = `--cpu-prof --cpu-prof-dir=${profileDir}/${mode}`;
        const r = await runEngine(topic, count, dir, vars, { rows: w.rows, flushPoints: w.flushPoints });
        // Over the span from the first message seen to the last row stored (start-up and shutdown left out).
        const us = (r.mainCpuFirstToRowsSeconds * 1e6) / count;
        perRecord[mode]!.push(us);
        process.stdout.write(`${JSON.stringify({ round, mode, records: count, rows: r.rows, mainUsPerRecord: us, mainCpuFirstToRowsSeconds: r.mainCpuFirstToRowsSeconds, mainCpuSpawnToExitSeconds: r.mainCpuSeconds, allThreadsCpuSeconds: r.cpuSeconds, firstToRowsSeconds: r.firstToRows })}\n`);
      } finally {
        await dropPgSchema(schema);
      }
    }
  }
} finally {
  await deleteTopic(topic);
  scratch.remove();
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
process.stdout.write(`${JSON.stringify({ summary: 'main-thread us/record', main: perRecord['main'], worker: perRecord['worker'], medianMain: median(perRecord['main']!), medianWorker: median(perRecord['worker']!) })}\n`);
