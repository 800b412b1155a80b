/**
 * 014: the operator's queue (docs/operations.md, "The queue"). A recipient held by an operator
 * keeps its state and gets `held_at` and no due time (store/queue-ops.ts); a held destination is a
 * row of held_destinations; each recipient domain's destination, as delivery last looked it up,
 * is kept in domain_destinations so a selection by destination finds the recipients waiting for it.
 */
export const up = `
ALTER TABLE recipients ADD COLUMN held_at INTEGER;
CREATE TABLE held_destinations (
  destination  TEXT PRIMARY KEY,
  held_at      INTEGER NOT NULL
);
CREATE TABLE domain_destinations (
  domain       TEXT PRIMARY KEY,
  destination  TEXT NOT NULL,
  updated_at   INTEGER NOT NULL
);
CREATE INDEX domain_destinations_destination ON domain_destinations(destination);
`;
