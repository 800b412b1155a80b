/**
 * 019: the warm-up's use, as SQLite's 026 (store/sqlite/migrations/): messages counted per UTC
 * day, source address and destination against the address's cap that day, one row each, which
 * a node reserving from it holds locked until its transaction ends.
 */
export const up = `
CREATE TABLE warmup_use (
  day text NOT NULL,
  ip text NOT NULL,
  destination text NOT NULL,
  used bigint NOT NULL,
  PRIMARY KEY (day, ip, destination)
);
`;
