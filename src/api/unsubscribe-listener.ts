import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isOneClick, parseUnsubscribeToken, UNSUBSCRIBE_PATH } from '../domain/unsubscribe.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import { isStoreUnavailable } from '../store/errors.js';
import type { Store } from '../store/store.js';

export interface UnsubscribeDeps {
  store: Pick<Store, 'suppressions'>;
  /** The secret the tokens are made with (domain/unsubscribe.ts). */
  secret: Buffer;
  clock: Clock;
  log: Logger;
  /** An unsubscribe committed its event: the webhook loop looks now. */
  onEvents: () => void;
}

/** The most a one-click POST's body may be: the form is one short field. */
const MAX_BODY = 4096;

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** A page of one heading and one paragraph; nothing in it comes from the request. */
const page = (title: string, text: string, form = '') =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${title}</title></head><body style="font-family:sans-serif;max-width:32em;margin:4em auto"><h1>${title}</h1><p>${text}</p>${form}</body></html>\n`;

const CONFIRM = page(
  'Unsubscribe',
  'Press the button to stop receiving these emails.',
  '<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>',
);
const DONE = page('Unsubscribed', 'You will not receive these emails any more.');
const NOT_FOUND = page('Not found', 'This link is not valid.');
const BAD_REQUEST = page('Bad request', 'This request cannot be answered.');
const UNAVAILABLE = page('Try again later', 'The request could not be recorded now; please try again later.');

/**
 * The one-click unsubscribe listener (unsubscribe.listen; docs/delivery.md, "One-click
 * unsubscribe"): GET /u/<token> shows a confirmation page with a button and changes nothing (link
 * scanners fetch every link); POST /u/<token> with RFC 8058's body suppresses the recipient the
 * token names (store: suppressions.unsubscribe, once). A forged, altered or unknown token is a
 * 404 that does not say why; a POST without the one-click body a 400.
 */
export function buildUnsubscribeListener(deps: UnsubscribeDeps): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const recipientId = path.startsWith(UNSUBSCRIBE_PATH)
      ? parseUnsubscribeToken(deps.secret, path.slice(UNSUBSCRIBE_PATH.length))
      : undefined;
    if (recipientId === undefined) {
      req.resume();
      res.writeHead(404, HEADERS).end(NOT_FOUND);
    } else if (req.method === 'GET' || req.method === 'HEAD') {
      req.resume();
      res.writeHead(200, HEADERS).end(req.method === 'HEAD' ? undefined : CONFIRM);
    } else if (req.method === 'POST') void oneClick(deps, req, res, recipientId);
    else {
      req.resume();
      res.writeHead(405, { ...HEADERS, allow: 'GET, HEAD, POST' }).end(BAD_REQUEST);
    }
  });
}

/** POST: the body read (at most MAX_BODY), checked to be the one-click form, the recipient suppressed once. */
async function oneClick(deps: UnsubscribeDeps, req: IncomingMessage, res: ServerResponse, recipientId: number) {
  const body = await readBody(req);
  if (body === undefined || !isOneClickRequest(req.headers['content-type'] ?? '', body)) {
    res.writeHead(400, { ...HEADERS, connection: 'close' }).end(BAD_REQUEST);
    return;
  }
  try {
    const r = await deps.store.suppressions.unsubscribe(recipientId, 'one_click', deps.clock.now());
    if (r === 'unknown') {
      res.writeHead(404, HEADERS).end(NOT_FOUND);
      return;
    }
    if (r === 'unsubscribed') deps.onEvents();
    res.writeHead(200, HEADERS).end(DONE);
  } catch (e) {
    if (!isStoreUnavailable(e)) deps.log.error({ err: e }, 'unsubscribe: the suppression could not be written');
    res.writeHead(503, { ...HEADERS, 'retry-after': '60' }).end(UNAVAILABLE);
  }
}

/** The form field List-Unsubscribe=One-Click, form-encoded (RFC 8058 3.1) or as multipart/form-data. */
function isOneClickRequest(contentType: string, body: string): boolean {
  if (/^multipart\/form-data/i.test(contentType))
    return /name="?List-Unsubscribe"?\r?\n(?:[^\r\n]+\r?\n)*\r?\nOne-Click\r?\n/i.test(body);
  return isOneClick(body);
}

/** The request's body as text, or undefined when it is longer than MAX_BODY or breaks off. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        resolve(undefined);
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => resolve(undefined));
  });
}
