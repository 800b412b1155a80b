import type { CustomerStore } from '../store.js';
import { type CustomerPoolsRow, customerPoolsMap, customerPoolsView } from '../views.js';
import type { PgDb } from './db.js';

/** A customer's pools of source addresses on PostgreSQL, as on SQLite (store/sqlite/customers.ts). */
export function pgCustomerPools(db: PgDb): Pick<CustomerStore, 'pools' | 'setPools'> {
  return {
    pools: async () =>
      customerPoolsMap(
        await db.rows<CustomerPoolsRow>(
          "SELECT id, default_pool, allowed_pools FROM customers WHERE default_pool IS NOT NULL OR allowed_pools <> '[]'",
        ),
      ),
    // A change of pools moves the auth epoch, so every node's send path reads them again (store/auth-cache.ts).
    setPools: async (id, change) => {
      const row = await db.row<CustomerPoolsRow>(
        `WITH changed AS (
           UPDATE customers SET default_pool = CASE WHEN $2 THEN $3 ELSE default_pool END,
             allowed_pools = coalesce($4, allowed_pools) WHERE id = $1 RETURNING id, default_pool, allowed_pools
         ), epoch AS (
           UPDATE settings SET value = (value::bigint + 1)::text WHERE name = 'auth_epoch' AND EXISTS (SELECT 1 FROM changed)
         )
         SELECT * FROM changed`,
        [
          id,
          change.defaultPool !== undefined,
          change.defaultPool ?? null,
          change.allowedPools ? JSON.stringify(change.allowedPools) : null,
        ],
      );
      if (!row) throw new Error(`no customer with id ${id}`);
      return customerPoolsView(row);
    },
  };
}
