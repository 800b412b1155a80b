/**
 * 023: a webhook endpoint's secret rotation (docs/api.md, "Webhook endpoints"): the secret it
 * replaced and until when deliveries are still signed with it beside the new one. As on
 * PostgreSQL (store/pg/schema.ts version 16).
 */
export const up = `
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_expires_at INTEGER;
`;
