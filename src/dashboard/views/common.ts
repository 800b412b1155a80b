import { exactTime, relativeTime, replyParts, shortUrl } from '../format.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';

// What page bodies share: the form's CSRF field, times, replies, webhook endpoints.

/**
 * A time as the pages show it: how long ago or ahead, by the server's clock when the page was
 * made ("3 min ago", "in 2 h"), in a <time> element whose datetime and title hold it exactly;
 * a dash when there is none. Accepts milliseconds or an ISO 8601 string.
 */
export function when(t: number | string | null | undefined, now: number): Html | string {
  if (t === null || t === undefined) return '—';
  const ms = typeof t === 'number' ? t : Date.parse(t);
  if (!Number.isFinite(ms)) return '—';
  return html`<time datetime="${new Date(ms).toISOString()}" title="${exactTime(ms)}">${relativeTime(ms, now)}</time>`;
}

/** The session's CSRF token, the hidden field of every form that posts. */
export const csrf = (c: PageContext) => html`<input type="hidden" name="_csrf" value="${c.session.csrf}">`;

/** A reply as it reads: its codes, what it was taken to mean, its words (format.ts replyParts); nothing for what is not a reply. */
export function replyBlock(v: unknown): Html | string {
  const p = replyParts(v);
  if (!p) return '';
  return html`<span class="reply">${p.status ? html`<code>${p.status}</code> ` : ''}${p.meaning ? html`<span class="badge">${p.meaning}</span> ` : ''}<span class="reply-text">${p.text}</span></span>`;
}

/** A webhook endpoint as rows name it: its URL, shortened, whole in the title; one deleted since says so. */
export function endpointLink(id: string, url: string | undefined): Html {
  return url === undefined
    ? html`<span class="muted">a deleted endpoint</span>`
    : html`<a href="${path`/webhooks/${id}`}" title="${url}">${shortUrl(url)}</a>`;
}
