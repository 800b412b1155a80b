import { parseAddrSpec } from '../../domain/addresses.js';
import type { Pages } from '../pages.js';
import { SUPPRESSING_SIMULATOR_ADDRESSES } from '../simulator.js';
import { suppressionsBody } from '../views/suppressions.js';

/** The dashboard's suppressions page and actions. */
export function suppressionsRoutes(p: Pages): void {
  const { store, clock, page, back } = p;
  const suppressions = p.area('suppressions');
  suppressions.get('/suppressions', async ({ c, request, reply }) => {
    const q = (request.query.q ?? '').trim();
    const rows = q
      ? await store.suppressions.search(c.customer.id, q, 100)
      : await store.suppressions.list(c.customer.id, { limit: 100 });
    return page(
      reply,
      c,
      'Suppressions',
      suppressionsBody(
        c,
        q,
        rows,
        await store.suppressions.simulated(c.customer.id, SUPPRESSING_SIMULATOR_ADDRESSES, 20),
      ),
    );
  });

  suppressions.post('/suppressions', async ({ c, request, reply }) => {
    const parsed = parseAddrSpec((request.form!.address ?? '').trim());
    if (!parsed.ok)
      return page(
        reply.code(422),
        { ...c, error: `Not an address: ${parsed.error}` },
        'Suppressions',
        suppressionsBody(
          c,
          '',
          await store.suppressions.list(c.customer.id, { limit: 100 }),
          await store.suppressions.simulated(c.customer.id, SUPPRESSING_SIMULATOR_ADDRESSES, 20),
        ),
      );
    await store.suppressions.add({
      customerId: c.customer.id,
      address: parsed.value.address,
      reason: 'manual',
      now: clock.now(),
    });
    return back(reply, '/suppressions', { notice: 'suppression-added' });
  });

  suppressions.post('/suppressions/remove', async ({ c, request, reply }) => {
    const address = request.form!.address ?? '';
    if (!(await store.suppressions.remove(c.customer.id, address)))
      return back(reply, '/suppressions', { error: 'not-suppressed' });
    return back(reply, '/suppressions', { notice: 'suppression-removed' });
  });
}
