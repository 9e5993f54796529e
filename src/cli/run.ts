// The command: argv + environment -> config -> pipeline -> summary, and the exit status. The shipped
// bin (src/cli.ts) and the fault suite's engine entries call this one function, so what the fault
// tests run is what a user runs. A bad option is one line on stderr and status 2, before anything starts.
import { argvToEnv, configSecrets, helpText, parseConfig, redactDeep, redactedConfig, unknownVariables, unknownVariablesWarning, type Config, type Env } from '../config/index.js';
import { redactSecrets } from '../config/redact.js';
import { boundHeapGrowth, deferWorkerCollections } from '../config/memory.js';
import { versionText } from '../config/version.js';
import { ConfigError } from '../errors.js';
import { createLogger } from '../logger.js';
import { Pipeline, formatSummary, type PipelineDeps } from '../pipeline.js';
import { processStderr } from './stderr.js';

export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
  /**
   * Waits (at most `ms`) until what was written to stderr left the process. The real process's stderr
   * never blocks (a stuck pipe would hold the exit forever), so the last lines may still be queued.
   */
  readonly settled?: (ms: number) => Promise<void>;
  /** Ends the process now: a shutdown past SHUTDOWN_TIMEOUT_SECONDS, a second signal. */
  readonly exit: (code: number) => void;
  /** Where SIGTERM and SIGINT arrive. */
  readonly signals: Pick<NodeJS.Process, 'on'>;
  /** Decode worker entry; the fault suite's slow-worker entry sets it, the bin never does. */
  readonly workerFile?: PipelineDeps['workerFile'];
}

/** The real process: its streams, exit and signals. */
export function processIo(): CliIo {
  const stderr = processStderr();
  return { stdout: process.stdout, stderr, settled: (ms) => stderr.settled(ms), exit: (code) => process.exit(code), signals: process };
}

/** How long the exit waits for a slow stderr to take the summary (it is in the log's `done` line too). */
export const CLI_DEFAULTS = { summaryFlushMs: 2000 } as const;

/** Runs the command to its end; resolves to the exit status (0 ok, 1 failure, 2 bad option), never rejects. */
export async function runCli(argv: readonly string[], env: Env, io: CliIo): Promise<number> {
  // The config's secret values, once it is parsed: no line printed here may show them.
  const secrets: string[] = [];
  // The fatal error's line is printed when it happens; run() then rejects with the same error.
  const printed = new Set<unknown>();
  let code: number;
  try {
    code = await run(argv, env, io, secrets, printed);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    // The code goes last, in brackets: at the start of the line it read like a variable to set.
    if (!printed.has(err)) io.stderr.write(`streamstats: ${redactSecrets(e.message ?? String(err), secrets)}${e.code !== undefined ? ` [${e.code}]` : ''}\n`);
    code = 1;
  }
  await io.settled?.(CLI_DEFAULTS.summaryFlushMs);
  return code;
}

async function run(argv: readonly string[], env: Env, io: CliIo, secrets: string[], printed: Set<unknown>): Promise<number> {
  let config: Config;
  try {
    const flagged = argvToEnv(argv, env);
    if (flagged === 'help') {
      io.stdout.write(`${helpText()}\n`);
      return 0;
    }
    if (flagged === 'version') {
      io.stdout.write(`${versionText('streamstats')}\n`);
      return 0;
    }
    config = parseConfig(flagged);
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`streamstats: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  // The main thread's garbage within the memory budget (src/config/memory.ts), before the engine allocates.
  boundHeapGrowth();
  // Before the pools start: each worker's heap is made with it.
  deferWorkerCollections(config.workerMaxMemoryMb);
  // Every line this command prints goes through the config's secrets: the log, the summary, errors.
  secrets.push(...configSecrets(config));
  const logger = createLogger(config.logLevel, secrets);
  const unknown = unknownVariables(env);
  const warning = unknownVariablesWarning(unknown);
  if (warning !== null) logger.warn({ variables: unknown.map((u) => u.name) }, warning);
  logger.info({ config: redactedConfig(config) }, 'starting');
  logger.info({ workerThreads: config.workerThreads, reason: config.workerThreadsReason, laneState: config.laneState, laneStateReason: config.laneStateReason }, 'worker threads');
  logger.info({ batchSize: config.batchSize, batchMaxBytes: config.batchMaxBytes, poolQueue: config.poolQueue, reason: config.batchReason }, 'batches');
  const exitAfterTimeout = (what: string) => {
    const t = setTimeout(() => {
      logger.error({ timeoutSeconds: config.shutdownTimeoutSeconds }, `${what} took longer than SHUTDOWN_TIMEOUT_SECONDS; exiting`);
      io.exit(1);
    }, config.shutdownTimeoutSeconds * 1000);
    t.unref();
  };
  const pipeline = new Pipeline(config, {
    logger,
    ...(io.workerFile === undefined ? {} : { workerFile: io.workerFile }),
    onFatal: (err) => {
      // One line for the operator (the log has the whole error); the exit code is 1.
      const code = (err as { code?: string }).code;
      io.stderr.write(`streamstats: fatal: ${redactSecrets(err.message, secrets)}${code !== undefined ? ` [${code}]` : ''}\n`);
      printed.add(err);
      exitAfterTimeout('shutdown after a fatal error');
    },
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal: sig }, 'second signal: exiting now');
      io.exit(130);
      return;
    }
    logger.info({ signal: sig, timeoutSeconds: config.shutdownTimeoutSeconds }, 'shutting down: stop reading, finish in-flight batches, flush');
    pipeline.stop();
    exitAfterTimeout('shutdown');
  };
  io.signals.on('SIGTERM', onSignal);
  io.signals.on('SIGINT', onSignal);
  const summary = redactDeep(await pipeline.run(), secrets);
  logger.info({ summary }, 'done');
  io.stderr.write(`${formatSummary(summary)}\n`);
  return 0;
}
