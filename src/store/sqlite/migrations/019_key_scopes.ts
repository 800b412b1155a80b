/**
 * 019: what a key may do (docs/api.md, "Keys and scopes"): its scopes, space-separated, and its
 * restrictions (from_domains, allowed_cidrs; space-separated, null for none). Keys made before
 * keep every scope (the `full` preset). As on PostgreSQL (store/pg/schema.ts version 12).
 */
export const up = `
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL
  DEFAULT 'send emails:read inbound:read webhooks:write suppressions:write domains:write keys:write';
ALTER TABLE api_keys ADD COLUMN from_domains TEXT;
ALTER TABLE api_keys ADD COLUMN allowed_cidrs TEXT;
`;
