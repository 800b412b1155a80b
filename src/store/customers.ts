import type { Db } from './db.js';

export interface Customer {
  id: number;
  name: string;
  created_at: number;
}

export const DEFAULT_CUSTOMER = 'default';
/** A customer's name: 1-63 letters, digits, "_", "." or "-", starting with a letter or digit. */
export const CUSTOMER_NAME = /^[a-z0-9][a-z0-9_.-]{0,62}$/i;

export function ensureDefaultCustomer(db: Db, now: number): void {
  db.run(db.q.insertInto('customers').values({ name: DEFAULT_CUSTOMER, created_at: now }).onConflict((oc) => oc.column('name').doNothing()));
}

export function addCustomer(db: Db, name: string, now: number): Customer {
  return db.get(db.q.insertInto('customers').values({ name, created_at: now }).returningAll())!;
}

export function findCustomer(db: Db, name: string): Customer | undefined {
  return db.get(db.q.selectFrom('customers').selectAll().where('name', '=', name));
}

export function customerById(db: Db, id: number): Customer | undefined {
  return db.get(db.q.selectFrom('customers').selectAll().where('id', '=', id));
}

export function listCustomers(db: Db): Customer[] {
  return db.all(db.q.selectFrom('customers').selectAll().orderBy('id'));
}

export function customerCounts(db: Db, id: number): { keys: number; domains: number; messages: number } {
  const count = (table: 'api_keys' | 'domains' | 'messages') =>
    Number(db.get(db.q.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('customer_id', '=', id))?.n ?? 0);
  return { keys: count('api_keys'), domains: count('domains'), messages: count('messages') };
}
