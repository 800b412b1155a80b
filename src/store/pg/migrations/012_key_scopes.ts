/**
 * 012: what a key may do, as SQLite's 019 (store/sqlite/migrations/): its scopes, space-separated,
 * every scope for the keys made before; its restrictions, space-separated or null. The default
 * is dropped after: a key is made with the scopes it was given.
 */
export const up = `
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL
  DEFAULT 'send emails:read inbound:read webhooks:write suppressions:write domains:write keys:write';
ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT;
ALTER TABLE api_keys ADD COLUMN from_domains text;
ALTER TABLE api_keys ADD COLUMN allowed_cidrs text;
`;
