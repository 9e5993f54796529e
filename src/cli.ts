#!/usr/bin/env node
// The shipped bin: node started once more with the main heap's sizes (src/config/main-heap.ts), then
// the real process's argv, environment and streams handed to runCli. Nothing else is loaded before
// the exec: what this image did would be thrown away.
import { MAIN_HEAP_FLAGS, relaunchArgv } from './config/main-heap.js';

const args = relaunchArgv({
  platform: process.platform,
  canExec: typeof process.execve === 'function',
  execPath: process.execPath,
  execArgv: process.execArgv,
  argv: process.argv,
  nodeOptions: process.env.NODE_OPTIONS ?? '',
  hasChannel: process.channel !== undefined,
  relaunch: process.env.STREAMSTATS_RELAUNCH,
});
if (args !== null) {
  try {
    process.execve!(process.execPath, args, process.env);
  } catch (err) {
    // Refused (a seccomp profile, a binary gone since launch): this image runs on with V8's own sizes.
    process.stderr.write(`streamstats: starting node again with ${MAIN_HEAP_FLAGS.filter((f) => args.includes(f)).join(' ')} failed (${(err as Error).message}); running with V8's default heap sizes\n`);
  }
}
const { processIo, runCli } = await import('./cli/run.js');
process.exitCode = await runCli(process.argv.slice(2), process.env, processIo());
