/**
 * 6: a destination's throttling is held by a node (its name) or by every node together (holder
 * '', outbound.limits_scope = "cluster"). With one row per destination, nodes limited each on its
 * own wrote over each other's backoff, and a node read back at its start what another had learnt.
 * Rows written before are the shared ones.
 */
export const up = `
ALTER TABLE destination_throttles ADD COLUMN holder text NOT NULL DEFAULT '';
ALTER TABLE destination_throttles DROP CONSTRAINT destination_throttles_pkey, ADD PRIMARY KEY (destination, holder);
`;
