import type { Overview } from '../store/model.js';
import { Html, html } from './html.js';

/** The last 7 days by hour as an SVG bar chart drawn on the server: accepted behind, delivered and bounced in front. */
export function chart(hourly: Overview['hourly']): Html {
  const W = 840;
  const H = 160;
  const max = Math.max(1, ...hourly.map((h) => Math.max(h.accepted, h.delivered + h.bounced)));
  const bw = W / hourly.length;
  const bar = (cls: string, i: number, v: number, base = 0) => {
    if (v <= 0) return '';
    const h = (v / max) * (H - 10);
    const y = H - (base / max) * (H - 10) - h;
    return `<rect class="${cls}" x="${(i * bw).toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(bw - 1, 1).toFixed(1)}" height="${h.toFixed(1)}"></rect>`;
  };
  const bars = hourly
    .map(
      (h, i) =>
        bar('accepted', i, h.accepted) + bar('delivered', i, h.delivered) + bar('bounced', i, h.bounced, h.delivered),
    )
    .join('');
  const total = hourly.reduce((n, h) => n + h.accepted, 0);
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-label="${`Recipients per hour over the last 7 days: ${total} accepted, peak ${max} in an hour`}">${new Html(bars)}<line x1="0" y1="${H}" x2="${W}" y2="${H}" stroke="#aab4be"></line></svg>
    <p class="legend"><span><i class="accepted"></i>accepted</span><span><i class="delivered"></i>delivered</span><span><i class="bounced"></i>bounced</span> · recipients per hour, last 7 days, peak ${max}</p>`;
}
