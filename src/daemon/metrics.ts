import type { ClusterNode } from '../cluster/node.js';
import type { DoctorReport } from '../domain/doctor.js';
import { Metrics } from '../lib/metrics.js';
import { reputationOf } from '../send/reputation.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';
import { startReputationSettings } from './reputation.js';

/** Step: the metrics (lib/metrics.ts), the store's gauges read at each scrape. */
export function buildMetrics(
  { config, clock }: Ctx,
  store: Store,
  node: ClusterNode,
  doctor: () => DoctorReport | null,
): Metrics {
  return new Metrics(
    {
      recipients: () => store.admin.countsByState('recipients'),
      webhookDeliveries: () => store.admin.countsByState('webhook_deliveries'),
      oldestQueued: () => store.admin.oldestQueuedAt(clock.now()),
      now: () => clock.now(),
      customers: async () => {
        const settings = startReputationSettings({ config });
        const out = [];
        for (const c of await store.customers.list()) {
          const { standing, rates } = await reputationOf(store, c.id, settings, clock.now());
          out.push({
            customer: c.name,
            state: standing.state,
            bounceRate: rates.bounce_rate,
            complaintRate: rates.complaint_rate,
          });
        }
        return out;
      },
      doctor,
      // On a shared store the first live node, as status lists them, serves the store's gauges (docs/cluster.md).
      ...(store.engine === 'postgres'
        ? {
            servesStoreGauges: async () => {
              const live = await store.nodes.list();
              return live.length === 0 || live[0]!.id === node.id;
            },
          }
        : {}),
    },
    { processMetrics: config.metrics.enabled, node: { name: config.server.node_name, id: node.id } },
  );
}
