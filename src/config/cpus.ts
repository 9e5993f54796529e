// Usable CPUs: the host's count, capped by a container's CPU quota (cgroup v2 cpu.max, v1 cfs quota).
// os.availableParallelism() sees the affinity mask, not the quota, so a 2-CPU limit on a 64-core host
// would otherwise start 63 workers that fight over 2 CPUs.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export interface CpuInfo {
  readonly usable: number;
  readonly host: number;
  readonly quota: number | null;
  readonly source: string;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return null;
  }
}

/** Parses cgroup v2 "max 100000" / "150000 100000" into CPUs, or null when unlimited. */
export function parseCpuMax(text: string): number | null {
  const [quota, period] = text.split(/\s+/);
  if (quota === undefined || quota === 'max') return null;
  const q = Number(quota);
  const p = Number(period ?? '100000');
  return q > 0 && p > 0 ? q / p : null;
}

export function detectCpus(root = '/sys/fs/cgroup'): CpuInfo {
  const host = availableParallelism();
  let quota: number | null = null;
  let source = 'host CPUs (no cgroup quota)';
  const v2 = read(`${root}/cpu.max`);
  if (v2 !== null) {
    quota = parseCpuMax(v2);
    if (quota !== null) source = `cgroup v2 cpu.max "${v2}"`;
  } else {
    const q = read(`${root}/cpu/cpu.cfs_quota_us`) ?? read(`${root}/cpu,cpuacct/cpu.cfs_quota_us`);
    const p = read(`${root}/cpu/cpu.cfs_period_us`) ?? read(`${root}/cpu,cpuacct/cpu.cfs_period_us`);
    if (q !== null && p !== null && Number(q) > 0 && Number(p) > 0) {
      quota = Number(q) / Number(p);
      source = `cgroup v1 cfs quota ${q}/${p}`;
    }
  }
  const usable = quota === null ? host : Math.max(1, Math.min(host, Math.floor(quota)));
  return { usable, host, quota, source };
}

/** The default thread count: one CPU stays with the main thread (fetch, merge, sink). */
export function defaultThreads(cpus: CpuInfo): number {
  return Math.max(1, cpus.usable - 1);
}
