// What the numbers were measured on: every result file carries it.
import { cpus, totalmem, platform, release, arch, availableParallelism } from 'node:os';
import { detectCpus } from '../../src/config/cpus.js';

export interface MachineInfo {
  readonly cpuModel: string;
  readonly cpuCount: number;
  readonly availableParallelism: number;
  /** What WORKER_THREADS=auto sees (cgroup quota aware). */
  readonly usableCpus: number;
  readonly usableCpusSource: string;
  readonly totalMemoryBytes: number;
  readonly node: string;
  readonly os: string;
}

export function machineInfo(): MachineInfo {
  const list = cpus();
  const usable = detectCpus();
  return {
    cpuModel: list[0]?.model.trim() ?? 'unknown',
    cpuCount: list.length,
    availableParallelism: availableParallelism(),
    usableCpus: usable.usable,
    usableCpusSource: usable.source,
    totalMemoryBytes: totalmem(),
    node: process.version,
    os: `${platform()} ${release()} ${arch()}`,
  };
}

export function describeMachine(m: MachineInfo): string {
  return `${m.cpuModel}, ${m.cpuCount} CPUs (${m.usableCpus} usable: ${m.usableCpusSource}), ${(m.totalMemoryBytes / 2 ** 30).toFixed(0)} GiB, Node ${m.node}, ${m.os}`;
}
