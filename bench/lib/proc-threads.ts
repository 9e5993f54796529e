// Another process's CPU by kind of thread, read from /proc/<pid>/task/*/stat at a moment the bench
// chooses (the first message seen, the last row out), so a stream's CPU per record leaves out the
// process's start-up, group join and shutdown. The kinds are those of thread-cpu-preload.ts: MAIN
// (the thread whose id is the pid), WorkerThread, V8Worker, libuv-worker. Linux only: elsewhere the
// snapshot is empty and the figures NaN.
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const TICKS = 100;

/** The kinds of thread the benches report, by the names /proc and thread-cpu-preload.ts give them. */
export const THREAD_KINDS = { main: 'MAIN', workers: 'WorkerThread', v8: 'V8Worker', libuv: 'libuv-worker' } as const;

export type ThreadCpu = Readonly<Record<string, number>>;

/** CPU seconds (user + system) per kind of thread of process `pid` now. */
export function threadCpu(pid: number | undefined): ThreadCpu {
  const dir = `/proc/${pid}/task`;
  if (pid === undefined || !existsSync(dir)) return {};
  const out: Record<string, number> = {};
  for (const tid of readdirSync(dir)) {
    try {
      const st = readFileSync(`${dir}/${tid}/stat`, 'utf8');
      const fields = st.slice(st.lastIndexOf(')') + 2).split(' ');
      const name = tid === String(pid) ? 'MAIN' : st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      out[name] = (out[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICKS;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/**
 * What each kind of thread spent between two snapshots. A thread that ended in between (a replaced
 * worker) is missing from the later one: its kind's figure is then a lower bound.
 */
export function threadCpuBetween(from: ThreadCpu, to: ThreadCpu): ThreadCpu {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) out[k] = Math.max(0, (to[k] ?? 0) - (from[k] ?? 0));
  return out;
}
