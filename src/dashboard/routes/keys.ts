import { html } from '../html.js';
import type { KeyKind } from '../../store/model.js';
import { keysBody, revokeKeyBody } from '../views/keys.js';
import type { Req } from '../dashboard.js';
import type { Pages } from '../pages.js';

/** The dashboard's api keys pages and actions. */
export function keysRoutes(p: Pages): void {
  const { app, store, clock, deps, ctx, page, back, notFound, revealed, reveal } = p;
  app.get('/keys', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'keys');
    if (!c) return;
    return page(reply, c, 'API keys', html`${revealed(c)}${keysBody(c, await store.keys.list(c.customer.id))}`);
  });

  app.post('/keys', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'keys');
    if (!c) return;
    const f = request.form!;
    // No default kind: a key that sends real mail, or one that sends nothing, is chosen, never assumed.
    if (f.kind !== 'sandbox' && f.kind !== 'production')
      return page(
        reply.code(422),
        { ...c, error: 'Choose the kind of key: sandbox (nothing is sent) or production (sends real mail).' },
        'API keys',
        keysBody(c, await store.keys.list(c.customer.id)),
      );
    const kind: KeyKind = f.kind;
    const name = (f.name ?? '').trim().slice(0, 100);
    const k = await store.keys.create({ customerId: c.customer.id, kind, name, now: clock.now() });
    deps.log.info({ key: k.id, customer: c.customer.name, user: c.session.user.email }, 'API key created in the dashboard');
    // The key is never stored: it is held for this session's next page only, then forgotten.
    reveal.put(c.session.id, { id: 'new-key', label: `Key ${k.id} created. Copy it now: it is shown only this once.`, secret: k.key }, clock.now());
    return back(reply, '/keys');
  });

  app.get('/keys/:id/revoke', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'keys');
    if (!c) return;
    const k = await store.keys.get(request.params.id!, c.customer.id);
    if (!k) return notFound(reply);
    return page(reply, c, 'Revoke API key', revokeKeyBody(c, k));
  });

  app.post('/keys/:id/revoke', async (request: Req, reply) => {
    const c = await ctx(request, reply, 'keys');
    if (!c) return;
    const k = await store.keys.get(request.params.id!, c.customer.id);
    if (!k) return notFound(reply);
    await store.keys.revoke(k.id, clock.now());
    deps.log.info({ key: k.id, user: c.session.user.email }, 'API key revoked in the dashboard');
    return back(reply, '/keys', { notice: 'key-revoked' });
  });
}
