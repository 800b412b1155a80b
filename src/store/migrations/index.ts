import * as m001 from './001_initial.js';
import * as m002 from './002_webhooks.js';
import * as m003 from './003_inbound.js';
import * as m004 from './004_claims.js';
import * as m005 from './005_webhook_due.js';
import * as m006 from './006_dashboard.js';

/** Every migration, in order, listed statically so the build carries them. Append only. */
export const migrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  { version: 1, name: 'initial', sql: m001.up },
  { version: 2, name: 'webhooks', sql: m002.up },
  { version: 3, name: 'inbound', sql: m003.up },
  { version: 4, name: 'claims', sql: m004.up },
  { version: 5, name: 'webhook_due', sql: m005.up },
  { version: 6, name: 'dashboard', sql: m006.up },
];
