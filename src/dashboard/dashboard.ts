import type { Resolver } from 'node:dns/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/schema.js';
import type { Live, SendSettings } from '../config/settings.js';
import type { DoctorReport } from '../domain/doctor.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { MemoryBudget } from '../lib/memory-budget.js';
import type { Session } from '../store/model.js';
import type { Store } from '../store/store.js';
import type { WebhookService } from '../webhooks/service.js';
import type { Html } from './html.js';
import type { LoginThrottle } from './throttle.js';

// What the dashboard's modules share: what it is built from, its own state, the request as its
// handlers see it, and how a page is sent. server.ts builds it; pages.ts and routes/ use it.

export interface DashboardDeps {
  store: Store;
  config: Config;
  clock: Clock;
  log: Logger;
  webhooks: WebhookService;
  resolver: Resolver;
  budget: MemoryBudget;
  /** The deliverability doctor's last report on this node (daemon/doctor.ts); none: not shown. */
  doctor?: () => DoctorReport | null;
  /** The send settings a reload replaces: the default send quotas the customers page shows. */
  send: Live<SendSettings>;
  /** Called after recipients were made due (a retry, a release), so delivery looks without waiting for a poll. */
  onQueued?: () => void;
}

declare module 'fastify' {
  interface FastifyRequest {
    session?: Session & { id: string };
    form?: Record<string, string>;
  }
}

export interface Dashboard {
  app: FastifyInstance;
  secure: boolean;
  cookie: string;
  idleMs: number;
  throttle: LoginThrottle;
}

/** A request to a page or action: its path parameters and query as strings. */
export type Req = FastifyRequest<{ Params: Record<string, string>; Querystring: Record<string, string | undefined> }>;

export function sendPage(reply: FastifyReply, page: Html): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(page.text);
}
