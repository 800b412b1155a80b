/**
 * 016: a webhook endpoint's secret rotation, as SQLite's 023 (store/sqlite/migrations/): the
 * secret it replaced and until when deliveries are still signed with it.
 */
export const up = `
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret text;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at bigint;
`;
