/**
 * 013: a retry lifts its destinations' adaptive pause on every node, as SQLite's migration 017:
 * each destination an operator retried, and when (docs/operations.md, "The queue").
 */
export const up = `
CREATE TABLE queue_retries (
  destination  text PRIMARY KEY,
  retried_at   bigint NOT NULL
);
`;
