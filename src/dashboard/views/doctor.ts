import type { DoctorCheck, DoctorReport } from '../../domain/doctor.js';
import { noun } from '../format.js';
import { type Html, html } from '../html.js';
import { when } from './common.js';

const BADGE: Record<DoctorCheck['state'], Html> = {
  pass: html`<span class="badge ok">passes</span>`,
  fail: html`<span class="badge missing">fails</span>`,
  no_answer: html`<span class="badge pending">no answer</span>`,
};

/** The checks as rows: state, check, what was checked, what was found and, for a failure, its fix. */
function checksTable(checks: DoctorCheck[]): Html {
  return html`<table><thead><tr><th>Check</th><th>State</th><th>Of</th><th>Found, and what to do</th></tr></thead><tbody>
    ${checks.map(
      (k) =>
        html`<tr><td>${k.check}</td><td>${BADGE[k.state]}</td><td class="wrap"><code>${k.subject}</code></td><td class="wrap">${k.found}${k.fix ? html`<br><b>Fix:</b> ${k.fix}` : ''}</td></tr>`,
    )}
    </tbody></table>`;
}

const intro = html`<p class="muted">What receivers check before they trust this server's mail: reverse DNS, blocklists, DKIM, SPF, DMARC and its alignment, MX. Checked through dns.servers every hour by this node (and at any time by <code>posthaste doctor</code>); "no answer" means the DNS server did not answer, which says nothing of the record.</p>`;

/** When the report is from, or that there is none yet. */
function ranAt(report: DoctorReport | null, now: number): Html {
  return report
    ? html`<p class="muted">Last checked ${when(Date.parse(report.at), now)}.</p>`
    : html`<p class="muted">Not checked yet: the first check runs shortly after start, then every hour.</p>`;
}

/**
 * The overview's deliverability section: what fails or was not answered among the checks shown
 * (the node's own, for an administrator, and the customer's domains'), and how many pass.
 */
export function doctorSummary(report: DoctorReport | null, checks: DoctorCheck[], now: number): Html {
  const open = checks.filter((k) => k.state !== 'pass');
  const passing = checks.length - open.length;
  return html`<h2>Deliverability</h2>
    <div class="card" id="doctor">${intro}${ranAt(report, now)}
    ${report ? html`<p>${passing} ${noun(passing, 'check passes', 'checks pass')}${open.length ? html`; ${open.length} ${noun(open.length, 'needs', 'need')} a look:` : '.'}</p>` : ''}
    ${open.length ? checksTable(open) : ''}</div>`;
}

/** A domain page's deliverability section: every check of the domain. */
export function doctorDomain(report: DoctorReport | null, checks: DoctorCheck[], now: number): Html {
  return html`<h2>Deliverability</h2>
    <div class="card" id="doctor">${intro}${ranAt(report, now)}
    ${checks.length ? checksTable(checks) : report ? html`<p class="muted">This domain was not in the last check (added since?).</p>` : ''}</div>`;
}
