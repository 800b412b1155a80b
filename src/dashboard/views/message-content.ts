import type { MessageView } from '../../store/model.js';
import { type MessageContent, SOURCE_SHOWN } from '../content.js';
import { byteSize } from '../format.js';
import { type Html, html, path } from '../html.js';

/**
 * A sent message's content on its page: the text, the HTML in a sandboxed frame that fetches
 * nothing (routes/content.ts serves it under untrusted.ts's policy), the attachments, and the
 * source at the end of the page.
 */
export function contentBody(m: MessageView, content: MessageContent, retentionDays: number): Html {
  if (content.kind === 'purged')
    return html`<h2>Content</h2><div class="card"><p class="muted">The body of this message was removed by retention (<code>retention.days</code>: ${retentionDays}) after every recipient of it was done. Its recipients and events are kept.</p></div>`;
  const id = m.message_id;
  return html`<h2>Content</h2>
    ${content.unreadable ? html`<div class="card"><p class="muted">The stored ${content.source.kind === 'submitted' ? 'message' : 'request'} cannot be read back (${content.unreadable}); its source is below.</p></div>` : ''}
    ${
      content.html !== undefined
        ? html`<h3>HTML</h3><iframe class="mail" title="The message's HTML, without scripts or remote content" sandbox="" referrerpolicy="no-referrer" src="${path`/messages/${id}/html`}"></iframe>
    <p class="muted">Shown without scripts, and nothing it names is fetched (remote images, stylesheets, fonts, frames): viewing it here neither counts as an open in anyone's tracking nor tells the hosts it names who looked.</p>`
        : ''
    }
    ${content.unreadable ? '' : html`<h3>Text</h3><div class="card"><pre class="mail-text">${content.text ?? '(no text part)'}</pre></div>`}
    ${
      content.attachments.length
        ? html`<h3>Attachments</h3><div class="card"><ul class="attachments">${content.attachments.map(
            (a, i) =>
              html`<li><a href="${path`/messages/${id}/attachments/${i}`}" download="${a.filename}">${a.filename}</a> · ${a.contentType} · ${byteSize(a.size)}</li>`,
          )}</ul></div>`
        : ''
    }`;
}

/** Why the source shown is the one it is: the composed message while kept, else the request; a submitted message as stored. */
function sourceNote(m: MessageView, kind: 'composed' | 'request' | 'submitted'): string {
  if (kind === 'submitted')
    return 'The message as it was submitted over SMTP, with the trace and the fields posthaste adds and removes at acceptance (docs/submission.md), before its DKIM signature: what is delivered.';
  if (kind === 'composed')
    return 'The MIME message as composed for delivery, before its DKIM signature. It is kept while a recipient may still be retried.';
  if (m.sandbox) return 'A sandbox message is never composed: this is the send request as accepted.';
  if (m.recipients.some((r) => r.state === 'queued' || r.state === 'deferred'))
    return 'Not composed yet (it is composed at its first delivery attempt): this is the send request as accepted.';
  if (m.recipients.every((r) => r.attempts === 0))
    return 'Never composed, since none of its recipients was attempted: this is the send request as accepted.';
  return 'The composed MIME message is kept only while a recipient may still be retried, and none may now: this is the send request as accepted, from which it was composed.';
}

/** The source of a sent message, its first SOURCE_SHOWN bytes as text, the whole as a download. */
export function sourceBody(m: MessageView, content: MessageContent): Html | string {
  if (content.kind === 'purged') return '';
  const { kind, bytes } = content.source;
  const shown = bytes.subarray(0, SOURCE_SHOWN).toString('utf8');
  return html`<h2>Source</h2><div class="card"><p class="muted">${sourceNote(m, kind)}</p>
    <p><a href="${path`/messages/${m.message_id}/source`}">Download the ${kind === 'request' ? 'request' : 'message'}</a> (${byteSize(bytes.length)})${bytes.length > SOURCE_SHOWN ? `; the first ${byteSize(SOURCE_SHOWN)} are shown` : ''}</p>
    <pre class="source">${shown}</pre></div>`;
}
