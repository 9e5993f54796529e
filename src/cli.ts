#!/usr/bin/env node
// Entry: env + flags -> config -> run. A bad option is one line on stderr and exit 2, before anything starts.
import { argvToEnv, helpText, parseConfig, redactedConfig, unknownVariables, unknownVariablesWarning, type Config } from './config/index.js';
import { versionText } from './config/version.js';
import { ConfigError } from './errors.js';
import { createLogger } from './logger.js';
import { Pipeline, formatSummary } from './pipeline.js';

async function main(): Promise<number> {
  let config: Config;
  try {
    const env = argvToEnv(process.argv.slice(2), process.env);
    if (env === 'help') {
      process.stdout.write(`${helpText()}\n`);
      return 0;
    }
    if (env === 'version') {
      process.stdout.write(`${versionText('streamstats')}\n`);
      return 0;
    }
    config = parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`streamstats: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  const unknown = unknownVariables(process.env);
  const warning = unknownVariablesWarning(unknown);
  if (warning !== null) logger.warn({ variables: unknown.map((u) => u.name) }, warning);
  logger.info({ config: redactedConfig(config) }, 'starting');
  logger.info({ workerThreads: config.workerThreads, reason: config.workerThreadsReason }, 'decode threads');
  const exitAfterTimeout = (what: string) => {
    const t = setTimeout(() => {
      logger.error({ timeoutSeconds: config.shutdownTimeoutSeconds }, `${what} took longer than SHUTDOWN_TIMEOUT_SECONDS; exiting`);
      process.exit(1);
    }, config.shutdownTimeoutSeconds * 1000);
    t.unref();
  };
  const pipeline = new Pipeline(config, {
    logger,
    onFatal: (err) => {
      // One line for the operator (the log has the whole error); the exit code is 1.
      process.stderr.write(`streamstats: fatal: ${err.message}\n`);
      exitAfterTimeout('shutdown after a fatal error');
    },
  });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(130);
    }
    logger.info({ signal: sig, timeoutSeconds: config.shutdownTimeoutSeconds }, 'shutting down: stop reading, finish in-flight batches, flush');
    pipeline.stop();
    exitAfterTimeout('shutdown');
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const summary = await pipeline.run();
  logger.info({ summary }, 'done');
  process.stderr.write(`${formatSummary(summary)}\n`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const e = err as { code?: string; message?: string };
    process.stderr.write(`streamstats: ${e.code !== undefined ? `${e.code}: ` : ''}${e.message ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
