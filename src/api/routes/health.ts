import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';

/** 200 when the store takes a write and every listener is up; 503 otherwise. No key needed. */
export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/healthz', async (_request, reply) => {
    let storeOk = true;
    try {
      await deps.store.admin.touchHealth(deps.clock.now());
    } catch {
      storeOk = false;
    }
    const listeners = deps.lifecycle.listenersUp();
    const ok = storeOk && listeners && !deps.lifecycle.shuttingDown;
    return reply.code(ok ? 200 : 503).send({
      status: ok ? 'ok' : 'unavailable',
      store: storeOk ? 'ok' : 'error',
      listeners: listeners ? 'up' : 'down',
    });
  });
}
