import { Counter, Gauge, Registry } from 'prom-client';
import type { Db } from '../store/db.js';

/**
 * Prometheus metrics (SPEC.md, GET /metrics): queue depth by state (read from the store on each
 * scrape), deliveries by outcome, webhook attempts by outcome, inbound by result, API requests
 * by status.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly deliveries = new Counter({ name: 'posthaste_deliveries_total', help: 'Delivery attempt outcomes', labelNames: ['outcome'], registers: [this.registry] });
  readonly webhooks = new Counter({ name: 'posthaste_webhook_attempts_total', help: 'Webhook attempt outcomes', labelNames: ['outcome'], registers: [this.registry] });
  readonly inbound = new Counter({ name: 'posthaste_inbound_total', help: 'Inbound messages and recipients by result', labelNames: ['result'], registers: [this.registry] });
  readonly api = new Counter({ name: 'posthaste_api_requests_total', help: 'API requests by HTTP status', labelNames: ['status'], registers: [this.registry] });

  constructor(db: Db) {
    const queue = new Gauge({
      name: 'posthaste_queue_recipients',
      help: 'Recipients by state',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        queue.reset();
        for (const r of db.statement('SELECT state, COUNT(*) AS n FROM recipients GROUP BY state').all() as Array<{ state: string; n: number }>) queue.set({ state: r.state }, r.n);
      },
    });
    const backlog = new Gauge({
      name: 'posthaste_webhook_deliveries',
      help: 'Webhook deliveries by state',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        backlog.reset();
        for (const r of db.statement('SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state').all() as Array<{ state: string; n: number }>) backlog.set({ state: r.state }, r.n);
      },
    });
  }
}
