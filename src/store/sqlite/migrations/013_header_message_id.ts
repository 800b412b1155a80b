/**
 * 013: the id in a message's Message-ID field when it is not posthaste's own (an application's
 * mailer wrote it, over SMTP submission or in the API's `headers`), bare (no angle brackets);
 * NULL when the field carries posthaste's id. A message is found by either id
 * (domain/message-search.ts), within its customer's messages: the index is partial, most
 * messages carry posthaste's id. store/pg/schema.ts version 7 is the same change.
 */
export const up = `
ALTER TABLE messages ADD COLUMN header_message_id TEXT;
CREATE INDEX messages_header_message_id ON messages(customer_id, header_message_id) WHERE header_message_id IS NOT NULL;
`;
