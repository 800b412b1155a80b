import { type Customer, type CustomerPools, type CustomerPoolsChange, DEFAULT_CUSTOMER } from '../model.js';
import type { CustomerStore } from '../store.js';
import { type CustomerPoolsRow, customerPoolsMap, customerPoolsView } from '../views.js';
import type { Db } from './db.js';
import { customerQuotas, quotaUse, setCustomerQuotas } from './quotas.js';

export function ensureDefaultCustomer(db: Db, now: number): void {
  db.run('INSERT INTO customers (name, created_at) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', DEFAULT_CUSTOMER, now);
}

export function addCustomer(db: Db, name: string, now: number): Customer {
  return db.get<Customer>(
    'INSERT INTO customers (name, created_at) VALUES (?, ?) RETURNING id, name, created_at',
    name,
    now,
  )!;
}

export function findCustomer(db: Db, name: string): Customer | undefined {
  return db.get<Customer>('SELECT id, name, created_at FROM customers WHERE name = ?', name);
}

export function customerById(db: Db, id: number): Customer | undefined {
  return db.get<Customer>('SELECT id, name, created_at FROM customers WHERE id = ?', id);
}

export function listCustomers(db: Db): Customer[] {
  return db.all<Customer>('SELECT id, name, created_at FROM customers ORDER BY id');
}

export function customerCounts(db: Db, id: number): { keys: number; domains: number; messages: number } {
  const count = (table: 'api_keys' | 'domains' | 'messages') =>
    db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE customer_id = ?`, id)!.n;
  return { keys: count('api_keys'), domains: count('domains'), messages: count('messages') };
}

export function unsubscribeDefault(db: Db, id: number): boolean {
  return db.get<{ unsubscribe: number }>('SELECT unsubscribe FROM customers WHERE id = ?', id)?.unsubscribe === 1;
}

export function setUnsubscribeDefault(db: Db, id: number, on: boolean): void {
  db.run('UPDATE customers SET unsubscribe = ? WHERE id = ?', on ? 1 : 0, id);
}

const POOL_ROWS =
  "SELECT id, default_pool, allowed_pools FROM customers WHERE default_pool IS NOT NULL OR allowed_pools <> '[]'";

export function customerPools(db: Db): Map<number, CustomerPools> {
  return customerPoolsMap(db.all<CustomerPoolsRow>(POOL_ROWS));
}

/** Sets a customer's pools and moves the auth epoch, so every node's send path reads them again (store/auth-cache.ts). */
export function setCustomerPools(db: Db, id: number, change: CustomerPoolsChange): CustomerPools {
  return db.tx(() => {
    const pools = writeCustomerPools(db, id, change);
    db.run("UPDATE settings SET value = value + 1 WHERE name = 'auth_epoch'");
    return pools;
  });
}

function writeCustomerPools(db: Db, id: number, change: CustomerPoolsChange): CustomerPools {
  const row = db.get<CustomerPoolsRow>(
    `UPDATE customers SET default_pool = CASE WHEN @setDefault THEN @default ELSE default_pool END,
       allowed_pools = coalesce(@allowed, allowed_pools) WHERE id = @id RETURNING id, default_pool, allowed_pools`,
    {
      setDefault: change.defaultPool !== undefined ? 1 : 0,
      default: change.defaultPool ?? null,
      allowed: change.allowedPools ? JSON.stringify(change.allowedPools) : null,
      id,
    },
  );
  if (!row) throw new Error(`no customer with id ${id}`);
  return customerPoolsView(row);
}

export function sqliteCustomers(db: Db): CustomerStore {
  return {
    ensureDefault: async (now) => ensureDefaultCustomer(db, now),
    add: async (name, now) => addCustomer(db, name, now),
    find: async (name) => findCustomer(db, name),
    byId: async (id) => customerById(db, id),
    list: async () => listCustomers(db),
    counts: async (id) => customerCounts(db, id),
    unsubscribeDefault: async (id) => unsubscribeDefault(db, id),
    setUnsubscribeDefault: async (id, on) => setUnsubscribeDefault(db, id, on),
    pools: async () => customerPools(db),
    setPools: async (id, change) => setCustomerPools(db, id, change),
    quotas: async (id) => customerQuotas(db, id),
    setQuotas: async (id, q) => setCustomerQuotas(db, id, q),
    quotaUse: async (id, now) => quotaUse(db, id, now),
  };
}
