import { type Customer, DEFAULT_CUSTOMER } from '../model.js';
import type { CustomerStore } from '../store.js';
import type { PgDb } from './db.js';
import { pgCustomerPools } from './pools.js';
import { pgQuotas } from './quotas.js';
import { unsubscribeDefaults } from './unsubscribe.js';

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
