/**
 * 015: a customer's reputation state, as SQLite's 022 (store/sqlite/migrations/): ok, warning or
 * paused, why and by whom, and where its counters start; a change of `paused_at` moves the auth
 * epoch.
 */
export const up = `
CREATE TABLE customer_reputation (
  customer_id      bigint PRIMARY KEY REFERENCES customers(id),
  state            text NOT NULL CHECK (state IN ('ok', 'warning', 'paused')),
  paused_at        bigint,
  reason           text,
  paused_by        text CHECK (paused_by IN ('reputation', 'administrator')),
  changed_at       bigint NOT NULL,
  since            bigint NOT NULL DEFAULT 0,
  base_outcome     bigint NOT NULL DEFAULT 0,
  base_hard        bigint NOT NULL DEFAULT 0,
  base_expired     bigint NOT NULL DEFAULT 0,
  base_delivered   bigint NOT NULL DEFAULT 0,
  base_complained  bigint NOT NULL DEFAULT 0,
  CHECK ((state = 'paused') = (paused_at IS NOT NULL))
);
CREATE FUNCTION posthaste_reputation_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' AND NEW.paused_at IS NOT NULL OR TG_OP = 'UPDATE' AND (OLD.paused_at IS NULL) <> (NEW.paused_at IS NULL) THEN
    UPDATE settings SET value = (value::bigint + 1)::text WHERE name = 'auth_epoch';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER customer_reputation_epoch AFTER INSERT OR UPDATE OF paused_at ON customer_reputation
  FOR EACH ROW EXECUTE FUNCTION posthaste_reputation_epoch();
`;
