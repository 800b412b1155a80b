import { type Logger, pino } from 'pino';

export type { Logger };

/**
 * Paths that must never reach a log line: API keys arrive in the Authorization header and
 * webhook secrets in endpoint rows.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'key',
  'secret',
  '*.secret',
  '*.key',
];

/** `node`: server.node_name, on every line (several nodes on one store: docs/cluster.md). */
export function createLogger(level: string, destination?: NodeJS.WritableStream, node?: string): Logger {
  return pino(
    {
      level,
      base: { service: 'posthaste', ...(node !== undefined ? { node } : {}) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination ?? process.stdout,
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
