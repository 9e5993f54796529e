// The single-threaded whole-job baseline: what a plain Node program doing streamstats'
// default job on one thread costs. It generates the same seed-000 Monasca messages as the default
// generator source, and for each: JSON.parse, takes name, dimensions and the envelope's meta (tenant,
// region), keys the series by JSON.stringify of its sorted dimensions, folds the value into a per
// (series, window) accumulator, closes windows behind the largest event time minus the allowed
// lateness, and writes each closed window as one NDJSON row with the engine's fields to a file.
// No validation, dead letters, metrics or commits: a floor for the engine's own work, not a rival.
// Usage: node dist/bench/scenarios/baseline-job.js OUT_FILE [COUNT]  -> one JSON line on stdout.
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { generatePoints } from '../../src/sources/generator.js';
import { BaselineWindows } from '../lib/baseline-windows.js';

export async function runBaseline(outFile: string, count: number): Promise<{ records: number; rows: number; elapsedSeconds: number; recordsPerSecond: number }> {
  const out = createWriteStream(outFile);
  const windows = new BaselineWindows();
  let rows = 0;
  const t0 = performance.now();
  const emit = async (all: boolean): Promise<void> => {
    const r = windows.take(all);
    rows += r.rows;
    if (r.text.length > 0 && !out.write(r.text)) await once(out, 'drain');
  };
  let n = 0;
  for (const p of generatePoints({ count, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 1 })) {
    windows.fold(p.json);
    // Close once per 4000 records, about as often as the engine closes (once per batch).
    if (++n % 4000 === 0) await emit(false);
  }
  await emit(true);
  out.end();
  await once(out, 'finish');
  const elapsedSeconds = (performance.now() - t0) / 1000;
  return { records: n, rows, elapsedSeconds, recordsPerSecond: n / elapsedSeconds };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await runBaseline(process.argv[2] ?? '/dev/null', Number(process.argv[3] ?? 690_000));
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
