// `npm test`: the whole suite on the default store (SQLite), then the integration tests again on
// PostgreSQL, with one private PostgreSQL cluster for both runs (support/postgres.ts: each
// test takes a database of its own in it). Exits non-zero if either run failed.
import { spawnSync } from 'node:child_process';
import { startSharedCluster, stopSharedCluster } from '../support/postgres.js';

const tap = (args: string[], env: NodeJS.ProcessEnv = {}) => spawnSync('npx', ['tap', ...args], { stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;

await startSharedCluster();
let status = 1;
try {
  const extra = process.argv.slice(2);
  const sqlite = tap(extra);
  process.stdout.write('\n# The integration tests again, on PostgreSQL (POSTHASTE_TEST_STORE=postgres)\n');
  const postgres = extra.length > 0 ? 0 : tap(['dist/test/integration'], { POSTHASTE_TEST_STORE: 'postgres' });
  status = sqlite || postgres;
} finally {
  stopSharedCluster();
}
process.exit(status);
