/**
 * 026: the warm-up's use (docs/delivery.md, "Warm-up"): messages counted per UTC day, source
 * address and destination against the address's cap that day. As on PostgreSQL
 * (store/pg/schema.ts version 19).
 */
export const up = `
CREATE TABLE warmup_use (
  day         TEXT NOT NULL,
  ip          TEXT NOT NULL,
  destination TEXT NOT NULL,
  used        INTEGER NOT NULL,
  PRIMARY KEY (day, ip, destination)
) WITHOUT ROWID;
`;
