// Preloaded into a measured child (node --import): at exit it reports the process's peak resident set
// (getrusage ru_maxrss, all threads) on stderr, so peak RSS is exact rather than sampled.
import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  process.on('exit', () => {
    // ru_maxrss is in KiB on Linux.
    writeSync(2, `${JSON.stringify({ bench: 'maxrss', maxRssBytes: process.resourceUsage().maxRSS * 1024 })}\n`);
  });
}
