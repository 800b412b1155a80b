import type { Test } from 'tap';
import { enforceContract } from './contract.js';

// Response bodies in tests are arbitrary JSON read field by field; `any` keeps those reads short.
// biome-ignore lint/suspicious/noExplicitAny: test bodies are read field by field; see above
export type Json = any;

export interface HttpResult {
  status: number;
  body: Json;
  headers: Headers;
}

export async function request(
  url: string,
  init: { method?: string; key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers.authorization = `Token ${init.key}`;
  let body: string | undefined = init.raw;
  if (body === undefined && init.body !== undefined) body = JSON.stringify(init.body);
  if (body !== undefined && !('content-type' in headers)) headers['content-type'] = 'application/json';
  const method = init.method ?? (body !== undefined ? 'POST' : 'GET');
  const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  // Every answer under /api/v1 is held to docs/openapi.json (test/helpers/contract.ts): a mismatch throws.
  enforceContract({
    method,
    url,
    requestBody: body,
    requestHeaders: headers,
    status: res.status,
    headers: res.headers,
    text,
  });
  let parsed: Json = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** The seed's error shape with the given code. */
export function expectError(t: Test, r: HttpResult, status: number, code: string, what = ''): void {
  t.equal(r.status, status, `${what} status ${status}`.trim());
  t.equal(r.body?.error?.code, code, `${what} code ${code}`.trim());
  t.type(r.body?.error?.message, 'string');
  t.type(r.body?.error?.details, 'object');
}
