import type { FastifyInstance } from 'fastify';
import { PUBLIC_ROUTE } from '../authorization.js';
import { OPENAPI_PATH, openApiText } from '../openapi/document.js';

export const OPENAPI_ROUTE = OPENAPI_PATH;

/** GET /api/v1/openapi.json: the OpenAPI 3.1 document (docs/openapi.json), built once, on the first request. No key needed. */
export function openApiRoutes(app: FastifyInstance): void {
  let text: string | undefined;
  app.get(OPENAPI_ROUTE, PUBLIC_ROUTE, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send((text ??= openApiText())),
  );
}
