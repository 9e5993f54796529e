// The measurement protocol: each variant is run once as a discarded warm-up, then the variants are run
// alternately (A B C A B C ...) for the measured rounds, so a neighbour process that slows the machine
// down for a while hits every variant alike. Comparisons are ratios of medians from the same run.
import { summarize, fmt, type Summary } from './stats.js';

export interface Sample {
  readonly recordsPerSecond: number;
  readonly elapsedSeconds: number;
  /** getrusage peak RSS of the child process. */
  readonly peakRssBytes: number;
  /** Scenario-specific numbers (e.g. heap bytes per series). */
  readonly extra?: Readonly<Record<string, number>>;
}

export interface Variant {
  readonly id: string;
  readonly label: string;
  /** The variables or parameters that define the variant, recorded in the results. */
  readonly config: Readonly<Record<string, string | number>>;
  readonly run: () => Promise<Sample>;
}

export interface VariantResult {
  readonly id: string;
  readonly label: string;
  readonly config: Readonly<Record<string, string | number>>;
  readonly samples: readonly Sample[];
  readonly recordsPerSecond: Summary;
  readonly elapsedSeconds: Summary;
  readonly peakRssBytes: Summary;
  readonly extra: Readonly<Record<string, Summary>>;
}

export interface Protocol {
  readonly warmup: number;
  readonly runs: number;
}

export type Log = (line: string) => void;

export async function alternate(name: string, variants: readonly Variant[], protocol: Protocol, log: Log): Promise<VariantResult[]> {
  for (let w = 0; w < protocol.warmup; w++) {
    for (const v of variants) {
      const s = await v.run();
      log(`  ${name} warm-up ${v.label}: ${fmt.int(s.recordsPerSecond)} records/s (discarded)`);
    }
  }
  const samples = variants.map((): Sample[] => []);
  for (let r = 0; r < protocol.runs; r++) {
    for (let i = 0; i < variants.length; i++) {
      const v = variants[i]!;
      const s = await v.run();
      samples[i]!.push(s);
      log(`  ${name} run ${r + 1}/${protocol.runs} ${v.label}: ${fmt.int(s.recordsPerSecond)} records/s, ${fmt.secs(s.elapsedSeconds)} s, peak RSS ${fmt.mib(s.peakRssBytes)} MiB`);
    }
  }
  return variants.map((v, i) => {
    const ss = samples[i]!;
    const extraKeys = [...new Set(ss.flatMap((s) => Object.keys(s.extra ?? {})))];
    const extra: Record<string, Summary> = {};
    for (const k of extraKeys) extra[k] = summarize(ss.map((s) => s.extra?.[k] ?? NaN));
    return {
      id: v.id,
      label: v.label,
      config: v.config,
      samples: ss,
      recordsPerSecond: summarize(ss.map((s) => s.recordsPerSecond)),
      elapsedSeconds: summarize(ss.map((s) => s.elapsedSeconds)),
      peakRssBytes: summarize(ss.map((s) => s.peakRssBytes)),
      extra,
    };
  });
}

/** Ratio of medians of records/s: > 1 means `v` is faster than `base`. */
export function ratio(v: VariantResult, base: VariantResult): number {
  return v.recordsPerSecond.median / base.recordsPerSecond.median;
}

/** The standard table: one row per variant, with the ratio against a baseline. */
export function variantTable(results: readonly VariantResult[], base: VariantResult | null, firstColumn = 'variant'): string {
  const head = `| ${firstColumn} | median records/s | min | mean | max | stddev | median s | peak RSS MiB (max) |${base === null ? '' : ' ratio vs baseline |'}`;
  const sep = `|---|---:|---:|---:|---:|---:|---:|---:|${base === null ? '' : '---:|'}`;
  const rows = results.map((r) => {
    const s = r.recordsPerSecond;
    const cells = [r.label, fmt.int(s.median), fmt.int(s.min), fmt.int(s.mean), fmt.int(s.max), fmt.int(s.stddev), fmt.secs(r.elapsedSeconds.median), fmt.mib(r.peakRssBytes.max)];
    if (base !== null) cells.push(r === base ? '1.00x (baseline)' : fmt.ratio(ratio(r, base)));
    return `| ${cells.join(' | ')} |`;
  });
  return [head, sep, ...rows].join('\n');
}
