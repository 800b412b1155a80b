// The API's contract, docs/openapi.json, held against what the tests see: every response under
// /api/v1 (and /healthz) that request() receives is checked against the document's response for
// its method, path template and status, and every request the server accepted (2xx) against the
// request the document describes. A mismatch is a test failure (http.ts throws it, and the process
// exits non-zero if it was swallowed).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

export const DOCUMENT_FILE = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));
const DOC_ID = 'https://posthaste.invalid/openapi.json';

type Obj = { [key: string]: unknown };
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** One request and its answer, as request() saw them. */
export interface Exchange {
  method: string;
  url: string;
  /** The request body as sent: the text, or undefined when there was none. */
  requestBody?: string;
  requestHeaders: Record<string, string>;
  status: number;
  headers: Headers;
  /** The response text. */
  text: string;
}

interface Route {
  template: string;
  pattern: RegExp;
  names: string[];
  item: Obj;
}

/** JSON pointer of a path into the document, written as a URI fragment. */
const pointer = (parts: string[]) =>
  '#/' + parts.map((p) => encodeURIComponent(p.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/**
 * Response objects in the document list every field the server sends today but leave the door
 * open to more (a client should ignore fields it does not know). Here they are closed: an object
 * schema with `properties` and no word on other properties gets `additionalProperties: false`,
 * so a field the server adds without documenting it fails the tests. Request bodies are left as
 * written (the server ignores unknown fields where the document says so).
 */
export function closeObjects(node: unknown, inRequest = false): void {
  if (Array.isArray(node)) {
    for (const n of node) closeObjects(n, inRequest);
    return;
  }
  if (!isObj(node)) return;
  const type = node.type;
  const isObjectType = type === 'object' || (Array.isArray(type) && type.includes('object'));
  if (
    !inRequest &&
    isObjectType &&
    isObj(node.properties) &&
    !('additionalProperties' in node) &&
    !('unevaluatedProperties' in node)
  )
    node.additionalProperties = false;
  for (const [key, value] of Object.entries(node)) closeObjects(value, inRequest || key === 'requestBody');
}

export class Contract {
  readonly doc: Obj;
  private readonly ajv: Ajv2020;
  private readonly routes: Route[];
  private readonly validators = new Map<string, ValidateFunction>();

  /**
   * `closed`: objects closed as closeObjects says. `thorough`: every error, and each schema
   * checked against the 2020-12 meta-schema, for the unit tests of the document; request()'s
   * check stops at the first error and leaves that out, whose compile time the in-process
   * daemons of timing-sensitive tests would feel.
   */
  constructor(doc: Obj, { closed = true, thorough = false } = {}) {
    this.doc = structuredClone(doc);
    if (closed) closeObjects(this.doc);
    this.ajv = new Ajv2020({
      strict: true,
      allowUnionTypes: true,
      strictRequired: false,
      allErrors: thorough,
      validateSchema: thorough,
    });
    formats.default(this.ajv);
    // The document's own fields, not JSON Schema keywords: refs point into them.
    this.ajv.addVocabulary([
      'openapi',
      'info',
      'tags',
      'security',
      'paths',
      'webhooks',
      'components',
      'servers',
      'jsonSchemaDialect',
    ]);
    this.ajv.addSchema({ ...this.doc, $id: DOC_ID });
    this.routes = Object.entries(this.doc.paths as Obj)
      .map(([template, item]) => {
        const names: string[] = [];
        const source = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{([^}]+)\}/g, (_m, name: string) => {
          names.push(name);
          return '([^/]+)';
        });
        return { template, pattern: new RegExp(`^${source}$`), names, item: item as Obj };
      })
      // Literal segments win over templates (OpenAPI 3.1, Paths Object): /emails/batch before /emails/{message_id}.
      .sort((a, b) => a.names.length - b.names.length);
  }

  static fromFile(file = DOCUMENT_FILE): Contract {
    return new Contract(JSON.parse(readFileSync(file, 'utf8')) as Obj);
  }

  /** The validator of the schema at `parts` (a path into the document), compiled once. */
  validator(parts: string[]): ValidateFunction {
    const ref = DOC_ID + pointer(parts);
    let v = this.validators.get(ref);
    if (!v) this.validators.set(ref, (v = this.ajv.compile({ $ref: ref })));
    return v;
  }

  private problems(v: ValidateFunction, data: unknown, what: string): string[] {
    if (v(data)) return [];
    const root = what.split(' ')[0];
    const said = (v.errors ?? []).slice(0, 8).map((e) => {
      const p = e.params as { additionalProperty?: string; allowedValues?: unknown[] };
      const extra =
        p.additionalProperty !== undefined
          ? ` (${p.additionalProperty})`
          : p.allowedValues
            ? ` (${JSON.stringify(p.allowedValues)})`
            : '';
      return `${root}${e.instancePath} ${e.message}${extra}`;
    });
    return [`${what}: ${said.join(', ')}`];
  }

  /** Follows a `$ref` to components; returns the object and its path in the document. */
  private resolve(node: Obj, at: string[]): [Obj, string[]] {
    const ref = node.$ref;
    if (typeof ref !== 'string') return [node, at];
    const parts = ref.slice(2).split('/');
    let target: unknown = this.doc;
    for (const p of parts) target = (target as Obj)[p];
    return [target as Obj, parts];
  }

  /** Whether the document speaks for this URL. */
  covers(url: string): boolean {
    const path = new URL(url).pathname;
    return path.startsWith('/api/v1/') || path === '/healthz';
  }

  /** The mismatches between one exchange and the document; empty when it holds. */
  check(x: Exchange): string[] {
    const url = new URL(x.url);
    const method = x.method.toLowerCase();
    const route = this.routes.find((r) => r.pattern.test(url.pathname));
    const opMethod = method === 'head' ? 'get' : method;
    const operation = route?.item[opMethod];
    const where = `${x.method} ${route?.template ?? url.pathname}`;
    const out: string[] = [];
    const json = parseJson(x.text);
    const mediaType = (x.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();

    if (!route || !isObj(operation)) {
      // No such route: fastify answers 404 (after the key: 401), or 503 while shutting down.
      if (![401, 404, 503].includes(x.status))
        return [`${where}: no such operation in the document, yet the server answered ${x.status}`];
      if (method === 'head') return [];
      if (!json.ok) return [`${where} ${x.status}: the body is not JSON: ${x.text.slice(0, 200)}`];
      return this.problems(
        this.validator(['components', 'schemas', x.status === 503 ? 'Unavailable' : 'Error']),
        json.value,
        `body of ${where} ${x.status}`,
      );
    }
    const opPath = ['paths', route.template, opMethod];
    const responses = operation.responses as Obj;
    const key = [String(x.status), `${String(x.status)[0]}XX`, 'default'].find((k) => k in responses);
    if (!key)
      return [
        `${where}: status ${x.status} is not among the documented ones (${Object.keys(responses).join(', ')}); body ${x.text.slice(0, 300)}`,
      ];
    const [response, responsePath] = this.resolve(responses[key] as Obj, [...opPath, 'responses', key]);

    for (const [name, h] of Object.entries((response.headers as Obj | undefined) ?? {})) {
      const value = x.headers.get(name);
      if (value === null) {
        if ((h as Obj).required === true) out.push(`${where} ${x.status}: the required header ${name} is missing`);
      } else
        out.push(
          ...this.problems(
            this.validator([...responsePath, 'headers', name, 'schema']),
            value,
            `header ${name} of ${where} ${x.status}`,
          ),
        );
    }
    const content = response.content as Obj | undefined;
    if (method !== 'head') {
      if (!content) {
        if (x.text !== '')
          out.push(`${where} ${x.status}: the document gives no body, the server sent ${x.text.slice(0, 200)}`);
      } else if (!(mediaType in content)) {
        out.push(
          `${where} ${x.status}: content-type ${mediaType || '(none)'} is not documented (${Object.keys(content).join(', ')})`,
        );
      } else if (mediaType === 'application/json') {
        if (!json.ok) out.push(`${where} ${x.status}: the body is not JSON: ${x.text.slice(0, 200)}`);
        else
          out.push(
            ...this.problems(
              this.validator([...responsePath, 'content', 'application/json', 'schema']),
              json.value,
              `body of ${where} ${x.status}`,
            ),
          );
      }
    }
    if (x.status >= 200 && x.status < 300)
      out.push(...this.checkRequest(x, url, route, operation, opPath, where, json.ok ? json.value : undefined));
    return out;
  }

  /** A request the server accepted must be one the document describes. */
  private checkRequest(
    x: Exchange,
    url: URL,
    route: Route,
    operation: Obj,
    opPath: string[],
    where: string,
    answer: unknown,
  ): string[] {
    const out: string[] = [];
    const params = [
      ...((route.item.parameters as Obj[] | undefined) ?? []),
      ...((operation.parameters as Obj[] | undefined) ?? []),
    ].map((p) => this.resolve(p, [])[0]);
    const values = route.pattern.exec(url.pathname)!.slice(1);
    route.names.forEach((name, i) => {
      const p = params.find((q) => q.in === 'path' && q.name === name);
      if (!p) out.push(`${where}: path parameter ${name} is not documented`);
      else
        out.push(
          ...this.problems(
            this.ajv.compile(p.schema as Obj),
            decodeURIComponent(values[i]!),
            `path parameter ${name} of ${where}`,
          ),
        );
    });
    for (const [name, value] of url.searchParams) {
      const p = params.find((q) => q.in === 'query' && q.name === name);
      if (!p) out.push(`${where}: the server accepted the query parameter ${name}, which the document does not name`);
      else
        out.push(
          ...this.problems(
            this.ajv.compile(p.schema as Obj),
            coerce(p.schema as Obj, value),
            `query parameter ${name} of ${where}`,
          ),
        );
    }
    for (const p of params.filter((q) => q.in === 'header')) {
      const value = Object.entries(x.requestHeaders).find(
        ([k]) => k.toLowerCase() === String(p.name).toLowerCase(),
      )?.[1];
      if (value !== undefined)
        out.push(...this.problems(this.ajv.compile(p.schema as Obj), value, `header ${String(p.name)} of ${where}`));
    }
    const body = operation.requestBody as Obj | undefined;
    if (x.requestBody === undefined || x.requestBody === '') {
      if (body?.required === true)
        out.push(`${where}: the server accepted a request without the body the document requires`);
    } else if (!body) {
      out.push(`${where}: the server accepted a request body the document does not describe`);
    } else {
      const json = parseJson(x.requestBody);
      const taken = json.ok ? accepted(operation, json.value, answer) : undefined;
      if (!json.ok) out.push(`${where}: the server accepted a body that is not JSON`);
      else if (taken !== undefined)
        out.push(
          ...this.problems(
            this.validator([...opPath, 'requestBody', 'content', 'application/json', 'schema']),
            taken,
            `request body of ${where}`,
          ),
        );
    }
    return out;
  }
}

/**
 * What of a request body the server accepted (undefined: nothing). A batch is answered item by
 * item: its 202 accepts the items whose entry has no `error`, and only those are held to the send
 * request's schema.
 */
function accepted(operation: Obj, body: unknown, answer: unknown): unknown {
  if (
    operation.operationId !== 'sendEmailBatch' ||
    !Array.isArray(body) ||
    !isObj(answer) ||
    !Array.isArray(answer.data) ||
    answer.data.length !== body.length
  )
    return body;
  const results = answer.data as unknown[];
  const taken = body.filter((_item, i) => !(isObj(results[i]) && 'error' in results[i]));
  return taken.length > 0 ? taken : undefined;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/** A query value as the schema's type reads it (query strings are text). */
function coerce(schema: Obj, value: string): unknown {
  if ((schema.type === 'integer' || schema.type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  return value;
}

let shared: Contract | undefined;
/** Every mismatch seen in this process, for the exit check. */
export const violations: string[] = [];

/** The check request() runs: throws on a mismatch, and remembers it so that a swallowed one still fails the run. */
export function enforceContract(x: Exchange): void {
  shared ??= Contract.fromFile();
  if (!shared.covers(x.url)) return;
  const found = shared.check(x);
  if (found.length === 0) return;
  if (violations.length === 0)
    process.on('exit', () => {
      process.stderr.write(
        `\nThe API broke its contract (docs/openapi.json) ${violations.length} time(s):\n${violations.join('\n')}\n`,
      );
      process.exitCode = 1;
    });
  violations.push(...found);
  throw new Error(`The response does not match docs/openapi.json:\n${found.join('\n')}`);
}
