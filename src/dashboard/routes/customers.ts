import { CUSTOMER_NAME } from '../../store/model.js';
import type { Pages } from '../pages.js';
import { customersBody } from '../views/customers.js';

/** The dashboard's customers (admins) pages and actions. */
export function customersRoutes(p: Pages): void {
  const { store, clock, page, back } = p;
  const customers = p.area('customers', { admins: true });
  customers.get('/customers', async ({ c, reply }) =>
    page(reply, c, 'Customers', customersBody(c, await store.customers.list(), await store.customers.pools())),
  );

  customers.post('/customers', async ({ c, request, reply }) => {
    const name = (request.form!.name ?? '').trim();
    if (!CUSTOMER_NAME.test(name)) return back(reply, '/customers', { error: 'customer-name' });
    if (await store.customers.find(name))
      return page(
        reply.code(422),
        { ...c, error: `Customer ${name} exists already.` },
        'Customers',
        customersBody(c, await store.customers.list(), await store.customers.pools()),
      );
    await store.customers.add(name, clock.now());
    return back(reply, '/customers', { notice: 'customer-created' });
  });
}
