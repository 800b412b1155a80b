import type { ApiKeyInfo } from '../store/model.js';

/** What the API's hooks and body parser add to fastify's request, for the routes to read. */
declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: ApiKeyInfo;
    /** SHA-256 of the raw body, for Idempotency-Key. */
    bodyHash?: Buffer;
    /**
     * The JSON body as received, for the send path to store: the text that was parsed when it is
     * small (a string crosses to the writer thread as a copy of its characters, cheaper than a
     * slice of Node's shared 8 KiB pool), the bytes themselves when it is large (moved to the
     * writer thread, not copied).
     */
    rawText?: string;
    rawBody?: Buffer;
    /** apiKey came from the cache without reading auth_epoch (the send path; see send-gate.ts). */
    keyUnchecked?: boolean;
  }
}
