import { type KeyGrant, parseGrant, SCOPES } from '../../domain/key-scopes.js';
import type { KeyKind } from '../../store/model.js';
import { html } from '../html.js';
import type { Pages } from '../pages.js';
import { keysBody, revokeKeyBody } from '../views/keys.js';

const words = (text: string | undefined): string[] | null => {
  const list = (text ?? '').split(/[\s,]+/).filter((w) => w !== '');
  return list.length ? list : null;
};

/** The form's scopes (a preset, or the scopes ticked; none chosen is refused) and restrictions, by domain/key-scopes.ts; or what is wrong. */
function grantOf(f: Record<string, string>): KeyGrant | string {
  const choice = f.scopes;
  if (choice !== 'full' && choice !== 'send' && choice !== 'custom')
    return 'Choose the scopes of the key: full, send only, or the scopes you tick.';
  const scopes = choice === 'custom' ? SCOPES.filter((s) => f[`scope:${s}`] === 'on') : [choice];
  const parsed = parseGrant({ scopes, from_domains: words(f.from_domains), allowed_cidrs: words(f.allowed_cidrs) });
  if ('problems' in parsed)
    return Object.entries(parsed.problems)
      .map(([field, p]) => `${field}: ${p}`)
      .join('; ');
  return parsed.grant;
}

/** The dashboard's api keys pages and actions. */
export function keysRoutes(p: Pages): void {
  const { store, clock, deps, page, back, revealed, reveal } = p;
  const keys = p.area('keys');
  /** The API key of the path, if it is this customer's. */
  const key = keys.of((c, request) => store.keys.get(request.params.id!, c.customer.id));
  keys.get('/keys', async ({ c, reply }) =>
    page(reply, c, 'API keys', html`${revealed(c)}${keysBody(c, await store.keys.list(c.customer.id))}`),
  );

  keys.post('/keys', async ({ c, request, reply }) => {
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
    const grant = grantOf(f);
    if (typeof grant === 'string')
      return page(
        reply.code(422),
        { ...c, error: grant },
        'API keys',
        keysBody(c, await store.keys.list(c.customer.id)),
      );
    const name = (f.name ?? '').trim().slice(0, 100);
    const k = await store.keys.create({ customerId: c.customer.id, kind, name, grant, now: clock.now() });
    deps.log.info(
      { key: k.id, customer: c.customer.name, user: c.session.user.email },
      'API key created in the dashboard',
    );
    // The key is never stored: it is held for this session's next page only, then forgotten.
    reveal.put(
      c.session.id,
      { id: 'new-key', label: `Key ${k.id} created. Copy it now: it is shown only this once.`, secret: k.key },
      clock.now(),
    );
    return back(reply, '/keys');
  });

  key.get('/keys/:id/revoke', ({ c, reply }, k) => page(reply, c, 'Revoke API key', revokeKeyBody(c, k)));

  key.post('/keys/:id/revoke', async ({ c, reply }, k) => {
    await store.keys.revoke(k.id, clock.now());
    deps.log.info({ key: k.id, user: c.session.user.email }, 'API key revoked in the dashboard');
    return back(reply, '/keys', { notice: 'key-revoked' });
  });
}
