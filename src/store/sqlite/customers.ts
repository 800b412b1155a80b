import { type Customer, DEFAULT_CUSTOMER } from '../model.js';
import type { Db } from './db.js';

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
