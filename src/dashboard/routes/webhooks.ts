import type { FastifyReply } from 'fastify';
import { Problems } from '../../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../../domain/events.js';
import type { Endpoint } from '../../store/model.js';
import type { AttemptOutcome } from '../../webhooks/service.js';
import type { SignedIn } from '../area.js';
import { shortUrl } from '../format.js';
import { html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import type { Pages } from '../pages.js';
import { deleteEndpointBody, endpointBody, webhooksBody } from '../views/webhooks.js';

/** The dashboard's webhooks pages and actions. */
export function webhooksRoutes(p: Pages): void {
  const { store, deps, page, revealed } = p;
  const webhooks = p.area('webhooks');
  /** The endpoint of the path, if it is this customer's. */
  const endpoint = webhooks.of(
    async (c, request): Promise<Endpoint | undefined> =>
      request.params.id ? await store.webhooks.getEndpoint(request.params.id, c.customer.id) : undefined,
  );
  /** The endpoint and one of the customer's events, both of the path. */
  const endpointEvent = webhooks.of(async (c, request) => {
    const e = request.params.id ? await store.webhooks.getEndpoint(request.params.id, c.customer.id) : undefined;
    const ev = e ? await store.webhooks.eventById(request.params.event!, c.customer.id) : undefined;
    return e && ev ? { e, ev } : undefined;
  });
  /** An endpoint's page: its last 50 attempts, and the outcome of a test or replay just sent. */
  const endpointPage = async (reply: FastifyReply, c: PageContext, e: Endpoint, sent: AttemptOutcome | undefined) =>
    page(
      reply,
      c,
      'Webhook endpoint',
      html`${revealed(c)}${endpointBody(c, e, await store.webhooks.listAttempts(e.id, 50), sent)}`,
    );

  webhooks.get('/webhooks', async ({ c, reply }) =>
    page(
      reply,
      c,
      'Webhooks',
      html`${revealed(c)}${webhooksBody(c, await store.webhooks.listEndpoints(c.customer.id))}`,
    ),
  );

  webhooks.post('/webhooks', (r) => createEndpoint(p, r));

  endpoint.get('/webhooks/:id', ({ c, reply }, e) => endpointPage(reply, c, e, undefined));

  endpoint.post('/webhooks/:id/test', async ({ c, request, reply }, e) => {
    const type = (EVENT_TYPES as readonly string[]).includes(request.form!.type ?? '')
      ? (request.form!.type as EventType)
      : 'email.delivered';
    return endpointPage(reply, c, e, await deps.webhooks.test(e, type));
  });

  endpointEvent.post('/webhooks/:id/replay/:event', async ({ c, reply }, { e, ev }) =>
    endpointPage(reply, c, e, await deps.webhooks.replay(e, ev)),
  );

  endpoint.post('/webhooks/:id/state', (r, e) => changeState(p, r, e));
  endpoint.post('/webhooks/:id/edit', (r, e) => editEndpoint(p, r, e));
  endpoint.post('/webhooks/:id/rotate-secret', async ({ c, reply }, e) => {
    const rotated = await deps.webhooks.rotateSecret(e);
    if (!rotated) return p.notFound(reply);
    deps.log.info({ endpoint: e.id, user: c.session.user.email }, 'webhook secret rotated in the dashboard');
    p.reveal.put(
      c.session.id,
      {
        id: 'new-secret',
        label: `A new signing secret for ${shortUrl(e.url)}, shown only this once. Until ${new Date(rotated.previousSecretExpiresAt!).toISOString()} every delivery is signed with the old secret too, so the receiver can switch to this one meanwhile:`,
        secret: rotated.secret,
      },
      p.clock.now(),
    );
    return p.back(reply, path`/webhooks/${e.id}`);
  });

  // Deleting takes the endpoint's log with it: asked on a page of its own first, as revoking a key is.
  endpoint.get('/webhooks/:id/delete', ({ c, reply }, e) =>
    page(reply, c, 'Delete webhook endpoint', deleteEndpointBody(c, e)),
  );
  endpoint.post('/webhooks/:id/delete', async ({ c, reply }, e) => {
    await store.webhooks.deleteEndpoint(e.id);
    deps.log.info({ endpoint: e.id, user: c.session.user.email }, 'webhook endpoint deleted in the dashboard');
    return p.back(reply, '/webhooks', { notice: 'endpoint-deleted' });
  });
}

/** POST /webhooks: the form's endpoint validated and created, its signing secret revealed once; or the form's problems. */
async function createEndpoint(p: Pages, { c, request, reply }: SignedIn): Promise<unknown> {
  const { store, clock, deps, page, back, reveal, problemsText } = p;
  const f = request.form!;
  const events = (f['events[]'] ?? '').split('\n').filter(Boolean);
  const input = await deps.webhooks.validate({
    url: (f.url ?? '').trim(),
    ...(events.length ? { events } : {}),
    description: (f.description ?? '').trim(),
  });
  if (input instanceof Problems)
    return page(
      reply.code(422),
      { ...c, error: problemsText(input) },
      'Webhooks',
      webhooksBody(c, await store.webhooks.listEndpoints(c.customer.id)),
    );
  const e = await deps.webhooks.create(c.customer.id, input);
  reveal.put(
    c.session.id,
    {
      id: 'new-secret',
      label: `Endpoint ${shortUrl(e.url)} created. Its signing secret is shown only this once:`,
      secret: e.secret,
    },
    clock.now(),
  );
  return back(reply, '/webhooks');
}

/** POST /webhooks/:id/edit: url, description, events and enabled, validated as the API's PATCH validates them. */
async function editEndpoint(p: Pages, { c, request, reply }: SignedIn, e: Endpoint): Promise<unknown> {
  const { store, deps, page, back, problemsText } = p;
  const f = request.form!;
  const events = (f['events[]'] ?? '').split('\n').filter(Boolean);
  const changes = await deps.webhooks.validateChanges({
    url: (f.url ?? '').trim(),
    events: events.length ? events : null,
    description: (f.description ?? '').trim(),
    enabled: f.enabled === '1',
  });
  if (changes instanceof Problems)
    return page(
      reply.code(422),
      { ...c, error: problemsText(changes) },
      'Webhook endpoint',
      endpointBody(c, e, await store.webhooks.listAttempts(e.id, 50), undefined),
    );
  await store.webhooks.updateEndpoint(e.id, changes);
  return back(reply, path`/webhooks/${e.id}`, { notice: 'endpoint-updated' });
}

/** POST /webhooks/:id/state: the endpoint enabled or disabled, as the form's action says. */
async function changeState(p: Pages, { c, request, reply }: SignedIn, e: Endpoint): Promise<unknown> {
  const { store, back } = p;
  const action = request.form!.action;
  if (action === 'enable') await store.webhooks.enableEndpoint(e.id);
  else if (action === 'disable') await store.webhooks.disableEndpoint(e.id, `disabled by ${c.session.user.email}`);
  else return back(reply, path`/webhooks/${e.id}`);
  return back(reply, path`/webhooks/${e.id}`, {
    notice: action === 'enable' ? 'endpoint-enabled' : 'endpoint-disabled',
  });
}
