import * as m001 from './migrations/001_baseline.js';
import * as m002 from './migrations/002_submission.js';
import * as m003 from './migrations/003_nodes.js';
import * as m004 from './migrations/004_cluster.js';
import * as m005 from './migrations/005_hot_parents.js';
import * as m006 from './migrations/006_throttle_holders.js';
import * as m007 from './migrations/007_header_message_id.js';
import * as m008 from './migrations/008_queue_ops.js';
import * as m009 from './migrations/009_return_path.js';
import * as m010 from './migrations/010_dmarc_reports.js';
import * as m011 from './migrations/011_pools.js';
import * as m012 from './migrations/012_key_scopes.js';
import * as m013 from './migrations/013_queue_retries.js';
import * as m014 from './migrations/014_unsubscribe.js';
import * as m015 from './migrations/015_reputation.js';
import * as m016 from './migrations/016_webhook_secret_rotation.js';
import * as m017 from './migrations/017_send_quotas.js';
import * as m018 from './migrations/018_tls_reports.js';
import * as m019 from './migrations/019_warmup.js';
import * as m020 from './migrations/020_connection_shards.js';

/**
 * The PostgreSQL engine's migrations: numbered and append-only, as the SQLite engine's are
 * (store/sqlite/migrations/), and applied under one advisory lock so several nodes starting at once
 * migrate once. Version 1 is the schema the SQLite migrations 1-10 arrive at, written for
 * PostgreSQL: identity keys, bytea for bytes, bigint milliseconds, booleans kept as 0/1 integers
 * (rows read the same on both engines). Where the two differ, it is said here:
 *
 * - events carry `txid`, the transaction that wrote them: the fan-out reads only events of
 *   transactions every snapshot sees as finished, in (txid, seq) order, since concurrent
 *   transactions commit in another order than they take sequence numbers (webhooks/fanout.ts).
 * - activity_hourly has a `shard` (the writing connection's own slot, migration 020): the
 *   overview's counters are kept by triggers in every accept and outcome, and one row per
 *   customer, hour and kind would make every connection's commits wait for each other's.
 * - The triggers are PL/pgSQL and the activity ones run once per statement over its rows; they
 *   do what the SQLite ones do (test/unit/store/contract-*.test.ts check they agree).
 */
export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/** Every migration, in order, listed statically so the build carries them. Append only. */
export const pgMigrations: PgMigration[] = [
  { version: 1, name: 'baseline', sql: m001.up },
  { version: 2, name: 'submission', sql: m002.up },
  { version: 3, name: 'nodes', sql: m003.up },
  { version: 4, name: 'cluster', sql: m004.up },
  { version: 5, name: 'hot_parents', sql: m005.up },
  { version: 6, name: 'throttle_holders', sql: m006.up },
  { version: 7, name: 'header_message_id', sql: m007.up },
  { version: 8, name: 'queue_ops', sql: m008.up },
  { version: 9, name: 'return_path', sql: m009.up },
  { version: 10, name: 'dmarc_reports', sql: m010.up },
  { version: 11, name: 'pools', sql: m011.up },
  { version: 12, name: 'key_scopes', sql: m012.up },
  { version: 13, name: 'queue_retries', sql: m013.up },
  { version: 14, name: 'unsubscribe', sql: m014.up },
  { version: 15, name: 'reputation', sql: m015.up },
  { version: 16, name: 'webhook_secret_rotation', sql: m016.up },
  { version: 17, name: 'send_quotas', sql: m017.up },
  { version: 18, name: 'tls_reports', sql: m018.up },
  { version: 19, name: 'warmup', sql: m019.up },
  { version: 20, name: 'connection_shards', sql: m020.up },
];
