/**
 * 010: a key's last send is written at most once a minute. Written by every send, the key's row
 * made every send with one key wait for the one before it to commit on PostgreSQL, whose engine
 * does the same (store/pg/schema.ts); the two engines keep one rule.
 */
export const up = `
DROP TRIGGER api_keys_last_used;
CREATE TRIGGER api_keys_last_used AFTER INSERT ON messages WHEN NEW.api_key_id IS NOT NULL BEGIN
  UPDATE api_keys SET last_used_at = NEW.created_at
   WHERE id = NEW.api_key_id AND (last_used_at IS NULL OR last_used_at < NEW.created_at - 60000);
END;
`;
