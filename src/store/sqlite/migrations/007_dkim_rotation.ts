/**
 * 007: DKIM key rotation. A domain may hold a next key (made by `domains rotate-dkim`, published
 * under its own selector, not yet signing) and remembers the selector it signed with before the
 * last switch, and when that was, so the old record's removal can be timed.
 */
export const up = `
ALTER TABLE domains ADD COLUMN next_dkim_selector TEXT;
ALTER TABLE domains ADD COLUMN next_dkim_private_key TEXT;
ALTER TABLE domains ADD COLUMN next_dkim_public_key TEXT;
ALTER TABLE domains ADD COLUMN previous_dkim_selector TEXT;
ALTER TABLE domains ADD COLUMN previous_dkim_public_key TEXT;
ALTER TABLE domains ADD COLUMN dkim_switched_at INTEGER;
`;
