import type { NodeInfo, NodeView, Released } from '../model.js';
import type { NodeStore } from '../store.js';
import { type NodeRow, nodeView } from '../views.js';
import type { Db } from './db.js';

/**
 * The node on SQLite: the same rows and rules as on PostgreSQL (store/pg/nodes.ts), by the
 * machine's clock; one node at a time runs on the store (the data directory's lock), and it
 * starts `exclusive`, removing what a previous run left.
 */

/** A replay's delivery is held by the request itself (locked_by 'replay'), on no node; one older than this was abandoned. */
export const REPLAY_STALE_MS = 600_000;

function insert(db: Db, n: NodeInfo, now: number): void {
  db.run(
    'INSERT INTO cluster_nodes (id, name, pid, lease_ms, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)',
    n.id,
    n.name,
    n.pid,
    n.leaseMs,
    now,
    now,
  );
}

/** The live nodes (heartbeat within their lease at `?`) with the claims each holds; `AND …` narrows them. */
const LIVE = `SELECT n.id, n.name, n.pid, n.lease_ms, n.started_at, n.heartbeat_at,
              (SELECT COUNT(*) FROM recipient_claims c WHERE c.worker = n.id) AS recipients,
              (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.locked_by = n.id) AS webhooks
         FROM cluster_nodes n WHERE n.heartbeat_at > ? - n.lease_ms`;

/** Registers the node unless a live node has its name (that node returned); one transaction, as every write here. */
export function registerNode(db: Db, node: NodeInfo, exclusive: boolean): NodeView | null {
  return db.tx(() => {
    if (exclusive) db.run('DELETE FROM cluster_nodes');
    const now = Date.now();
    const holder = db.get<NodeRow>(`${LIVE} AND n.name = ? ORDER BY n.heartbeat_at DESC LIMIT 1`, now, node.name);
    if (holder) return nodeView(holder);
    insert(db, node, now);
    return null;
  });
}

export function heartbeat(db: Db, node: NodeInfo): boolean {
  return db.tx(() => {
    const now = Date.now();
    if (db.run('UPDATE cluster_nodes SET heartbeat_at = ? WHERE id = ?', now, node.id).changes === 1) return true;
    insert(db, node, now);
    return false;
  });
}

/**
 * The live nodes: heartbeat within the lease, and a daemon holding the data directory (`held`).
 * A row while no daemon holds it is a previous run's: a store restored from a backup holds the
 * row of the daemon running when the backup was taken, with that moment's heartbeat.
 */
export function listNodes(db: Db, held: boolean): NodeView[] {
  if (!held) return [];
  const rows = db.all<NodeRow>(`${LIVE} ORDER BY n.name, n.started_at, n.id`, Date.now());
  return rows.map(nodeView);
}

export function releaseDead(db: Db): Released {
  return db.tx(() => {
    const now = Date.now();
    const dead = db.all<{ id: string }>(
      'DELETE FROM cluster_nodes WHERE heartbeat_at <= ? - lease_ms RETURNING id',
      now,
    );
    const recipients = db.run(
      'DELETE FROM recipient_claims WHERE NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.id = recipient_claims.worker)',
    ).changes;
    const webhook_deliveries = db.run(
      `UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL
          WHERE locked_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM cluster_nodes n WHERE n.id = webhook_deliveries.locked_by)
            AND (locked_by <> 'replay' OR locked_at < ?)`,
      now - REPLAY_STALE_MS,
    ).changes;
    return { recipients, webhook_deliveries, nodes: dead.map((r) => r.id) };
  });
}

export function leave(db: Db, id: string): Omit<Released, 'nodes'> {
  return db.tx(() => {
    const recipients = db.run('DELETE FROM recipient_claims WHERE worker = ?', id).changes;
    const webhook_deliveries = db.run(
      'UPDATE webhook_deliveries SET locked_by = NULL, locked_at = NULL WHERE locked_by = ?',
      id,
    ).changes;
    db.run('DELETE FROM cluster_nodes WHERE id = ?', id);
    return { recipients, webhook_deliveries };
  });
}

export function sqliteNodes(db: Db, held: () => boolean): NodeStore {
  return {
    register: async (node, exclusive) => registerNode(db, node, exclusive),
    heartbeat: async (node) => heartbeat(db, node),
    list: async () => listNodes(db, held()),
    releaseDead: async () => releaseDead(db),
    leave: async (id) => leave(db, id),
  };
}
