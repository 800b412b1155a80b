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
    setPools: async (id, change) => {
      const row = await db.row<CustomerPoolsRow>(
        `UPDATE customers SET default_pool = CASE WHEN $2 THEN $3 ELSE default_pool END,
           allowed_pools = coalesce($4, allowed_pools) WHERE id = $1 RETURNING id, default_pool, allowed_pools`,
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
