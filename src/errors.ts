// Error codes as one union; every error says whether retrying can help.

export const ERROR_CODES = [
  'STREAMSTATS_CONFIG',
  'STREAMSTATS_POOL_CLOSED',
  'STREAMSTATS_SOURCE',
  'STREAMSTATS_SINK',
  /** LANE_STATE=worker: a worker that owned lanes died (crash, TASK_TIMEOUT_SECONDS, WORKER_MAX_MEMORY_MB) with their state. */
  'STREAMSTATS_LANE_OWNER_LOST',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class StreamstatsError extends Error {
  readonly code: ErrorCode;
  readonly canRetry: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; canRetry?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'StreamstatsError';
    this.code = code;
    this.canRetry = options.canRetry ?? false;
  }
}

/** A configuration value that is not allowed: names the variable, the value and what is allowed. */
export class ConfigError extends StreamstatsError {
  constructor(readonly variable: string, value: string, allowed: string) {
    super('STREAMSTATS_CONFIG', `${variable}=${JSON.stringify(value)} is not valid: ${allowed}`);
    this.name = 'ConfigError';
  }
}
