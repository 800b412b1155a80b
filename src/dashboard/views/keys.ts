import type { ApiKeyInfo } from '../../store/model.js';
import { type Html, html, path } from '../html.js';
import type { PageContext } from '../layout.js';
import { csrf, when } from './common.js';

/** The keys page: a form that makes the kind of key an explicit choice (none is preselected), and the keys. */
export function keysBody(c: PageContext, keys: ApiKeyInfo[]): Html {
  return html`<div class="card"><form method="post" action="/keys" class="row">${csrf(c)}
      <label>Name <input name="name" maxlength="100" placeholder="e.g. web app"></label>
      <fieldset class="choice"><legend>Kind (choose one)</legend>
        <label><span><input type="radio" name="kind" value="sandbox" required> <b>Sandbox</b> (ph_test_): nothing is sent; outcomes are simulated</span></label>
        <label><span><input type="radio" name="kind" value="production" required> <b>Production</b> (ph_live_): sends real mail</span></label></fieldset>
      <button>Create key</button></form></div>
    <div class="card"><table><thead><tr><th>Name</th><th>Kind</th><th>Handle</th><th class="opt">Created</th><th class="opt">Last send</th><th>State</th></tr></thead><tbody>
    ${
      keys.length
        ? keys.map(
            (
              k,
            ) => html`<tr><td>${k.name || '—'}</td><td>${k.kind}</td><td><code>${k.id}</code></td><td class="opt">${when(k.created_at, c.now)}</td><td class="opt">${when(k.last_used_at, c.now)}</td>
      <td>${k.revoked_at ? html`<span class="badge failed">revoked ${when(k.revoked_at, c.now)}</span>` : html`<a href="${path`/keys/${k.id}/revoke`}">Revoke…</a>`}</td></tr>`,
          )
        : html`<tr><td colspan="6" class="muted">No keys yet.</td></tr>`
    }
    </tbody></table></div>`;
}

export function revokeKeyBody(c: PageContext, k: ApiKeyInfo): Html {
  return html`<div class="card"><p>Revoke <code>${k.id}</code> (${k.name || 'unnamed'}, ${k.kind})? Requests with it are refused from the next one on. This cannot be undone.</p>
        <form method="post" action="${path`/keys/${k.id}/revoke`}">${csrf(c)}<button class="danger">Revoke key</button> <a href="/keys">Cancel</a></form></div>`;
}
