import type { DmarcSummary } from '../../domain-setup/dmarc.js';
import { type Html, html } from '../html.js';

/**
 * A domain page's DMARC section: what receivers' aggregate reports said of the domain over the
 * last days (domain-setup/dmarc.ts), per day and source address, ours marked, and the two numbers
 * to act on. Reporters' names and addresses are someone else's words: the template escapes them.
 */
export function dmarcSection(s: DmarcSummary, days: number, listening: boolean): Html {
  const total = s.sources.reduce((n, r) => n + r.messages, 0);
  const intro = html`<p class="muted">What receivers' DMARC aggregate reports said about mail claiming this domain over the last ${days} days, by the day of each report and the address it came from (docs/operations.md, "DMARC reports"). <b>Ours</b> marks the addresses posthaste sends from.</p>`;
  if (total === 0)
    return html`<h2>DMARC reports</h2><div class="card" id="dmarc">${intro}<p class="muted">${
      listening
        ? html`No report about this domain yet: reports come when its DMARC record names the report address in <code>rua=</code>.`
        : html`Not collected: set <code>smtp.dmarc_address</code> and name it in the domain's DMARC record (<code>rua=</code>).`
    }</p></div>`;
  return html`<h2>DMARC reports</h2><div class="card" id="dmarc">${intro}
    <p>${total} messages reported. Our own mail failing DMARC: <b>${s.ours_failing}</b>. From addresses that are not ours: <b>${s.others}</b>.</p>
    <table><thead><tr><th>Day</th><th>Source</th><th>Ours</th><th>Messages</th><th>DMARC pass</th><th>DKIM aligned</th><th>SPF aligned</th><th>Reported by</th></tr></thead><tbody>
    ${s.sources.map(
      (r) =>
        html`<tr><td>${r.day}</td><td><code>${r.source_ip}</code></td><td>${r.ours ? 'yes' : 'no'}</td><td>${r.messages}</td><td>${r.dmarc_pass}</td><td>${r.dkim_aligned}</td><td>${r.spf_aligned}</td><td class="wrap">${r.reporters.join(', ')}</td></tr>`,
    )}
    </tbody></table></div>`;
}
