import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { DoctorReport } from '../domain/doctor.js';
import { RouteHistogram } from './route-histogram.js';

/** Every state a recipient and a webhook delivery can be in: each gauge shows them all, at 0 when none. */
const RECIPIENT_STATES = ['queued', 'deferred', 'delivered', 'bounced', 'complained', 'suppressed', 'canceled'];
const WEBHOOK_STATES = ['pending', 'succeeded', 'failed'];
const DELIVERY_OUTCOMES = ['delivered', 'deferred', 'bounced', 'suppressed'];
const WEBHOOK_OUTCOMES = ['success', 'failure', 'gone'] as const;
const SUBMISSION_AUTH = ['success', 'failure', 'throttled'];
/** accepted; refused at RCPT TO for a suppressed recipient; refused after DATA for the sender (550), the content (554), a bare newline or the size; deferred (4xx: the store, a revoked key, a suppression meanwhile). */
const SUBMISSION_RESULTS = [
  'accepted',
  'suppressed',
  'refused_sender',
  'refused_content',
  'bare_newline',
  'too_big',
  'deferred',
];

/** Seconds. An API request: a millisecond to a timeout; a delivery: seconds to the 72 h of max_queue_time; a webhook: to its 10 s timeout. */
const API_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const DELIVERY_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 72 * 3600];
const WEBHOOK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** What the metrics read from the store on each scrape (handed in by the composition root). */
export interface MetricsSources {
  recipients: () => Promise<Record<string, number>>;
  webhookDeliveries: () => Promise<Record<string, number>>;
  /** When the oldest recipient still to be sent (queued or deferred, and due) became due, epoch ms; null when there is none. */
  oldestQueued: () => Promise<number | null>;
  now: () => number;
  /**
   * Whether this node serves the store's gauges, which are the same on every node of a shared
   * store: one node serves them, the others none, so a sum over the nodes counts each recipient
   * once. Always, when not given.
   */
  servesStoreGauges?: () => Promise<boolean>;
  /** Each customer's reputation (docs/operations.md, "Reputation"): its state and its rates in percent (null: not judged yet). */
  customers?: () => Promise<
    Array<{ customer: string; state: string; bounceRate: number | null; complaintRate: number | null }>
  >;
  /** The deliverability doctor's last report on this node (daemon/doctor.ts); null before its first run. */
  doctor?: () => DoctorReport | null;
}

/**
 * Prometheus metrics (GET /metrics, docs/operations.md, "Watching it"), named as Prometheus
 * asks: base units as suffixes (_seconds, _bytes), counters ending in _total. The store's
 * gauges are read on each scrape; every labelled series that can be known in advance is there
 * at 0 from the start, so a rate or an alert works before the first event. Node's process
 * metrics (CPU, memory, event loop lag, GC, handles) come from prom-client's defaults.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly deliveries = new Counter({
    name: 'posthaste_deliveries_total',
    help: 'Delivery attempt outcomes',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly timeToDelivery = new Histogram({
    name: 'posthaste_time_to_delivery_seconds',
    help: 'Seconds from a message being accepted to a recipient of it delivered',
    buckets: DELIVERY_BUCKETS,
    registers: [this.registry],
  });
  readonly webhooks = new Counter({
    name: 'posthaste_webhook_attempts_total',
    help: 'Webhook attempt outcomes',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly webhookDuration = new Histogram({
    name: 'posthaste_webhook_attempt_duration_seconds',
    help: 'Seconds a webhook attempt took, from sending to the answer (or the failure)',
    labelNames: ['outcome'],
    buckets: WEBHOOK_BUCKETS,
    registers: [this.registry],
  });
  readonly inbound = new Counter({
    name: 'posthaste_inbound_total',
    help: 'Inbound messages and recipients by result',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly submissionAuth = new Counter({
    name: 'posthaste_submission_auth_total',
    help: 'AUTH attempts on the submission listeners by result (success, failure: an unknown or revoked key, throttled: refused unread after repeated failures)',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly submission = new Counter({
    name: 'posthaste_submission_messages_total',
    help: 'Messages submitted over SMTP by result',
    labelNames: ['result'],
    registers: [this.registry],
  });
  readonly apiAborted = new Counter({
    name: 'posthaste_api_client_aborts_total',
    help: 'API requests whose client went away before its body was read',
    registers: [this.registry],
  });
  readonly apiDuration = new RouteHistogram(
    'posthaste_api_request_duration_seconds',
    'Seconds from an API request arriving to its response sent, by route pattern and status class',
    API_BUCKETS,
    this.registry,
  );
  /** API responses by status, counted in a plain array (every request passes here) and handed to prom-client at scrape time. */
  private readonly apiCounts = new Float64Array(600);
  readonly api = new Counter({
    name: 'posthaste_api_requests_total',
    help: 'API requests by HTTP status',
    labelNames: ['status'],
    registers: [this.registry],
    collect: () => {
      for (let status = 100; status < 600; status++)
        if (this.apiCounts[status]) this.api.labels(String(status)).inc(this.apiCounts[status]!);
      this.apiCounts.fill(0);
    },
  });

  /** `processMetrics`: collect Node's (an event-loop delay monitor and a GC observer run for them), when the metrics are served at all. */
  constructor(
    sources: MetricsSources,
    opts: { processMetrics: boolean; node?: { name: string; id: string } } = { processMetrics: true },
  ) {
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    // Which node serves these (several on one store: docs/cluster.md); join on it, or scrape each node as its own target.
    if (opts.node)
      new Gauge({
        name: 'posthaste_node_info',
        help: 'This node: server.node_name and its id (fresh at every start); always 1',
        labelNames: ['node', 'node_id'],
        registers: [this.registry],
      }).set({ node: opts.node.name, node_id: opts.node.id }, 1);
    const recipients = this.gaugeByState(
      'posthaste_queue_recipients',
      'Recipients by state',
      RECIPIENT_STATES,
      sources.recipients,
    );
    const webhookDeliveries = this.gaugeByState(
      'posthaste_webhook_deliveries',
      'Webhook deliveries by state',
      WEBHOOK_STATES,
      sources.webhookDeliveries,
    );
    const oldest = new Gauge({
      name: 'posthaste_queue_oldest_age_seconds',
      help: 'Seconds the oldest recipient still to be sent (queued or deferred) has waited since its message was accepted (or its scheduled time); 0 when none',
      registers: [this.registry],
      async collect() {
        const at = await sources.oldestQueued();
        oldest.set(at === null ? 0 : Math.max(0, (sources.now() - at) / 1000));
      },
    });
    if (sources.doctor) this.doctorGauges(sources.doctor);
    const serves = sources.servesStoreGauges;
    const customers = sources.customers ? customerGauges(this.registry, sources.customers) : [];
    if (serves)
      for (const gauge of [recipients, webhookDeliveries, oldest, ...customers]) servedOnlyWhen(gauge, serves);
    for (const outcome of DELIVERY_OUTCOMES) this.deliveries.inc({ outcome }, 0);
    for (const result of SUBMISSION_AUTH) this.submissionAuth.inc({ result }, 0);
    for (const result of SUBMISSION_RESULTS) this.submission.inc({ result }, 0);
    for (const outcome of WEBHOOK_OUTCOMES) {
      this.webhooks.inc({ outcome }, 0);
      this.webhookDuration.zero({ outcome });
    }
  }

  /** One API response: its status and how long it took (every request: kept cheap, see RouteHistogram). */
  observeApi(route: string | undefined, status: number, seconds: number): void {
    if (status >= 100 && status < 600) this.apiCounts[status]!++;
    this.apiDuration.observe(route ?? 'unmatched', status, seconds);
  }

  /** A recipient's delivery outcome; `acceptedAgo`: seconds since its message was accepted. */
  observeOutcome(kind: string, acceptedAgo: number): void {
    this.deliveries.inc({ outcome: kind });
    if (kind === 'delivered') this.timeToDelivery.observe(Math.max(0, acceptedAgo));
  }

  /** A webhook attempt: its outcome and how long it took. */
  observeWebhook(outcome: (typeof WEBHOOK_OUTCOMES)[number], seconds: number): void {
    this.webhooks.inc({ outcome });
    this.webhookDuration.observe({ outcome }, seconds);
  }

  /**
   * The doctor's last report (docs/operations.md, "Deliverability"): a gauge per check, 1 passing
   * and 0 failing; a check the DNS did not answer has no sample (nothing is known); and when it ran.
   */
  private doctorGauges(last: () => DoctorReport | null): void {
    const check = new Gauge({
      name: 'posthaste_doctor_check',
      help: "The deliverability doctor's checks on this node's last run: 1 passing, 0 failing (see `posthaste doctor` for the fix); no sample when the DNS did not answer",
      labelNames: ['check', 'domain', 'subject'],
      registers: [this.registry],
      collect() {
        check.reset();
        for (const c of last()?.checks ?? [])
          if (c.state !== 'no_answer')
            check.set({ check: c.check, domain: c.domain ?? '', subject: c.subject }, c.state === 'pass' ? 1 : 0);
      },
    });
    const ran = new Gauge({
      name: 'posthaste_doctor_last_run_timestamp_seconds',
      help: 'When the deliverability doctor last ran on this node (Unix seconds); 0 before its first run',
      registers: [this.registry],
      collect() {
        const at = last()?.at;
        ran.set(at ? Date.parse(at) / 1000 : 0);
      },
    });
  }

  /** A gauge of counts by `state`, read on each scrape; every state of `states` is shown, at 0 when none. */
  private gaugeByState(
    name: string,
    help: string,
    states: string[],
    read: () => Promise<Record<string, number>>,
  ): Gauge {
    const gauge = new Gauge({
      name,
      help,
      labelNames: ['state'],
      registers: [this.registry],
      async collect() {
        const counts = await read();
        gauge.reset();
        for (const state of new Set([...states, ...Object.keys(counts)])) gauge.set({ state }, counts[state] ?? 0);
      },
    });
    return gauge;
  }
}

/** The gauge is read and served only while `serves` says so; otherwise its name is served with no samples (nor a 0, which a sum would count). */
function servedOnlyWhen(gauge: Gauge, serves: () => Promise<boolean>): void {
  const get = gauge.get.bind(gauge);
  gauge.get = async () => {
    if (await serves()) return get();
    // What prom-client's own get() answers for a gauge, without reading it (its collect).
    const { help, name, aggregator } = gauge as unknown as { help: string; name: string; aggregator: 'sum' };
    return { help, name, type: 'gauge', aggregator, values: [] } as unknown as Awaited<ReturnType<Gauge['get']>>;
  };
}

/** The customers' reputation gauges, read together on each scrape (a rate not judged yet is left out). */
function customerGauges(registry: Registry, read: NonNullable<MetricsSources['customers']>): Gauge[] {
  let pending: ReturnType<typeof read> | undefined;
  // The three gauges collect one after another in a scrape: one read serves them all.
  const once = () => {
    pending ??= read().finally(() => setTimeout(() => (pending = undefined), 0));
    return pending;
  };
  const state = new Gauge({
    name: 'posthaste_customer_state',
    help: "Each customer's sending state (ok, warning, paused): 1 for the state it is in",
    labelNames: ['customer', 'state'],
    registers: [registry],
    async collect() {
      state.reset();
      for (const c of await once())
        for (const s of ['ok', 'warning', 'paused'])
          state.set({ customer: c.customer, state: s }, c.state === s ? 1 : 0);
    },
  });
  const rate = (name: string, help: string, pick: (c: Awaited<ReturnType<typeof read>>[number]) => number | null) => {
    const gauge: Gauge = new Gauge({
      name,
      help,
      labelNames: ['customer'],
      registers: [registry],
      async collect() {
        gauge.reset();
        for (const c of await once()) {
          const v = pick(c);
          if (v !== null) gauge.set({ customer: c.customer }, v);
        }
      },
    });
    return gauge;
  };
  return [
    state,
    rate(
      'posthaste_customer_bounce_rate_percent',
      "Each customer's hard bounces over recipients with an outcome in the reputation window, in percent",
      (c) => c.bounceRate,
    ),
    rate(
      'posthaste_customer_complaint_rate_percent',
      "Each customer's complaints over recipients delivered in the reputation window, in percent",
      (c) => c.complaintRate,
    ),
  ];
}
