import { type Customer, DEFAULT_CUSTOMER } from '../model.js';
import type { CustomerStore } from '../store.js';
import { type CustomerPoolsRow, customerPoolsMap, customerPoolsView } from '../views.js';
import type { PgDb } from './db.js';
import { pgQuotas } from './quotas.js';

/** Customers on PostgreSQL: one statement each, as on SQLite. */
export function pgCustomers(db: PgDb): CustomerStore {
  return {
    ensureDefault: async (now) =>
      void (await db.run('INSERT INTO customers (name, created_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
        DEFAULT_CUSTOMER,
        now,
      ])),
    add: async (name, now) =>
      (await db.row<Customer>(
        'INSERT INTO customers (name, created_at) VALUES ($1, $2) RETURNING id, name, created_at',
        [name, now],
      ))!,
    find: (name) => db.row<Customer>('SELECT id, name, created_at FROM customers WHERE name = $1', [name]),
    byId: (id) => db.row<Customer>('SELECT id, name, created_at FROM customers WHERE id = $1', [id]),
    list: () => db.rows<Customer>('SELECT id, name, created_at FROM customers ORDER BY id'),
    counts: async (id) =>
      (await db.row<{ keys: number; domains: number; messages: number }>(
        `SELECT (SELECT count(*) FROM api_keys WHERE customer_id = $1)::int AS keys, (SELECT count(*) FROM domains WHERE customer_id = $1)::int AS domains,
                (SELECT count(*) FROM messages WHERE customer_id = $1)::int AS messages`,
        [id],
      ))!,
    ...pgQuotas(db),
    ...pgCustomerPools(db),
    ...unsubscribeDefaults(db),
  };
}

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

/** A customer's default for the List-Unsubscribe fields (`customers set --unsubscribe`). */
export function unsubscribeDefaults(db: PgDb): Pick<CustomerStore, 'unsubscribeDefault' | 'setUnsubscribeDefault'> {
  return {
    unsubscribeDefault: async (id) =>
      (await db.row<{ unsubscribe: number }>('SELECT unsubscribe FROM customers WHERE id = $1', [id]))?.unsubscribe ===
      1,
    setUnsubscribeDefault: async (id, on) =>
      void (await db.run('UPDATE customers SET unsubscribe = $2 WHERE id = $1', [id, on ? 1 : 0])),
  };
}
