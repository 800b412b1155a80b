/**
 * 017: send quotas, as SQLite's 024 (store/sqlite/migrations/): a customer's own limits and the
 * recipients accepted per window, with a `shard` (the writing connection's backend pid, modulo
 * 16) as activity_hourly has, so counting adds no row every accept of a customer waits for.
 *
 * posthaste_send_quota judges and counts the sends of one ACCEPT_MANY (store/pg/accept-many.ts),
 * in its statement and transaction. A customer with a quota in effect is judged under a
 * transaction-scoped advisory lock taken in customer order (no deadlock between groups); the
 * function is VOLATILE, so each of its statements reads with a snapshot taken after the lock was
 * granted: it sees every count committed by the transaction that held the lock before, and the
 * quota holds exactly across connections and nodes. Customers without a quota take no lock and
 * are only counted, set-wise. Answers the sends refused, with each window's limit and use.
 */
export const up = `
ALTER TABLE customers ADD COLUMN send_per_minute bigint, ADD COLUMN send_per_day bigint, ADD COLUMN send_per_month bigint;
CREATE TABLE send_usage (
  customer_id  bigint NOT NULL,
  sandbox      integer NOT NULL,
  period       text NOT NULL,
  shard        integer NOT NULL,
  count        bigint NOT NULL,
  PRIMARY KEY (customer_id, sandbox, period, shard)
);

-- The sends of one statement with the limits in effect for each (a sandbox key's: the defaults) and their windows.
CREATE FUNCTION posthaste_quota_sends(ns int[], cs bigint[], sbs int[], cnts int[], dm bigint[], dd bigint[], dmo bigint[], pm text[], pd text[], pmo text[])
RETURNS TABLE (n int, c bigint, sb int, cnt int, l bigint[], p text[], limited boolean) LANGUAGE sql STABLE AS $$
  SELECT s.n, s.c, s.sb, s.cnt, x.l, ARRAY[s.pm, s.pd, s.pmo], x.l[1] > 0 OR x.l[2] > 0 OR x.l[3] > 0
    FROM unnest(ns, cs, sbs, cnts, dm, dd, dmo, pm, pd, pmo) AS s(n, c, sb, cnt, dm, dd, dmo, pm, pd, pmo)
    JOIN customers k ON k.id = s.c
    CROSS JOIN LATERAL (SELECT CASE WHEN s.sb = 1 THEN ARRAY[s.dm, s.dd, s.dmo]
      ELSE ARRAY[coalesce(k.send_per_minute, s.dm), coalesce(k.send_per_day, s.dd), coalesce(k.send_per_month, s.dmo)] END AS l) x
$$;

CREATE FUNCTION posthaste_send_quota(ns int[], cs bigint[], sbs int[], cnts int[], dm bigint[], dd bigint[], dmo bigint[], pm text[], pd text[], pmo text[])
RETURNS TABLE (n int, lim bigint[], used bigint[]) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  r record;
  u bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('posthaste send quota ' || q.c, 0))
     FROM (SELECT DISTINCT x.c FROM posthaste_quota_sends(ns, cs, sbs, cnts, dm, dd, dmo, pm, pd, pmo) x WHERE x.limited ORDER BY x.c) q;
  FOR r IN SELECT * FROM posthaste_quota_sends(ns, cs, sbs, cnts, dm, dd, dmo, pm, pd, pmo) x WHERE x.limited ORDER BY x.n LOOP
    SELECT ARRAY[coalesce(sum(s.count) FILTER (WHERE s.period = r.p[1]), 0)::bigint,
                 coalesce(sum(s.count) FILTER (WHERE s.period = r.p[2]), 0)::bigint,
                 coalesce(sum(s.count) FILTER (WHERE s.period = r.p[3]), 0)::bigint]
      INTO u FROM send_usage s WHERE s.customer_id = r.c AND s.sandbox = r.sb AND s.period = ANY(r.p);
    IF (r.l[1] > 0 AND u[1] + r.cnt > r.l[1]) OR (r.l[2] > 0 AND u[2] + r.cnt > r.l[2]) OR (r.l[3] > 0 AND u[3] + r.cnt > r.l[3]) THEN
      n := r.n; lim := r.l; used := u;
      RETURN NEXT;
    ELSE
      INSERT INTO send_usage (customer_id, sandbox, period, shard, count)
      SELECT r.c, r.sb, w, pg_backend_pid() % 16, r.cnt FROM unnest(r.p) AS w
      ON CONFLICT (customer_id, sandbox, period, shard) DO UPDATE SET count = send_usage.count + excluded.count;
    END IF;
  END LOOP;
  INSERT INTO send_usage (customer_id, sandbox, period, shard, count)
  SELECT x.c, x.sb, w.w, pg_backend_pid() % 16, sum(x.cnt)
    FROM posthaste_quota_sends(ns, cs, sbs, cnts, dm, dd, dmo, pm, pd, pmo) x CROSS JOIN LATERAL unnest(x.p) AS w(w)
   WHERE NOT x.limited
   GROUP BY 1, 2, 3
  ON CONFLICT (customer_id, sandbox, period, shard) DO UPDATE SET count = send_usage.count + excluded.count;
END $$;
`;
