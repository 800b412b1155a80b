import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Req } from './dashboard.js';
import type { PageContext } from './layout.js';

// The preconditions of the signed-in pages, stated once per area instead of at the top of each
// handler: a route of an area runs only for a signed-in user (else it answers with a redirect to
// the login page), and a route of one object only when the object is the customer's (else 404).

/** A signed-in request: the page's context, the request, and the reply to answer it with. */
export interface SignedIn {
  c: PageContext;
  request: Req;
  reply: FastifyReply;
}

/** Finds the object a route is about among the shown customer's; undefined when it is missing or another customer's. */
export type Loader<T extends object> = (c: PageContext, request: Req) => Promise<T | undefined>;

/** The routes of a part of the dashboard; each handler starts with what its preconditions gave it. */
export interface Routes<H> {
  get(url: string, handler: H): void;
  post(url: string, handler: H): void;
}

/** The routes of one section of the dashboard (its navigation entry). */
export interface Area extends Routes<(r: SignedIn) => unknown> {
  /** Routes of one object: `load` runs first, and a missing object is answered with the not-found page. */
  of<T extends object>(load: Loader<T>): Routes<(r: SignedIn, it: T) => unknown>;
}

export interface AreaRules {
  /** Only admins see it: anyone else is answered with the not-found page. */
  admins?: boolean;
}

export interface AreaParts {
  app: FastifyInstance;
  /** The signed-in context, or a redirect to the login page (then undefined). */
  ctx: (request: Req, reply: FastifyReply, section: string) => Promise<PageContext | undefined>;
  notFound: (reply: FastifyReply) => unknown;
}

/** Declares the routes of the area `section`: its handlers run signed in, with the page context made for that section. */
export function area({ app, ctx, notFound }: AreaParts, section: string, rules: AreaRules = {}): Area {
  const signedIn =
    (handler: (r: SignedIn) => unknown) =>
    async (request: Req, reply: FastifyReply): Promise<unknown> => {
      const c = await ctx(request, reply, section);
      if (!c) return;
      if (rules.admins && c.session.user.role !== 'admin') return notFound(reply);
      return handler({ c, request, reply });
    };
  const routes = <H>(wrap: (handler: H) => (request: Req, reply: FastifyReply) => Promise<unknown>): Routes<H> => ({
    get: (url, handler) => void app.get(url, wrap(handler)),
    post: (url, handler) => void app.post(url, wrap(handler)),
  });
  return {
    ...routes(signedIn),
    of: <T extends object>(load: Loader<T>) =>
      routes((handler: (r: SignedIn, it: T) => unknown) =>
        signedIn(async (r) => {
          const it = await load(r.c, r.request);
          if (!it) return notFound(r.reply);
          return handler(r, it);
        }),
      ),
  };
}
