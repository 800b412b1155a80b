/**
 * 015: a webhook delivery's attempts found by the delivery, as PostgreSQL's schema has had from
 * its start: a message's page shows each of its webhook deliveries' last answer, which without it
 * scanned the endpoint's whole log.
 */
export const up = `
CREATE INDEX webhook_attempts_delivery ON webhook_attempts(delivery_id);
`;
