/**
 * 8: the operator's queue (docs/operations.md, "The queue"), as SQLite's migration 014: a held
 * recipient's `held_at`, the held destinations (shared by every node), and each recipient
 * domain's destination as a node last looked it up.
 */
export const up = `
ALTER TABLE recipients ADD COLUMN held_at bigint;
CREATE TABLE held_destinations (
  destination  text PRIMARY KEY,
  held_at      bigint NOT NULL
);
CREATE TABLE domain_destinations (
  domain       text PRIMARY KEY,
  destination  text NOT NULL,
  updated_at   bigint NOT NULL
);
CREATE INDEX domain_destinations_destination ON domain_destinations(destination);
`;
