// What a scenario gets and what it returns; results are written to bench/results/<id>.json.
import { readFileSync, renameSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MachineInfo } from './machine.js';
import type { Log, Protocol, VariantResult } from './measure.js';

export type Mode = 'quick' | 'full';

/** Source tree paths (this file is dist/bench/lib/scenario.js). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const RESULTS_DIR = join(ROOT, 'bench', 'results');
export const CACHE_DIR = join(ROOT, 'bench', '.cache');
export const DOCS_DIR = join(ROOT, 'docs');

export interface Context {
  readonly mode: Mode;
  readonly protocol: Protocol;
  readonly log: Log;
}

export interface Group {
  readonly id: string;
  readonly title: string;
  readonly variants: readonly VariantResult[];
  /** Variant id the ratios are against, if any. */
  readonly baseline: string | null;
}

export interface ScenarioOutput {
  /** Variables common to every variant. */
  readonly config: Readonly<Record<string, string | number>>;
  readonly groups: readonly Group[];
  /** The scenario's section of docs/benchmarks.md (starts with a level-2 heading). */
  readonly markdown: string;
  /** Charts written next to the results: file name -> SVG text. */
  readonly charts?: Readonly<Record<string, string>>;
  /** Headline numbers, for the runner's final lines and docs/tuning.md. */
  readonly headline: readonly string[];
}

export interface Scenario {
  readonly id: string;
  readonly order: number;
  readonly title: string;
  run(ctx: Context): Promise<ScenarioOutput>;
}

export interface ScenarioResult extends ScenarioOutput {
  readonly scenario: string;
  readonly order: number;
  readonly title: string;
  readonly mode: Mode;
  readonly command: string;
  /** Git commit of the engine measured, and whether src/ or workers/ had uncommitted changes. */
  readonly engine: string;
  readonly timestamp: string;
  readonly durationSeconds: number;
  readonly machine: MachineInfo;
  readonly protocol: Protocol & { readonly alternated: true; readonly childProcessPerRun: true };
}

/** Where a run that is not recorded puts its results: git-ignored, so trying the bench changes no tracked file. */
export const LOCAL_RESULTS_DIR = join(ROOT, '.cache', 'bench-results');

export function writeResult(r: ScenarioResult, dir = RESULTS_DIR): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${r.scenario}.json`);
  writeFileSync(`${file}.tmp`, `${JSON.stringify(r, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
  for (const [name, svg] of Object.entries(r.charts ?? {})) writeFileSync(join(dir, name), svg);
  return file;
}

export function readResult(id: string): ScenarioResult | null {
  const file = join(RESULTS_DIR, `${id}.json`);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, 'utf8')) as ScenarioResult;
}

export function variant(g: Group, id: string): VariantResult {
  const v = g.variants.find((x) => x.id === id);
  if (v === undefined) throw new Error(`no variant ${id} in group ${g.id}`);
  return v;
}
