// Deterministic Ceilometer sample files (NDJSON) for scenarios 4 and 7, generated once into the
// git-ignored bench/.cache/ and reused while the file exists with the expected size.
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { prng } from '../../src/sources/generator.js';
import { CACHE_DIR } from './scenario.js';

export interface CeilometerSpec {
  readonly samples: number;
  readonly meters: number;
  readonly resources: number;
  /** Seconds between two samples of one (meter, resource). */
  readonly intervalSeconds: number;
  readonly seed: number;
}

export interface CeilometerFile {
  readonly path: string;
  readonly bytes: number;
  readonly spec: CeilometerSpec;
}

const METERS: ReadonlyArray<readonly [name: string, unit: string, type: string]> = [
  ['cpu_util', '%', 'gauge'],
  ['memory.usage', 'MB', 'gauge'],
  ['disk.read.bytes', 'B', 'cumulative'],
  ['disk.write.bytes', 'B', 'cumulative'],
  ['network.incoming.bytes', 'B', 'cumulative'],
  ['network.outgoing.bytes', 'B', 'cumulative'],
  ['cpu', 'ns', 'cumulative'],
  ['vcpus', 'vcpu', 'gauge'],
  ['disk.root.size', 'GB', 'gauge'],
  ['instance', 'instance', 'gauge'],
];

const START_MS = Date.UTC(2024, 0, 1);

function uuid(rand: () => number): string {
  let s = '';
  for (let i = 0; i < 32; i++) s += Math.floor(rand() * 16).toString(16);
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/**
 * Sample i: round r = i / (meters x resources); every (meter, resource) pair has one sample per round,
 * intervalSeconds apart, timestamps in Ceilometer's own form (ISO 8601, microseconds, no offset = UTC).
 * Series = meters x resources (meters beyond the 10 named ones get numbered names).
 */
export async function ensureCeilometerFile(spec: CeilometerSpec): Promise<CeilometerFile> {
  mkdirSync(CACHE_DIR, { recursive: true });
  const base = `ceilometer-${spec.samples}-m${spec.meters}-r${spec.resources}-i${spec.intervalSeconds}-s${spec.seed}-v1`;
  const path = join(CACHE_DIR, `${base}.ndjson`);
  const marker = join(CACHE_DIR, `${base}.size`);
  if (existsSync(path) && existsSync(marker) && Number(readFileSync(marker, 'utf8')) === statSync(path).size) {
    return { path, bytes: statSync(path).size, spec };
  }
  const rand = prng(spec.seed);
  const projects = Array.from({ length: 20 }, () => uuid(rand).replace(/-/g, ''));
  const users = Array.from({ length: 50 }, () => uuid(rand).replace(/-/g, ''));
  const meters = Array.from({ length: spec.meters }, (_, i) => METERS[i] ?? [`custom.meter_${i}`, 'unit', 'gauge']);
  // Per resource: the constant tail of every line.
  const tails = Array.from({ length: spec.resources }, (_, r) =>
    `,"resource_id":"${uuid(rand)}","project_id":"${projects[r % projects.length]}","user_id":"${users[r % users.length]}","source":"openstack",` +
    `"resource_metadata":{"host":"compute-${r % 40}","flavor":"m1.small","display_name":"vm-${r}"}}\n`);
  const heads = meters.map(([name, unit, type]) => `{"counter_name":"${name}","counter_type":"${type}","counter_unit":"${unit}","counter_volume":`);
  const tmp = `${path}.tmp`;
  const out = createWriteStream(tmp, { highWaterMark: 4 << 20 });
  const perRound = spec.meters * spec.resources;
  let chunk = '';
  for (let i = 0; i < spec.samples; i++) {
    const round = Math.floor(i / perRound);
    const within = i % perRound;
    const m = within % spec.meters;
    const r = Math.floor(within / spec.meters);
    const ts = START_MS + round * spec.intervalSeconds * 1000 + Math.floor(rand() * 1000);
    const iso = new Date(ts).toISOString();
    const volume = Math.round(rand() * 1e6) / 100;
    chunk += `${heads[m]}${volume},"timestamp":"${iso.slice(0, 23)}000"${tails[r]}`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.write(chunk);
  out.end();
  await once(out, 'close');
  renameSync(tmp, path);
  const bytes = statSync(path).size;
  writeFileSync(marker, String(bytes));
  return { path, bytes, spec };
}
