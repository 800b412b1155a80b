import { parseAddrSpec } from '../../domain/addresses.js';
import { SUPPRESSING_SIMULATOR_ADDRESSES } from '../simulator.js';
import { suppressionsBody } from '../views/suppressions.js';
import type { Req } from '../dashboard.js';
import type { Pages } from '../pages.js';

/** The dashboard's suppressions page and actions. */
export function suppressionsRoutes(p: Pages): void {
  const { app, store, clock, ctx, page, back } = p;
  app.get('/suppressions', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'suppressions');
    if (!c) return;
    const q = (request.query.q ?? '').trim();
    const rows = q ? await store.suppressions.search(c.customer.id, q, 100) : await store.suppressions.list(c.customer.id, { limit: 100 });
    return page(reply, c, 'Suppressions', suppressionsBody(c, q, rows, await store.suppressions.simulated(c.customer.id, SUPPRESSING_SIMULATOR_ADDRESSES, 20)));
  });

  app.post('/suppressions', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'suppressions');
    if (!c) return;
    const parsed = parseAddrSpec((request.form!.address ?? '').trim());
    if (!parsed.ok)
      return page(
        reply.code(422),
        { ...c, error: `Not an address: ${parsed.error}` },
        'Suppressions',
        suppressionsBody(c, '', await store.suppressions.list(c.customer.id, { limit: 100 }), await store.suppressions.simulated(c.customer.id, SUPPRESSING_SIMULATOR_ADDRESSES, 20)),
      );
    await store.suppressions.add({ customerId: c.customer.id, address: parsed.value.address, reason: 'manual', now: clock.now() });
    return back(reply, '/suppressions', { notice: 'suppression-added' });
  });

  app.post('/suppressions/remove', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'suppressions');
    if (!c) return;
    const address = request.form!.address ?? '';
    if (!(await store.suppressions.remove(c.customer.id, address))) return back(reply, '/suppressions', { error: 'not-suppressed' });
    return back(reply, '/suppressions', { notice: 'suppression-removed' });
  });
}
