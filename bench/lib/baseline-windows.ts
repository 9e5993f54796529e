// The windows of the single-threaded whole-job baselines (bench/scenarios/baseline-job.ts over
// the generator, bench/child/kafka-baseline-job.ts over Kafka): what a plain program doing
// streamstats' default job keeps. Per message: JSON.parse, name, dimensions and the envelope's meta
// (tenant, region), the series keyed by JSON.stringify of its sorted dimensions, a per (series, 60 s
// window) accumulator; windows closed behind the largest event time minus the allowed lateness, each
// written as one NDJSON row with the engine's fields. No validation, dead letters, metrics or commits:
// a floor for the engine's own work, not a rival.

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

export const BASELINE_WINDOW_MS = 60_000;
const LATENESS_MS = 5_000;

/** One lane's windows and watermark (the engine keeps one per partition). */
export class BaselineWindows {
  readonly #windows = new Map<number, Map<string, Acc>>();
  #maxTs = -Infinity;

  /** Folds one Monasca message (JSON text) into its (series, window) accumulator. */
  fold(json: string): void {
    const m = JSON.parse(json) as MonascaMessage;
    const dims: Record<string, string> = { ...m.metric.dimensions };
    if (m.meta?.tenantId !== undefined) dims['_tenant_id'] = m.meta.tenantId;
    if (m.meta?.region !== undefined) dims['_region'] = m.meta.region;
    const names = Object.keys(dims).sort();
    const groupby: Record<string, string> = {};
    for (const k of names) groupby[k] = dims[k]!;
    const key = JSON.stringify([m.metric.name, groupby]);
    const ts = m.metric.timestamp;
    const ws = Math.floor(ts / BASELINE_WINDOW_MS) * BASELINE_WINDOW_MS;
    let win = this.#windows.get(ws);
    if (win === undefined) this.#windows.set(ws, (win = new Map()));
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
    if (ts > this.#maxTs) this.#maxTs = ts;
  }

  /** The rows of the windows behind the watermark (all of them with `all`), removed, in window order. */
  take(all = false): { text: string; rows: number } {
    const due = this.#maxTs - LATENESS_MS;
    const starts = [...this.#windows.keys()].filter((ws) => all || ws + BASELINE_WINDOW_MS <= due).sort((a, b) => a - b);
    let text = '';
    let rows = 0;
    for (const ws of starts) {
      const periodStart = new Date(ws).toISOString();
      const periodEnd = new Date(ws + BASELINE_WINDOW_MS).toISOString();
      for (const a of this.#windows.get(ws)!.values()) {
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
          period: BASELINE_WINDOW_MS / 1000,
          period_start: periodStart,
          period_end: periodEnd,
        };
        text += `${JSON.stringify(row)}\n`;
        rows++;
      }
      this.#windows.delete(ws);
    }
    return { text, rows };
  }
}
