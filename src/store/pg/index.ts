import type { Store } from '../store.js';
import { pgAdmin } from './admin.js';
import { pgCustomers } from './customers.js';
import { PgDb, redactUrl } from './db.js';
import { pgDelivery } from './delivery.js';
import { pgDmarc } from './dmarc.js';
import { pgDomains } from './domains.js';
import { pgInbound } from './inbound.js';
import { pgKeys } from './keys.js';
import { pgMessages } from './messages.js';
import { pgNodes } from './nodes.js';
import { pgQueue } from './queue-ops.js';
import { pgReputation } from './reputation.js';
import { pgSuppressions } from './suppressions.js';
import { pgTlsReports } from './tls-reports.js';
import { pgUsers } from './users.js';
import { pgWakeups } from './wakeups.js';
import { pgWarmup } from './warmup.js';
import { pgWebhooks } from './webhooks.js';

export { redactUrl };

/**
 * The PostgreSQL engine behind the store interface, for one node or several on one database
 * (docs/architecture.md, "The store"): a pool of connections (`max`), each unit of work one
 * transaction or one statement, claims that skip what another node has locked.
 */
export function pgStore(url: string, opts: { password?: string; max?: number; applicationName?: string } = {}): Store {
  const db = new PgDb(url, opts);
  const delivery = pgDelivery(db);
  const nodes = pgNodes(db);
  return {
    engine: 'postgres',
    location: redactUrl(url),
    admin: pgAdmin(db, delivery, nodes),
    customers: pgCustomers(db),
    keys: pgKeys(db),
    domains: pgDomains(db),
    suppressions: pgSuppressions(db),
    messages: pgMessages(db),
    delivery,
    inbound: pgInbound(db),
    webhooks: pgWebhooks(db),
    users: pgUsers(db),
    nodes,
    wakeups: pgWakeups(db),
    queue: pgQueue(db),
    reputation: pgReputation(db),
    dmarc: pgDmarc(db),
    tlsReports: pgTlsReports(db),
    warmup: pgWarmup(db),
  };
}
