import { readFileSync } from 'node:fs';

/** posthaste's version, from package.json (for user-agent and --version). */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
