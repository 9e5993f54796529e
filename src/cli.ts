#!/usr/bin/env node
// The shipped bin: the real process's argv, environment and streams handed to runCli.
import { processIo, runCli } from './cli/run.js';

process.exitCode = await runCli(process.argv.slice(2), process.env, processIo());
