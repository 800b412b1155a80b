import { EVENT_TYPES } from '../../domain/events.js';
import type { AttemptView, Endpoint } from '../../store/model.js';
import { endpointView } from '../../webhooks/service.js';
import type { DashboardDeps } from '../dashboard.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, endpointLink, when } from './common.js';

export function webhooksBody(c: PageContext, endpoints: Endpoint[]): Html {
  return html`<div class="card"><form method="post" action="/webhooks">${csrf(c)}
      <div class="row"><label>URL <input name="url" type="url" required size="40" placeholder="https://example.com/hooks/posthaste"></label>
      <label>Description <input name="description" maxlength="500"></label></div>
      <fieldset><legend>Events (none ticked: all)</legend>${EVENT_TYPES.map((t) => html`<label><span><input type="checkbox" name="events[]" value="${t}"> ${t}</span></label>`)}</fieldset>
      <button>Add endpoint</button></form></div>
    <div class="card"><table><thead><tr><th>URL</th><th>Events</th><th>State</th><th class="opt">Created</th></tr></thead><tbody>
    ${
      endpoints.length
        ? endpoints.map(
            (
              e,
            ) => html`<tr><td class="wrap">${endpointLink(e.id, e.url)}<br><small class="muted">${e.description}</small></td><td>${e.events ? e.events.join(', ') : 'all'}</td>
      <td>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</td><td class="opt">${when(e.createdAt, c.now)}</td></tr>`,
          )
        : html`<tr><td colspan="4" class="muted">No endpoints yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function endpointBody(
  c: PageContext,
  e: Endpoint,
  attempts: Array<AttemptView & { cursor: number }>,
  result: Awaited<ReturnType<DashboardDeps['webhooks']['test']>> | undefined,
): Html {
  const v = endpointView(e);
  return html`${result ? html`<div class="${result.success ? 'flash' : 'flash error'}" role="status"><p>${result.type} ${result.event_id}: ${result.status !== null ? `HTTP ${result.status}` : (result.error ?? 'no answer')} in ${result.duration_ms} ms</p>${result.response ? html`<pre>${result.response}</pre>` : ''}</div>` : ''}
    <div class="card"><p class="wrap"><b>${e.url}</b></p><p>${e.description}</p><p>Events: ${(v.events as string[]).join(', ')}</p>
      <p>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge failed">disabled</span> ${e.disabledReason ?? ''}`}</p>
      <form method="post" action="${path`/webhooks/${e.id}/test`}" class="row">${csrf(c)}<label>Event type <select name="type">${EVENT_TYPES.map((t) => html`<option>${t}</option>`)}</select></label><button>Send test event</button></form>
      <form method="post" action="${path`/webhooks/${e.id}/state`}" class="row">${csrf(c)}
        ${e.enabled ? html`<button name="action" value="disable" class="secondary">Disable</button>` : html`<button name="action" value="enable" class="secondary">Enable</button>`}
        <a href="${path`/webhooks/${e.id}/delete`}" class="danger">Delete endpoint…</a></form></div>
    ${editForm(c, e)}
    <h2>Recent deliveries</h2>
    <div class="card"><table><thead><tr><th>Time</th><th>Event</th><th>Status</th><th class="opt">Duration</th><th>Response</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
    ${
      attempts.length
        ? attempts.map(
            (
              a,
            ) => html`<tr><td>${when(a.at, c.now)}</td><td>${a.event_type}${a.kind !== 'event' ? html` <span class="badge">${a.kind}</span>` : ''}<br><small class="muted wrap">${a.event_id}</small></td>
      <td><span class="${`badge ${a.status !== null && a.status >= 200 && a.status < 300 ? 'ok' : 'failed'}`}">${a.status ?? a.error ?? '—'}</span></td><td class="opt">${a.duration_ms} ms</td>
      <td class="wrap"><pre>${a.response ?? ''}</pre></td>
      <td>${a.delivery_state !== null ? html`<form method="post" action="${path`/webhooks/${e.id}/replay/${a.event_id}`}" class="inline">${csrf(c)}<button class="secondary">Replay</button></form>` : ''}</td></tr>`,
          )
        : html`<tr><td colspan="6" class="muted">No deliveries yet.</td></tr>`
    }
    </tbody></table></div>`;
}

/** An endpoint's settings to change (url, description, events, enabled), and its secret to rotate. */
function editForm(c: PageContext, e: Endpoint): Html {
  const ticked = (t: string) => e.events?.includes(t) ?? false;
  return html`<h2>Settings</h2><div class="card"><form method="post" action="${path`/webhooks/${e.id}/edit`}">${csrf(c)}
      <div class="row"><label>URL <input name="url" type="url" required size="40" value="${e.url}"></label>
      <label>Description <input name="description" maxlength="500" value="${e.description}"></label></div>
      <fieldset><legend>Events (none ticked: all)</legend>${EVENT_TYPES.map((t) => html`<label><span><input type="checkbox" name="events[]" value="${t}"${ticked(t) ? ' checked' : ''}> ${t}</span></label>`)}</fieldset>
      <label><span><input type="checkbox" name="enabled" value="1"${e.enabled ? ' checked' : ''}> Enabled</span></label>
      <button>Save</button></form>
    <form method="post" action="${path`/webhooks/${e.id}/rotate-secret`}" class="row">${csrf(c)}<button class="secondary">Rotate signing secret</button>
      <small class="muted">A new secret, shown once; the old one goes on signing beside it for a while.</small></form></div>`;
}

/** The question before an endpoint and its delivery log are deleted, as a key's revocation asks it. */
export function deleteEndpointBody(c: PageContext, e: Endpoint): Html {
  return html`<div class="card"><p class="wrap">Delete the endpoint <b>${e.url}</b>? Nothing more is sent to it, and its delivery log goes with it. This cannot be undone.</p>
        <form method="post" action="${path`/webhooks/${e.id}/delete`}">${csrf(c)}<button class="danger">Delete endpoint</button> <a href="${path`/webhooks/${e.id}`}">Cancel</a></form></div>`;
}
