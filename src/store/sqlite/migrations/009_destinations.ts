/**
 * 009: destinations being slowed down because they refused us (adaptive backoff): kept so a
 * restart does not hammer a destination that asked us to wait, and so `posthaste status` and the
 * dashboard, which read the store, can say which destinations are throttled and why. A row exists
 * only while the destination is throttled.
 */
export const up = `
CREATE TABLE destination_throttles (
  destination TEXT PRIMARY KEY,
  connections INTEGER NOT NULL,
  strikes INTEGER NOT NULL,
  paused_until INTEGER NOT NULL,
  reason TEXT NOT NULL,
  since INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`;
