import type { NodeInfo, NodeView } from '../model.js';
import type { NodeStore } from '../store.js';
import { type NodeRow, nodeView } from '../views.js';
import type { PgDb, Q } from './db.js';

/**
 * Nodes on PostgreSQL: every time is the database's clock (milliseconds), the one clock all nodes
 * share, so a node's lease is judged the same by every other.
 *
 * Releasing is one transaction in this order: the dead nodes' rows are deleted first (a
 * heartbeat committed meanwhile is seen again by the DELETE, and its node is not dead), then the
 * claims whose worker has no row left are freed. A claim is made only by a registered node, after
 * its row committed, so a claim this transaction sees has its node's row seen too, unless that
 * node is gone. A heartbeat that finds its row gone says so (its claims may have been freed).
 */

const NOW = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/** A replay's delivery is held by the request itself (locked_by 'replay'), on no node; one older than this was abandoned. */
export const REPLAY_STALE_MS = 600_000;

const FREE_CLAIMS =
  'DELETE FROM recipient_claims c WHERE NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.id = c.worker)';
const FREE_DELIVERIES = `UPDATE webhook_deliveries d SET locked_by = NULL, locked_at = NULL
  WHERE d.locked_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.id = d.locked_by)
    AND (d.locked_by <> 'replay' OR d.locked_at < ${NOW} - ${REPLAY_STALE_MS})`;

async function insert(q: Q, n: NodeInfo): Promise<void> {
  await q.run(
    `INSERT INTO cluster_nodes (id, name, pid, lease_ms, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, ${NOW}, ${NOW})`,
    [n.id, n.name, n.pid, n.leaseMs],
  );
}

/** The live nodes (heartbeat within their lease) with the claims each holds; `AND …` narrows them. */
const LIVE = `SELECT n.id, n.name, n.pid, n.lease_ms, n.started_at, n.heartbeat_at,
                (SELECT count(*) FROM recipient_claims c WHERE c.worker = n.id)::int AS recipients,
                (SELECT count(*) FROM webhook_deliveries d WHERE d.locked_by = n.id)::int AS webhooks
           FROM cluster_nodes n WHERE n.heartbeat_at > ${NOW} - n.lease_ms`;

/**
 * Registers the node unless a live node has its name. Nodes of one name take a lock of that
 * name's for the transaction before they look, so the second of two starting at once waits for
 * the first's commit and then sees its row (read committed: each statement sees what committed
 * before it began).
 */
async function register(q: Q, node: NodeInfo, exclusive: boolean): Promise<NodeView | null> {
  if (exclusive) await q.run('DELETE FROM cluster_nodes');
  await q.run("SELECT pg_advisory_xact_lock(hashtextextended('posthaste node name ' || $1, 0))", [node.name]);
  const holder = await q.rows<NodeRow>(`${LIVE} AND n.name = $1 ORDER BY n.heartbeat_at DESC LIMIT 1`, [node.name]);
  if (holder[0]) return nodeView(holder[0]);
  await insert(q, node);
  return null;
}

export function pgNodes(db: PgDb): NodeStore {
  return {
    register: (node, exclusive) => db.tx((q) => register(q, node, exclusive)),
    heartbeat: async (node) => {
      if ((await db.run(`UPDATE cluster_nodes SET heartbeat_at = ${NOW} WHERE id = $1`, [node.id])) === 1) return true;
      await db.run(
        `INSERT INTO cluster_nodes (id, name, pid, lease_ms, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, ${NOW}, ${NOW}) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`,
        [node.id, node.name, node.pid, node.leaseMs],
      );
      return false;
    },
    list: async () => {
      const rows = await db.rows<NodeRow>(`${LIVE} ORDER BY n.name, n.started_at, n.id`);
      return rows.map(nodeView);
    },
    releaseDead: () =>
      db.tx(async (q) => {
        const dead = await q.rows<{ id: string }>(
          `DELETE FROM cluster_nodes WHERE heartbeat_at <= ${NOW} - lease_ms RETURNING id`,
        );
        const recipients = await q.run(FREE_CLAIMS);
        const webhook_deliveries = await q.run(FREE_DELIVERIES);
        return { recipients, webhook_deliveries, nodes: dead.map((r) => r.id) };
      }),
    leave: (id) =>
      db.tx(async (q) => {
        const recipients = await q.run('DELETE FROM recipient_claims WHERE worker = $1', [id]);
        const webhook_deliveries = await q.run(
          'UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE locked_by = $1',
          [id],
        );
        await q.run('DELETE FROM cluster_nodes WHERE id = $1', [id]);
        return { recipients, webhook_deliveries };
      }),
  };
}
