import type { FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';
import type { AuthCache } from '../store/auth-cache.js';
import type { ApiKeyInfo } from '../store/model.js';
import './request-fields.js';

/**
 * `Authorization: Token <key>` or `Authorization: Bearer <key>` (the scheme is case-insensitive,
 * RFC 9110 11.1; most HTTP clients send Bearer). Checked (the default), the cache is validated against the store
 * first, so a revocation is refused on the next request; unchecked is for the send path, whose
 * commit re-verifies the key (send-gate.ts).
 */
export async function authenticateRequest(
  auth: AuthCache,
  request: FastifyRequest,
  checked = true,
): Promise<ApiKeyInfo> {
  const header = request.headers.authorization;
  if (!header)
    throw new ApiError(
      'unauthorized',
      'Missing Authorization header; send "Authorization: Bearer <API key>" (or "Token <API key>").',
    );
  const m = /^(?:Token|Bearer)[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!m)
    throw new ApiError('unauthorized', 'The Authorization header is not "Bearer <API key>" or "Token <API key>".');
  const key = await auth.key(m[1]!, checked);
  if (!key) throw unauthorized();
  return key;
}

export function unauthorized(): ApiError {
  return new ApiError('unauthorized', 'The API key is malformed, unknown or revoked.');
}

export function requireKey(request: FastifyRequest): ApiKeyInfo {
  if (!request.apiKey) throw new ApiError('unauthorized', 'Missing API key.');
  return request.apiKey;
}
