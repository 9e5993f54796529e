import { pino, type Logger } from 'pino';

/** Structured JSON logs on stderr: stdout belongs to the statistics sink. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { name: 'streamstats' } }, pino.destination({ dest: 2, sync: true }));
}
