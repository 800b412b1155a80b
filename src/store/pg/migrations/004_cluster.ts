/**
 * 4: what several nodes on one database must agree on (docs/cluster.md, "What holds for every node").
 * Version 3 is the nodes' own (their registry and claims); these tables stand apart from it.
 *
 * - leader_leases: a role one node holds at a time (the webhook fan-out), taken and renewed on
 *   the database's clock; `epoch` moves each time another node takes it, and the holder's writes
 *   are made only while its epoch is the lease's (a paused holder whose lease another took over is
 *   refused, not merely outlived).
 * - job_runs: when a scheduled job (retention) last started, on the database's clock: every node's
 *   schedule fires, the first to move `last_run` runs it.
 * - login_failures: the dashboard's failed logins, per account and per client address, so the
 *   login throttle counts every node's.
 * - inbound_usage gets a `shard`, as activity_hourly has: every message received for a domain
 *   adds to its month's count, and one row would make every node's receipts for that domain
 *   commit one after another. Reads sum the shards.
 * - destination_use: with outbound.limits_scope = "cluster", each node's connections open and
 *   messages started (this minute) per destination, so every node admits against the others'
 *   (outbound/throttle.ts); the rows of a node that stopped touching them no longer count.
 */
export const up = `
CREATE TABLE leader_leases (
  name        text PRIMARY KEY,
  holder      text NOT NULL,
  epoch       bigint NOT NULL,
  expires_at  timestamptz NOT NULL
);

CREATE TABLE job_runs (
  name      text PRIMARY KEY,
  last_run  timestamptz NOT NULL
);

CREATE TABLE login_failures (
  key  text NOT NULL,
  at   bigint NOT NULL
);
CREATE INDEX login_failures_key ON login_failures(key, at);

CREATE TABLE destination_use (
  destination  text NOT NULL,
  node         text NOT NULL,
  open         integer NOT NULL,
  minute       bigint NOT NULL,
  started      integer NOT NULL,
  seen_at      timestamptz NOT NULL,
  PRIMARY KEY (destination, node)
);
CREATE INDEX destination_use_node ON destination_use(node);

ALTER TABLE inbound_usage ADD COLUMN shard integer NOT NULL DEFAULT 0;
ALTER TABLE inbound_usage DROP CONSTRAINT inbound_usage_pkey, ADD PRIMARY KEY (domain_id, period, shard);
`;
