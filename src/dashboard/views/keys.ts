import { SCOPES } from '../../domain/key-scopes.js';
import type { ApiKeyInfo } from '../../store/model.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, when } from './common.js';

/** The scopes part of the key form: a preset or a choice of scopes, none preselected (docs/api.md, "Keys and scopes"). */
function scopesChoice(): Html {
  return html`<fieldset class="choice"><legend>Scopes (choose one)</legend>
        <label><span><input type="radio" name="scopes" value="full" required> <b>Full</b>: everything the API can do for this customer</span></label>
        <label><span><input type="radio" name="scopes" value="send" required> <b>Send only</b>: sends over the API and SMTP submission, nothing else</span></label>
        <label><span><input type="radio" name="scopes" value="custom" required> <b>Only the scopes ticked:</b></span></label>
        <span>${SCOPES.map((s) => html`<label><input type="checkbox" name="${`scope:${s}`}" value="on"> <code>${s}</code></label> `)}</span></fieldset>
      <label>From domains <input name="from_domains" placeholder="any of this customer's"></label>
      <label>Allowed client addresses <input name="allowed_cidrs" placeholder="any, e.g. 203.0.113.0/24"></label>`;
}

/** A key's restrictions, or a dash. */
const restrictions = (k: ApiKeyInfo): Html =>
  k.from_domains || k.allowed_cidrs
    ? html`${k.from_domains ? html`from ${k.from_domains.join(', ')}` : ''}${k.from_domains && k.allowed_cidrs ? html`<br>` : ''}${k.allowed_cidrs ? html`clients ${k.allowed_cidrs.join(', ')}` : ''}`
    : html`—`;

/** The keys page: a form that makes the kind of key and its scopes explicit choices (none is preselected), and the keys. */
export function keysBody(c: PageContext, keys: ApiKeyInfo[]): Html {
  return html`<div class="card"><form method="post" action="/keys" class="row">${csrf(c)}
      <label>Name <input name="name" maxlength="100" placeholder="e.g. web app"></label>
      <fieldset class="choice"><legend>Kind (choose one)</legend>
        <label><span><input type="radio" name="kind" value="sandbox" required> <b>Sandbox</b> (ph_test_): nothing is sent; outcomes are simulated</span></label>
        <label><span><input type="radio" name="kind" value="production" required> <b>Production</b> (ph_live_): sends real mail</span></label></fieldset>
      ${scopesChoice()}
      <button>Create key</button></form></div>
    <div class="card"><table><thead><tr><th>Name</th><th>Kind</th><th>Handle</th><th>Scopes</th><th class="opt">Restrictions</th><th class="opt">Created</th><th class="opt">Last send</th><th>State</th></tr></thead><tbody>
    ${
      keys.length
        ? keys.map(
            (
              k,
            ) => html`<tr><td>${k.name || '—'}</td><td>${k.kind}</td><td><code>${k.id}</code></td><td>${k.scopes.join(' ')}</td><td class="opt">${restrictions(k)}</td><td class="opt">${when(k.created_at, c.now)}</td><td class="opt">${when(k.last_used_at, c.now)}</td>
      <td>${k.revoked_at ? html`<span class="badge failed">revoked ${when(k.revoked_at, c.now)}</span>` : html`<a href="${path`/keys/${k.id}/revoke`}">Revoke…</a>`}</td></tr>`,
          )
        : html`<tr><td colspan="8" class="muted">No keys yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function revokeKeyBody(c: PageContext, k: ApiKeyInfo): Html {
  return html`<div class="card"><p>Revoke <code>${k.id}</code> (${k.name || 'unnamed'}, ${k.kind})? Requests with it are refused from the next one on. This cannot be undone.</p>
        <form method="post" action="${path`/keys/${k.id}/revoke`}">${csrf(c)}<button class="danger">Revoke key</button> <a href="/keys">Cancel</a></form></div>`;
}
