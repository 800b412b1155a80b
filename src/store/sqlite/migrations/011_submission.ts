/**
 * 011: a message's stored request says what it is. `json`: the send request's body as the API
 * received it, composed into MIME at the first delivery attempt (every row before this one).
 * `mime`: a message submitted over SMTP (submission/), stored as the client wrote it with the
 * headers the listener added or removed, and signed as it is at delivery; its size is known at
 * acceptance. store/pg/schema.ts version 2 is the same change.
 */
export const up = `
ALTER TABLE messages ADD COLUMN request_format TEXT NOT NULL DEFAULT 'json' CHECK (request_format IN ('json', 'mime'));
`;
