// tap's `before` script (.taprc): one PostgreSQL cluster for the whole run (test/helpers/postgres.ts).
import { startSharedCluster } from './postgres.js';

await startSharedCluster();
