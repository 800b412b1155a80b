import { reputationSettings } from '../../config/settings.js';
import { quotaStatus } from '../../domain/quotas.js';
import { pauseCustomer, ReputationError, resumeCustomer } from '../../send/reputation.js';
import { CUSTOMER_NAME } from '../../store/model.js';
import type { Pages } from '../pages.js';
import { customersBody } from '../views/customers.js';

/** The dashboard's customers (admins) pages and actions. */
export function customersRoutes(p: Pages): void {
  const { store, clock, page, back } = p;
  const customers = p.area('customers', { admins: true });
  /** Each customer with its send quotas' use in the current windows (domain/quotas.ts). */
  const withQuotas = async (now: number) =>
    Promise.all(
      (await store.customers.list()).map(async (x) => {
        const own = (await store.customers.quotas(x.id))!;
        const use = await store.customers.quotaUse(x.id, now);
        return {
          ...x,
          quotas: quotaStatus([own.perMinute, own.perDay, own.perMonth], p.deps.send.current.quotas, use),
        };
      }),
    );
  customers.get('/customers', async ({ c, reply }) =>
    page(reply, c, 'Customers', customersBody(c, await withQuotas(clock.now()), await store.customers.pools())),
  );

  customers.post('/customers', async ({ c, request, reply }) => {
    const name = (request.form!.name ?? '').trim();
    if (!CUSTOMER_NAME.test(name)) return back(reply, '/customers', { error: 'customer-name' });
    if (await store.customers.find(name))
      return page(
        reply.code(422),
        { ...c, error: `Customer ${name} exists already.` },
        'Customers',
        customersBody(c, await withQuotas(clock.now()), await store.customers.pools()),
      );
    await store.customers.add(name, clock.now());
    return back(reply, '/customers', { notice: 'customer-created' });
  });

  // Pause and resume (send/reputation.ts): the customer named by the form, as the CLI's commands.
  for (const action of ['pause', 'resume'] as const)
    customers.post(`/customers/${action}`, async ({ request, reply }) => {
      const target = await store.customers.find((request.form!.customer ?? '').trim());
      if (!target) return p.notFound(reply);
      try {
        const settings = reputationSettings(p.config);
        if (action === 'pause') await pauseCustomer(store, target, request.form!.reason ?? '', settings, clock.now());
        else await resumeCustomer(store, target, settings, clock.now());
      } catch (e) {
        if (!(e instanceof ReputationError)) throw e;
        const why = action === 'pause' && /reason/.test(e.message) ? 'pause-reason' : 'reputation-state';
        return back(reply, '/', { error: why });
      }
      return back(reply, '/', { notice: action === 'pause' ? 'customer-paused' : 'customer-resumed' });
    });
}
