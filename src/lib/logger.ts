import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Paths that must never reach a log line: API keys arrive in the Authorization header and
 * webhook secrets in endpoint rows.
 */
export const REDACT_PATHS = ['req.headers.authorization', 'headers.authorization', 'authorization', 'key', 'secret', '*.secret', '*.key'];

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino({ level, base: { service: 'posthaste' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination ?? process.stdout);
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
