import { Counter, Gauge, Registry } from 'prom-client';

/**
 * Prometheus metrics (GET /metrics, docs/operations.md): queue depth by state (read from the store on each
 * scrape), deliveries by outcome, webhook attempts by outcome, inbound by result, API requests
 * by status.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly deliveries = new Counter({ name: 'posthaste_deliveries_total', help: 'Delivery attempt outcomes', labelNames: ['outcome'], registers: [this.registry] });
  readonly webhooks = new Counter({ name: 'posthaste_webhook_attempts_total', help: 'Webhook attempt outcomes', labelNames: ['outcome'], registers: [this.registry] });
  readonly inbound = new Counter({ name: 'posthaste_inbound_total', help: 'Inbound messages and recipients by result', labelNames: ['result'], registers: [this.registry] });
  readonly apiAborted = new Counter({ name: 'posthaste_api_client_aborts_total', help: 'API requests whose client went away before its body was read', registers: [this.registry] });
  /** API responses by status, counted in a plain array (every request passes here) and handed to prom-client at scrape time. */
  private readonly apiCounts = new Float64Array(600);
  readonly api = new Counter({
    name: 'posthaste_api_requests_total',
    help: 'API requests by HTTP status',
    labelNames: ['status'],
    registers: [this.registry],
    collect: () => {
      for (let status = 100; status < 600; status++) if (this.apiCounts[status]) this.api.labels(String(status)).inc(this.apiCounts[status]!);
      this.apiCounts.fill(0);
    },
  });

  countApi(status: number): void {
    if (status >= 100 && status < 600) this.apiCounts[status]!++;
  }

  /** `byState`: counts by state, read on each scrape (the store's, handed in by the composition root). */
  constructor(byState: { recipients: () => Record<string, number>; webhookDeliveries: () => Record<string, number> }) {
    this.gaugeByState('posthaste_queue_recipients', 'Recipients by state', byState.recipients);
    this.gaugeByState('posthaste_webhook_deliveries', 'Webhook deliveries by state', byState.webhookDeliveries);
  }

  /** A gauge of counts by `state`, read on each scrape. */
  private gaugeByState(name: string, help: string, read: () => Record<string, number>): void {
    const gauge = new Gauge({
      name,
      help,
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        gauge.reset();
        for (const [state, n] of Object.entries(read())) gauge.set({ state }, n);
      },
    });
  }
}
