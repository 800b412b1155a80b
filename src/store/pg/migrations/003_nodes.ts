/**
 * 3: nodes. Each daemon on the database is a row: a fresh id (the worker its claims carry), its
 * name, pid and lease, when it started and its last heartbeat, both by the database's clock
 * (milliseconds). A node whose heartbeat is older than its lease is dead; any node releases the
 * claims of workers that have no row left (store/pg/nodes.ts). The index finds a node's recipient
 * claims (webhook_deliveries_locked, its deliveries).
 */
export const up = `
CREATE TABLE cluster_nodes (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  pid           integer NOT NULL,
  lease_ms      integer NOT NULL,
  started_at    bigint NOT NULL,
  heartbeat_at  bigint NOT NULL
);
CREATE INDEX recipient_claims_worker ON recipient_claims(worker);
`;
