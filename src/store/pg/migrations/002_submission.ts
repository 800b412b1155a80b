/**
 * 2: a message's stored request says what it is (the SQLite engine's migration 011): `json`, the
 * send request's body, composed at the first delivery attempt; `mime`, a message submitted over
 * SMTP, signed as it is at delivery.
 */
export const up = `
ALTER TABLE messages ADD COLUMN request_format text NOT NULL DEFAULT 'json' CHECK (request_format IN ('json', 'mime'));
`;
