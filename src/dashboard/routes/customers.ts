import { addCustomer, CUSTOMER_NAME, findCustomer, listCustomers } from '../../store/customers.js';
import { customersBody } from '../views/customers.js';
import type { Pages, Req } from '../pages.js';

/** The dashboard's customers (admins) pages and actions. */
export function customersRoutes(p: Pages): void {
  const { app, db, clock, ctx, page, back, notFound } = p;
  app.get('/customers', async (request: Req, reply) => {
    const c = ctx(request, reply, 'customers');
    if (!c) return;
    if (c.session.user.role !== 'admin') return notFound(reply);
    return page(reply, c, 'Customers', customersBody(c, listCustomers(db)));
  });

  app.post('/customers', async (request: Req, reply) => {
    const c = ctx(request, reply, 'customers');
    if (!c) return;
    if (c.session.user.role !== 'admin') return notFound(reply);
    const name = (request.form!.name ?? '').trim();
    if (!CUSTOMER_NAME.test(name)) return back(reply, '/customers', undefined, 'A customer name is 1-63 letters, digits, "_", "." or "-".');
    if (findCustomer(db, name)) return back(reply, '/customers', undefined, `Customer ${name} exists already.`);
    addCustomer(db, name, clock.now());
    return back(reply, '/customers', `Customer ${name} created.`);
  });
}
