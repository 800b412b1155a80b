/**
 * 020: a retry lifts its destinations' adaptive pause (docs/operations.md, "The queue"). Each
 * destination an operator retried, and when, in queue_retries: a node finding recipients of a
 * paused destination there lifts a pause set before that retry (the CLI, a process of its own,
 * cannot reach the daemon's memory; the daemon reads this at its claims).
 */
export const up = `
CREATE TABLE queue_retries (
  destination  TEXT PRIMARY KEY,
  retried_at   INTEGER NOT NULL
);
`;
