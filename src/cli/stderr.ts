// The CLI's own stderr lines (the summary, a fatal error, a bad option). A synchronous write to a
// pipe whose reader stopped reading never returns, so the process could not exit with its code, nor
// SHUTDOWN_TIMEOUT_SECONDS fire. On a pipe or socket they go through the logger's bounded,
// non-blocking destination; a file or terminal is written directly (it cannot get stuck that way).
import { sleep } from '../async/index.js';
import { BoundedDestination, nonBlockingStderr } from '../logger.js';

export interface CliStderr {
  write(text: string): void;
  /** Resolves once everything written left the process, or after `ms` (what is left is dropped at exit). */
  settled(ms: number): Promise<void>;
}

export function processStderr(): CliStderr {
  const fd = nonBlockingStderr();
  if (fd === null) return { write: (text) => void process.stderr.write(text), settled: () => Promise.resolve() };
  const d = new BoundedDestination(fd, { retryMs: 20 });
  return {
    write: (text) => void d.write(text),
    settled: async (ms) => {
      const deadline = Date.now() + ms;
      while (d.queuedBytes > 0 && Date.now() < deadline) await sleep(20);
    },
  };
}
