/**
 * 012: the node that runs on this store, as on PostgreSQL (store/pg/schema.ts version 3, where
 * several nodes share one database): its id, name, pid, lease, start and last heartbeat. On
 * SQLite there is one node at a time (the data directory's lock); a node that starts removes the
 * rows a previous run left, and their claims are released. The claims' worker is the node's id.
 */
export const up = `
CREATE TABLE cluster_nodes (
  id            TEXT PRIMARY KEY,
  name          TEXT NOT NULL,
  pid           INTEGER NOT NULL,
  lease_ms      INTEGER NOT NULL,
  started_at    INTEGER NOT NULL,
  heartbeat_at  INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_locked ON webhook_deliveries(locked_by) WHERE locked_by IS NOT NULL;
`;
