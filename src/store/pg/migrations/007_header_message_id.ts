/**
 * 7: the id in a message's Message-ID field when it is not posthaste's own, bare; NULL when the
 * field carries posthaste's id (the SQLite engine's migration 013). Found by it within the
 * customer's messages, through a partial index.
 */
export const up = `
ALTER TABLE messages ADD COLUMN header_message_id text;
CREATE INDEX messages_header_message_id ON messages (customer_id, header_message_id) WHERE header_message_id IS NOT NULL;
`;
