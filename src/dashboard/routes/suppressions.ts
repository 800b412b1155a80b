import { parseAddrSpec } from '../../domain/addresses.js';
import { addSuppression, listSuppressions, removeSuppression, searchSuppressions } from '../../store/suppressions.js';
import { suppressionsBody } from '../views/suppressions.js';
import type { Pages, Req } from '../pages.js';

/** The dashboard's suppressions page and actions. */
export function suppressionsRoutes(p: Pages): void {
  const { app, db, clock, ctx, page, back } = p;
  app.get('/suppressions', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const q = (request.query.q ?? '').trim();
    const rows = q ? searchSuppressions(db, c.customer.id, q, 100) : listSuppressions(db, c.customer.id, { limit: 100 });
    return page(reply, c, 'Suppressions', suppressionsBody(c, q, rows));
  });

  app.post('/suppressions', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const parsed = parseAddrSpec((request.form!.address ?? '').trim());
    if (!parsed.ok) return back(reply, '/suppressions', undefined, `Not an address: ${parsed.error}`);
    addSuppression(db, { customerId: c.customer.id, address: parsed.value.address, reason: 'manual', now: clock.now() });
    return back(reply, '/suppressions', `${parsed.value.address} is suppressed.`);
  });

  app.post('/suppressions/remove', async (request: Req, reply) => {
    const c = ctx(request, reply, 'suppressions');
    if (!c) return;
    const address = request.form!.address ?? '';
    if (!removeSuppression(db, c.customer.id, address)) return back(reply, '/suppressions', undefined, 'That address was not suppressed.');
    return back(reply, '/suppressions', `${address} removed from the suppression list.`);
  });
}
