// The single-threaded whole-job baseline of issue 14: what a plain Node program doing streamstats'
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

const WINDOW_MS = 60_000;
const LATENESS_MS = 5_000;

export async function runBaseline(outFile: string, count: number): Promise<{ records: number; rows: number; elapsedSeconds: number; recordsPerSecond: number }> {
  const out = createWriteStream(outFile);
  const windows = new Map<number, Map<string, Acc>>();
  let maxTs = -Infinity;
  let rows = 0;
  const t0 = performance.now();
  const emit = async (pred: (ws: number) => boolean): Promise<void> => {
    const starts = [...windows.keys()].filter(pred).sort((a, b) => a - b);
    let text = '';
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
    if (text.length > 0 && !out.write(text)) await once(out, 'drain');
  };
  let n = 0;
  for (const p of generatePoints({ count, metrics: 1000, hosts: 4, intervalMs: 30_000, startMs: 1581424933000, seed: 1 })) {
    const m = JSON.parse(p.json) as MonascaMessage;
    const dims: Record<string, string> = { ...m.metric.dimensions };
    if (m.meta?.tenantId !== undefined) dims['_tenant_id'] = m.meta.tenantId;
    if (m.meta?.region !== undefined) dims['_region'] = m.meta.region;
    const names = Object.keys(dims).sort();
    const groupby: Record<string, string> = {};
    for (const k of names) groupby[k] = dims[k]!;
    const key = JSON.stringify([m.metric.name, groupby]);
    const ts = m.metric.timestamp;
    const ws = Math.floor(ts / WINDOW_MS) * WINDOW_MS;
    let win = windows.get(ws);
    if (win === undefined) windows.set(ws, (win = new Map()));
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
    if (ts > maxTs) maxTs = ts;
    // Close once per 4000 records, about as often as the engine closes (once per batch).
    if (++n % 4000 === 0) await emit((w) => w + WINDOW_MS <= maxTs - LATENESS_MS);
  }
  await emit(() => true);
  out.end();
  await once(out, 'finish');
  const elapsedSeconds = (performance.now() - t0) / 1000;
  return { records: n, rows, elapsedSeconds, recordsPerSecond: n / elapsedSeconds };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await runBaseline(process.argv[2] ?? '/dev/null', Number(process.argv[3] ?? 690_000));
  process.stdout.write(`${JSON.stringify(r)}\n`);
}
