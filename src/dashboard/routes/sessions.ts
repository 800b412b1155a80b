import type { FastifyReply, FastifyRequest } from 'fastify';
import { reputationSettings } from '../../config/settings.js';
import { DUMMY_HASH, verifyPassword } from '../../lib/password.js';
import { warmupReport } from '../../outbound/warmup.js';
import { reputationOf } from '../../send/reputation.js';
import type { User } from '../../store/model.js';
import { sendPage } from '../dashboard.js';
import { plural } from '../format.js';
import { html } from '../html.js';
import type { Pages } from '../pages.js';
import { reputationBody } from '../views/customers.js';
import { doctorSummary } from '../views/doctor.js';
import { loginPage } from '../views/login.js';
import { overviewBody } from '../views/overview.js';

/** The dashboard's sessions, overview pages and actions. */
export function sessionRoutes(p: Pages): void {
  const { app, store, dash, page, back } = p;
  app.get<{ Querystring: { next?: string } }>('/login', async (request, reply) => {
    if (request.session) return reply.redirect('/', 303);
    // No banner from the URL: the login page says only what a login attempt answered.
    return sendPage(reply, loginPage(request.query.next, undefined));
  });

  app.post('/login', (request, reply) => logIn(p, request, reply));

  app.post('/logout', async (request, reply) => {
    if (request.session) await store.users.endSession(request.session.id);
    reply.header(
      'set-cookie',
      `${dash.cookie}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${dash.secure ? '; Secure' : ''}`,
    );
    return reply.redirect('/login', 303);
  });

  /** The customer an admin chose to be shown; for anyone else, none. */
  const chosen = p
    .area('')
    .of(async (c, request) =>
      c.session.user.role === 'admin' ? await store.customers.find(request.form!.customer ?? '') : undefined,
    );
  chosen.post('/customer', async ({ c, reply }, target) => {
    await store.users.showCustomer(c.session.id, target.id);
    return back(reply, '/', { notice: 'customer-shown' });
  });

  p.area('overview').get('/', async ({ c, reply }) => {
    const admin = c.session.user.role === 'admin';
    const nodes = admin ? await store.nodes.list() : undefined;
    const held = admin ? await store.queue.heldDestinations() : undefined;
    const { pools, warmup_schedule } = p.config.outbound;
    const addresses = admin ? await warmupReport(store, pools, warmup_schedule, c.now) : undefined;
    const settings = reputationSettings(p.config);
    const reputation = reputationBody(c, await reputationOf(store, c.customer.id, settings, c.now), settings, admin);
    const body = html`${reputation}${overviewBody(await store.admin.overview(c.customer.id, c.now), c.now, nodes, held, addresses)}`;
    if (!p.deps.doctor) return page(reply, c, 'Overview', body);
    // The node's own checks for an administrator; the checks of the customer's domains for all.
    const report = p.deps.doctor();
    const names = new Set((await store.domains.list(c.customer.id)).map((d) => d.name));
    const checks = (report?.checks ?? []).filter((k) => (k.domain === null ? admin : names.has(k.domain)));
    return page(reply, c, 'Overview', html`${body}${doctorSummary(report, checks, c.now)}`);
  });
}

/** POST /login: refused while the address or client is throttled, or for a wrong password; else signed in and sent on. */
async function logIn(p: Pages, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const { store, clock, deps, dash } = p;
  const f = request.form!;
  const email = (f.email ?? '').trim().toLowerCase().slice(0, 320);
  const address = request.ip;
  const now = clock.now();
  const wait = await dash.throttle.wait(email, address, now);
  if (wait > 0) {
    const seconds = Math.ceil(wait / 1000);
    return sendPage(
      reply.code(429).header('retry-after', String(seconds)),
      loginPage(f.next, `Too many failed attempts; try again in ${plural(Math.ceil(seconds / 60), 'minute')}.`),
    );
  }
  const user = await store.users.find(email);
  // A password is checked even for an unknown account, so the answer takes as long either way.
  const ok = await verifyPassword(f.password ?? '', user?.password_hash ?? DUMMY_HASH);
  if (!user || !ok) {
    await dash.throttle.fail(email, address, now);
    return sendPage(reply.code(401), loginPage(f.next, 'Wrong e-mail address or password.'));
  }
  await dash.throttle.succeed(email);
  await startSession(p, request, reply, user, now);
  deps.log.info({ user: user.email }, 'dashboard login');
  const next = typeof f.next === 'string' && /^\/(?!\/)[^\\]*$/.test(f.next) ? f.next : '/';
  return reply.redirect(next, 303);
}

/** A new session for the user, showing their customer (an admin: the default one), and its cookie on the reply. */
async function startSession(
  p: Pages,
  request: FastifyRequest,
  reply: FastifyReply,
  user: User,
  now: number,
): Promise<void> {
  const { store, dash } = p;
  const shown =
    user.customer_id ?? (await store.customers.find('default'))?.id ?? (await store.customers.list())[0]!.id;
  // A new session id at every login: a session fixed before login is never the one used after.
  if (request.session) await store.users.endSession(request.session.id);
  const s = await store.users.createSession(user, shown, now);
  reply.header(
    'set-cookie',
    `${dash.cookie}=${s.id}; Path=/; HttpOnly; SameSite=Strict${dash.secure ? '; Secure' : ''}`,
  );
}
