import { reclaimAfter } from '../lib/reclaim.js';
import { SMTPServer, type SMTPServerSession, type SMTPServerDataStream } from 'smtp-server';
import { readFileSync } from 'node:fs';
import type { Resolver } from 'node:dns/promises';
import type { Store } from '../store/store.js';
import { isStoreFull, isStoreUnavailable } from '../store/errors.js';
import type { Config } from '../config/schema.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { routeRecipient, type Route } from './route.js';
import { BareNewlineCheck } from './smuggling.js';
import { inspectInbound } from './receive.js';
import type { ReceivingDomain, StoredInbound } from '../store/model.js';
import { LARGE_MESSAGE_BYTES, type Hold, type MemoryBudget } from '../lib/memory-budget.js';
import { readReport } from '../reports/read.js';
import { returnPathDomain } from '../config/schema.js';
import type { InboundSettings, Live } from '../config/settings.js';

export interface ListenerDeps {
  store: Pick<Store, 'domains' | 'inbound'>;
  config: Config;
  /** What a reload can change here: the default inbound limits, the suppression policy, STARTTLS. */
  settings: Live<InboundSettings>;
  clock: Clock;
  log: Logger;
  resolver: Resolver;
  returnPathSecret: Buffer;
  isShuttingDown: () => boolean;
  /** Events were written: the webhook dispatcher can go. */
  onEvents?: () => void;
  /** Counts inbound results (Prometheus). */
  onResult?: (result: string) => void;
  /** limits.message_memory, shared with the API: DATA past LARGE_MESSAGE_BYTES takes its bytes from it. */
  budget: MemoryBudget;
}

type Session = SMTPServerSession & {
  /** smtp-server reads this, when set, instead of the server's disabledCommands (per connection). */
  disabledCommands?: string[];
  routes?: Array<Route & { receiving?: ReceivingDomain }>;
  /** The memory the message being received holds: released when it is done with, or when the client goes. */
  hold?: Hold;
};

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

/** The inbound SMTP listener: receiving domains, return-path bounces, the feedback address; nothing else. */
export function createListener(deps: ListenerDeps): SMTPServer {
  const { config, store, clock, log } = deps;
  const s = config.smtp;
  const rpDomain = returnPathDomain(config);
  const tls = s['tls.cert'] && s['tls.key'] ? { key: readFileSync(s['tls.key']), cert: readFileSync(s['tls.cert']) } : null;

  const server = new SMTPServer({
    name: config.server.hostname,
    banner: 'posthaste ESMTP',
    size: s.max_message_bytes,
    rejectOversized: true,
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ?? {}),
    // No PTR query per connection (it would leave the machine and stall without a resolver).
    disableReverseLookup: true,
    socketTimeout: s.socket_timeout,
    closeTimeout: 5_000,
    maxClients: s.max_clients,
    logger: false,
    onConnect(session: Session, cb) {
      if (deps.isShuttingDown()) return cb(smtpError(421, '4.3.2 Service shutting down, try again later'));
      // STARTTLS while a certificate is configured, decided per connection: a reload (SIGHUP)
      // that adds or removes smtp.tls.cert applies to the next connection.
      session.disabledCommands = deps.settings.current.starttls ? ['AUTH'] : ['AUTH', 'STARTTLS'];
      cb();
    },
    onClose(session: Session) {
      session.hold?.release();
    },
    onMailFrom(_address, session: Session, cb) {
      session.hold?.release();
      session.hold = undefined;
      session.routes = [];
      cb();
    },
    onRcptTo(address, session: Session, cb) {
      const routes = (session.routes ??= []);
      if (routes.length >= s.max_recipients) return cb(smtpError(452, '4.5.3 Too many recipients'));
      rcptRoute(address.address).then(
        (r) => {
          if ('refusal' in r) return cb(r.refusal);
          routes.push(r);
          cb();
        },
        (e: unknown) => {
          if (!isStoreUnavailable(e)) log.error({ err: e }, 'inbound recipient check failed');
          cb(smtpError(451, '4.3.0 Local error, try again later'));
        },
      );
    },
    onData(stream: SMTPServerDataStream, session: Session, cb) {
      const check = new BareNewlineCheck();
      let chunks: Buffer[] = [];
      let size = 0;
      // Past LARGE_MESSAGE_BYTES the message holds its bytes in the shared memory budget, taken as
      // they arrive; while they do not fit, reading pauses (the sender waits on TCP). Small
      // messages, nearly all mail, never touch it.
      const release = () => session.hold?.release();
      stream.pipe(check);
      check.on('data', (c: Buffer) => {
        size += c.length;
        if (size > s.max_message_bytes) return; // drained, not kept
        chunks.push(c);
        if (size <= LARGE_MESSAGE_BYTES) return;
        const hold = (session.hold ??= deps.budget.open());
        const need = size - LARGE_MESSAGE_BYTES - hold.held;
        if (hold.tryGrow(need)) return;
        check.pause();
        void hold.grow(need).then(() => check.resume());
      });
      check.on('end', () => {
        if (check.found) deps.onResult?.('bare_newline');
        if (stream.sizeExceeded) deps.onResult?.('too_big');
        if (check.found || stream.sizeExceeded) release();
        if (check.found) return cb(smtpError(550, '5.5.2 Bare <CR> or <LF> received: message refused (RFC 5321 2.3.8)'));
        if (stream.sizeExceeded) return cb(smtpError(552, '5.3.4 Message too big'));
        const raw = Buffer.concat(chunks, size);
        chunks = [];
        process(raw, session).then(
          (r) => {
            release();
            reclaimAfter(size);
            if (r.kind === 'refused') {
              deps.onResult?.('refused_content');
              return cb(smtpError(554, `5.6.0 Message refused: it has ${r.problem} (see the limits in the documentation)`));
            }
            deps.onResult?.('accepted');
            cb(null, `2.0.0 Ok: queued as ${r.id}`);
          },
          (e: unknown) => {
            release();
            if (isStoreFull(e)) return cb(smtpError(452, '4.3.1 Insufficient system storage, try again later'));
            if (isStoreUnavailable(e)) {
              log.warn({ err: e }, 'store unavailable: inbound message refused with 451');
              return cb(smtpError(451, '4.3.0 Local error: the store is unavailable, try again later'));
            }
            log.error({ err: e }, 'inbound message failed');
            cb(smtpError(451, '4.3.0 Local error, try again later'));
          },
        );
      });
    },
  });

  /**
   * Where a recipient goes (route.ts, pure), the receiving domain looked up only when the address
   * could be one, and its inbound limits checked (`inbound.limited` at most once an hour).
   */
  async function rcptRoute(raw: string): Promise<(Route & { receiving?: ReceivingDomain }) | { refusal: Error }> {
    let asked: string | undefined;
    const ctx = { returnPathDomain: rpDomain, feedbackAddress: s.feedback_address };
    let route = routeRecipient(raw, {
      ...ctx,
      isReceiving: (domain) => {
        asked = domain;
        return false;
      },
    });
    const receiving = asked !== undefined && route.kind === 'refused' ? await store.domains.receiving(asked) : undefined;
    if (receiving) route = routeRecipient(raw, { ...ctx, isReceiving: () => true });
    if (route.kind === 'refused') {
      deps.onResult?.('refused');
      return { refusal: smtpError(550, `5.7.1 <${raw}>: ${route.reason}`) };
    }
    if (route.kind !== 'receiving' || !receiving) return route;
    const now = clock.now();
    const check = await store.inbound.checkLimits(receiving, deps.settings.current.limits, now);
    if (!check.ok) {
      try {
        if (await store.inbound.recordLimited(receiving, check.limit, check.windowEndsAt, now)) deps.onEvents?.();
      } catch (e) {
        log.error({ err: e }, 'could not record inbound.limited');
      }
      deps.onResult?.('limited');
      return { refusal: smtpError(451, `4.7.1 ${receiving.name} is over its ${check.limit === 'rate' ? 'per-minute' : 'monthly'} inbound limit, try again later`) };
    }
    return { ...route, receiving };
  }

  /** Stores the message for each route, or refuses it (nothing stored) when it cannot be shown. */
  async function process(raw: Buffer, session: Session): Promise<{ kind: 'stored'; id: string } | { kind: 'refused'; problem: string }> {
    const routes = session.routes ?? [];
    const env = {
      remoteIp: session.remoteAddress,
      helo: session.hostNameAppearsAs ?? '',
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      hostname: config.server.hostname,
    };
    const receiving = routes.filter((r) => r.kind === 'receiving');
    const inspected = receiving.length ? await inspectInbound(raw, env, deps.resolver) : null;
    if (inspected && !inspected.ok) return { kind: 'refused', problem: inspected.problem };
    // A report is read for what it is, whichever of posthaste's addresses it came to: a complaint
    // sent to a return path is a complaint.
    const reportRoutes = routes.filter((r): r is Extract<Route, { kind: 'bounce' | 'feedback' }> => r.kind === 'bounce' || r.kind === 'feedback');
    const report = reportRoutes.length ? readReport(raw, deps.settings.current.suppression) : null;
    // One stored message per customer, with that customer's envelope recipients.
    const byCustomer = new Map<number, { domainId: number; rcpts: string[] }>();
    for (const r of receiving) {
      const d = r.receiving!;
      const entry = byCustomer.get(d.customerId) ?? { domainId: d.id, rcpts: [] };
      if (r.kind === 'receiving') entry.rcpts.push(r.address);
      byCustomer.set(d.customerId, entry);
    }
    const stores: Array<Omit<StoredInbound, 'raw'>> = [...byCustomer].map(([customerId, e]) => ({
      customerId,
      domainId: e.domainId,
      mailFrom: env.mailFrom,
      rcptTo: e.rcpts,
      remoteIp: env.remoteIp,
      helo: env.helo,
      ...inspected!.parsed,
    }));
    // A large message's bytes move to the writer thread rather than being copied; raw is empty afterwards.
    const ids = await store.inbound.receive({
      stores,
      report,
      reports: reportRoutes.map((r) => ({ mailFrom: env.mailFrom, rcptTo: r.address, route: r.kind })),
      raw,
      secret: deps.returnPathSecret,
      now: clock.now(),
    });
    // Only now, after the commit, does the sender hear 250.
    deps.onEvents?.();
    return { kind: 'stored', id: ids[0] ?? 'report' };
  }

  return server;
}
