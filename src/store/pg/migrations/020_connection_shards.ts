/**
 * 020: the counters' shard is the writing connection's own slot, unique across the cluster, where
 * it was its backend pid modulo 16. Several nodes of ten connections each put two or more
 * connections on most of 16 shards (and pids of different nodes collide whatever the modulus), so
 * their transactions waited for each other's commits on one counter row. Each pooled connection
 * takes a free slot of 64 when it opens (a session advisory lock, store/pg/db.ts: SHARD_SLOT) and
 * says it in `posthaste.shard`; posthaste_shard() answers it, or the pid modulo 64 for a
 * connection that has none (all taken, or a session opened otherwise). Reads sum every shard, so
 * the rows written under 16 stay counted.
 */
export const up = `
CREATE FUNCTION posthaste_shard() RETURNS integer LANGUAGE sql STABLE AS $$
  SELECT coalesce(nullif(current_setting('posthaste.shard', true), '')::integer, pg_backend_pid() % 64)
$$;

CREATE OR REPLACE FUNCTION posthaste_activity_accepted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, shard, count)
  SELECT customer_id, created_at / 3600000, 'accepted', posthaste_shard(), count(*) FROM new_rows GROUP BY 1, 2
  ON CONFLICT (customer_id, hour, kind, shard) DO UPDATE SET count = activity_hourly.count + excluded.count;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION posthaste_activity_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_hourly (customer_id, hour, kind, shard, count)
  SELECT customer_id, created_at / 3600000, substr(type, 7), posthaste_shard(), count(*) FROM new_rows
   WHERE type IN ('email.delivered', 'email.deferred', 'email.bounced', 'email.complained') GROUP BY 1, 2, 3
  ON CONFLICT (customer_id, hour, kind, shard) DO UPDATE SET count = activity_hourly.count + excluded.count;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION posthaste_send_quota(ns int[], cs bigint[], sbs int[], cnts int[], dm bigint[], dd bigint[], dmo bigint[], pm text[], pd text[], pmo text[])
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
      SELECT r.c, r.sb, w, posthaste_shard(), r.cnt FROM unnest(r.p) AS w
      ON CONFLICT (customer_id, sandbox, period, shard) DO UPDATE SET count = send_usage.count + excluded.count;
    END IF;
  END LOOP;
  INSERT INTO send_usage (customer_id, sandbox, period, shard, count)
  SELECT x.c, x.sb, w.w, posthaste_shard(), sum(x.cnt)
    FROM posthaste_quota_sends(ns, cs, sbs, cnts, dm, dd, dmo, pm, pd, pmo) x CROSS JOIN LATERAL unnest(x.p) AS w(w)
   WHERE NOT x.limited
   GROUP BY 1, 2, 3
  ON CONFLICT (customer_id, sandbox, period, shard) DO UPDATE SET count = send_usage.count + excluded.count;
END $$;
`;
