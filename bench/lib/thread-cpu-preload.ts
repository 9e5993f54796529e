// Preload (node --import): polls /proc/self/task/*/stat and prints each thread's CPU seconds (user +
// system) at exit, as {"bench":"threads",...} on stderr: MAIN is the main thread, WorkerThread the
// decode workers, V8Worker V8's helper threads (GC, compiler). Linux only; elsewhere it prints nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

if (isMainThread && existsSync('/proc/self/task')) {
  const TICKS = 100;
  const seen = new Map<string, { comm: string; cpu: number }>();
  const poll = (): void => {
    for (const tid of readdirSync('/proc/self/task')) {
      try {
        const st = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const fields = st.slice(st.lastIndexOf(')') + 2).split(' ');
        seen.set(tid, { comm: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')), cpu: (Number(fields[11]) + Number(fields[12])) / TICKS });
      } catch {
        // The thread ended between the listing and the read: its last poll stands.
      }
    }
  };
  // Threads that end before the process (replaced workers) keep their last polled figure.
  setInterval(poll, 100).unref();
  process.on('exit', () => {
    poll();
    const threads: Record<string, number> = {};
    for (const [tid, v] of seen) {
      const name = tid === String(process.pid) ? 'MAIN' : v.comm;
      threads[name] = (threads[name] ?? 0) + v.cpu;
    }
    process.stderr.write(`${JSON.stringify({ bench: 'threads', threads })}\n`);
  });
}
