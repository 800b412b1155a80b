import * as m001 from './001_initial.js';
import * as m002 from './002_webhooks.js';
import * as m003 from './003_inbound.js';
import * as m004 from './004_claims.js';
import * as m005 from './005_webhook_due.js';
import * as m006 from './006_dashboard.js';
import * as m007 from './007_dkim_rotation.js';
import * as m008 from './008_scheduled.js';
import * as m009 from './009_destinations.js';
import * as m010 from './010_key_last_used.js';
import * as m011 from './011_submission.js';
import * as m012 from './012_nodes.js';
import * as m013 from './013_header_message_id.js';
import * as m014 from './014_queue_ops.js';
import * as m015 from './015_attempts_by_delivery.js';
import * as m016 from './016_return_path.js';
import * as m017 from './017_dmarc_reports.js';
import * as m018 from './018_pools.js';
import * as m019 from './019_key_scopes.js';
import * as m020 from './020_queue_retries.js';
import * as m021 from './021_unsubscribe.js';
import * as m022 from './022_reputation.js';
import * as m023 from './023_webhook_secret_rotation.js';
import * as m024 from './024_send_quotas.js';
import * as m025 from './025_tls_reports.js';
import * as m026 from './026_warmup.js';

/**
 * Every migration, in order, listed statically so the build carries them. Append only. `rebuild`:
 * it rebuilds a table other tables refer to, so it runs with foreign keys off and checks them
 * before it commits.
 */
export const migrations: ReadonlyArray<{ version: number; name: string; sql: string; rebuild?: boolean }> = [
  { version: 1, name: 'initial', sql: m001.up },
  { version: 2, name: 'webhooks', sql: m002.up },
  { version: 3, name: 'inbound', sql: m003.up },
  { version: 4, name: 'claims', sql: m004.up },
  { version: 5, name: 'webhook_due', sql: m005.up },
  { version: 6, name: 'dashboard', sql: m006.up },
  { version: 7, name: 'dkim_rotation', sql: m007.up },
  { version: 8, name: 'scheduled', sql: m008.up, rebuild: m008.rebuild },
  { version: 9, name: 'destinations', sql: m009.up },
  { version: 10, name: 'key_last_used', sql: m010.up },
  { version: 11, name: 'submission', sql: m011.up },
  { version: 12, name: 'nodes', sql: m012.up },
  { version: 13, name: 'header_message_id', sql: m013.up },
  { version: 14, name: 'queue_ops', sql: m014.up },
  { version: 15, name: 'attempts_by_delivery', sql: m015.up },
  { version: 16, name: 'return_path', sql: m016.up },
  { version: 17, name: 'dmarc_reports', sql: m017.up },
  { version: 18, name: 'pools', sql: m018.up },
  { version: 19, name: 'key_scopes', sql: m019.up },
  { version: 20, name: 'queue_retries', sql: m020.up },
  { version: 21, name: 'unsubscribe', sql: m021.up },
  { version: 22, name: 'reputation', sql: m022.up },
  { version: 23, name: 'webhook_secret_rotation', sql: m023.up },
  { version: 24, name: 'send_quotas', sql: m024.up },
  { version: 25, name: 'tls_reports', sql: m025.up },
  { version: 26, name: 'warmup', sql: m026.up },
];
