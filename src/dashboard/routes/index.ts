import type { Dashboard, DashboardDeps } from '../dashboard.js';
import { pages } from '../pages.js';
import { contentRoutes } from './content.js';
import { customersRoutes } from './customers.js';
import { domainsRoutes } from './domains.js';
import { inboundRoutes } from './inbound.js';
import { keysRoutes } from './keys.js';
import { messagesRoutes } from './messages.js';
import { sessionRoutes } from './sessions.js';
import { suppressionsRoutes } from './suppressions.js';
import { webhooksRoutes } from './webhooks.js';

/** Every page and action of the dashboard, one module per area, calling the same store and service functions as the API and CLI. */
export function pageRoutes(dash: Dashboard, deps: DashboardDeps): void {
  const p = pages(dash, deps);
  for (const area of [
    sessionRoutes,
    keysRoutes,
    domainsRoutes,
    webhooksRoutes,
    messagesRoutes,
    contentRoutes,
    suppressionsRoutes,
    inboundRoutes,
    customersRoutes,
  ])
    area(p);
}
