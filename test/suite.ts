// `npm test`: the unit tests with their coverage printed, the integration tests on the default
// store (SQLite), then the integration tests again on PostgreSQL, with one private PostgreSQL
// cluster for the runs that need one (support/postgres.ts: each test takes a database of its
// own in it). Exits non-zero if any run failed. Arguments (files) run those alone, on SQLite.
//
// Coverage is measured over the unit tests only: tap instruments every process a test starts,
// and the integration tests start daemons as processes of their own (the crash, memory and
// install tests among them), which instrumented run past their time limits on a 2-core machine.
// `npx tap report text` prints the last run's coverage file by file (docs/testing.md).
import { spawnSync } from 'node:child_process';
import { startSharedCluster, stopSharedCluster } from '../support/postgres.js';

const tap = (args: string[], env: NodeJS.ProcessEnv = {}) =>
  spawnSync('npx', ['tap', ...args], { stdio: 'inherit', env: { ...process.env, ...env } }).status ?? 1;
const COVERAGE = ['--no-disable-coverage', '--allow-incomplete-coverage', '--coverage-report=text-summary'];

await startSharedCluster();
let status = 1;
try {
  const extra = process.argv.slice(2);
  if (extra.length > 0) status = tap(extra);
  else {
    const unit = tap([...COVERAGE, 'dist/test/unit']);
    process.stdout.write('\n# The integration tests, on SQLite\n');
    const sqlite = tap(['dist/test/integration']);
    process.stdout.write('\n# The integration tests again, on PostgreSQL (POSTHASTE_TEST_STORE=postgres)\n');
    const postgres = tap(['dist/test/integration'], { POSTHASTE_TEST_STORE: 'postgres' });
    status = unit || sqlite || postgres;
  }
} finally {
  stopSharedCluster();
}
process.exit(status);
