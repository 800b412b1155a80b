import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { ApiKeyInfo } from '../store/keys.js';
import type { AuthCache } from '../store/auth-cache.js';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: ApiKeyInfo;
    /** SHA-256 of the raw body, for Idempotency-Key. */
    bodyHash?: Buffer;
  }
}

/** `Authorization: Token <key>`; the key is looked up on every request so revocation is immediate. */
export function authenticateRequest(auth: AuthCache, request: FastifyRequest): ApiKeyInfo {
  const header = request.headers.authorization;
  if (!header) throw new ApiError('unauthorized', 'Missing Authorization header; send "Authorization: Token <API key>".');
  const m = /^Token\s+(\S+)\s*$/i.exec(header);
  const key = m ? auth.key(m[1]!) : undefined;
  if (!key) throw new ApiError('unauthorized', 'The API key is malformed, unknown or revoked.');
  return key;
}

export function requireKey(request: FastifyRequest): ApiKeyInfo {
  if (!request.apiKey) throw new ApiError('unauthorized', 'Missing API key.');
  return request.apiKey;
}
