import { randomUUID } from 'node:crypto';
import { ClusterNode } from '../cluster/node.js';
import { ConfigError } from '../config/load.js';
import type { Store } from '../store/store.js';
import type { Ctx } from './context.js';

/**
 * Step: this process as a node (cluster/node.ts): registered with a fresh id, the claims of dead
 * nodes (and of a previous run on SQLite, which one process holds alone) released before it
 * claims anything, then its heartbeat.
 */
export async function joinCluster({ config, log }: Ctx, store: Store): Promise<ClusterNode> {
  if (config.cluster.lease < 1000) throw new ConfigError('cluster.lease', 'must be at least 1s');
  const node = new ClusterNode({
    store: store.nodes,
    info: { id: randomUUID(), name: config.server.node_name, pid: process.pid, leaseMs: config.cluster.lease },
    exclusive: store.engine === 'sqlite',
    log,
  });
  await node.start();
  return node;
}
