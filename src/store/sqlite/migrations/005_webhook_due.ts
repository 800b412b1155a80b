/**
 * 005: the webhook dispatcher's due index leaves out claimed rows. A claimed delivery stays
 * `pending` (with `locked_by` set) while its attempt is in flight, and the dispatcher holds up to
 * its quota of them per endpoint, so each claim scanned past all of those in the index to find the
 * unclaimed ones (about 2 ms per claim at 1,000 held; bench webhooks). Rows the fan-out creates
 * already claimed now never enter the index.
 */
export const up = `
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(endpoint_id, next_attempt_at) WHERE state = 'pending' AND locked_by IS NULL;
`;
