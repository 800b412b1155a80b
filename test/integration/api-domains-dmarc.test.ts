// A domain's DMARC aggregate reports through the API (docs/api.md, "Domains",
// GET /api/v1/domains/:name/dmarc): the reports kept in the store summed per day and source, the
// server's own addresses (outbound.source_addresses) marked ours; the last 7 days by default,
// `since`/`until` choose another period; another customer's domain is a 404, a bad time a 422.
// Every answer is held to docs/openapi.json by the request helper.

import t from 'tap';
import { storedReport } from '../helpers/dmarc.js';
import { makeDomain, makeKey } from '../helpers/env.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const DAY = 86_400_000;
const s = await startMailEnv({ domains: ['acme.example'], outbound: 'source_addresses = ["192.0.2.10"]\n' });
const other = await makeKey(s.store, 'production', 'rival');
await makeDomain(s.store, 'rival.example', { customer: 'rival' });
const api = (path: string, key = s.key) => request(`${s.url}/api/v1${path}`, { key });

const now = Date.now();
const report = (reportId: string, domain: string, end: number) =>
  storedReport('google.com', reportId, domain, end - DAY + 1000, end);
await s.store.dmarc.keep({
  reports: [report('recent', 'acme.example', now - 1000), report('old', 'acme.example', now - 20 * DAY)],
  unreadable: [],
  raw: Buffer.alloc(0),
  receivedAt: now,
});
await s.store.dmarc.keep({
  reports: [report('rival', 'rival.example', now - 1000)],
  unreadable: [],
  raw: Buffer.alloc(0),
  receivedAt: now,
});

const total = (body: Json) => body.sources.reduce((n: number, r: Json) => n + r.messages, 0);

t.test('the last 7 days by default, ours marked, the two numbers to act on', async (t) => {
  const r = await api('/domains/acme.example/dmarc');
  t.equal(r.status, 200);
  t.equal(r.body.domain, 'acme.example');
  t.equal(total(r.body), 1244, 'only the recent report');
  t.equal(r.body.ours_failing, 0);
  t.equal(r.body.others, 44);
  t.match(
    r.body.sources.find((x: Json) => x.source_ip === '192.0.2.10'),
    { ours: true, messages: 1200, dmarc_pass: 1200 },
  );
  t.ok(r.body.sources.every((x: Json) => x.source_ip === '192.0.2.10' || !x.ours));
  t.ok(Math.abs(Date.parse(r.body.until) - Date.parse(r.body.since) - 7 * DAY) < 10, '7 days');
});

t.test('since and until choose the period', async (t) => {
  const since = new Date(now - 30 * DAY).toISOString().slice(0, 10);
  const all = await api(`/domains/acme.example/dmarc?since=${since}`);
  t.equal(all.status, 200);
  t.equal(total(all.body), 2 * 1244, 'both reports');
  const until = new Date(now - 10 * DAY).toISOString();
  const old = await api(`/domains/acme.example/dmarc?since=${since}&until=${encodeURIComponent(until)}`);
  t.equal(total(old.body), 1244, 'only the old one');
  t.equal(old.body.until, until);
});

t.test("another customer's domain is none; bad times are a 422 naming the field", async (t) => {
  expectError(t, await api('/domains/rival.example/dmarc'), 404, 'not_found');
  t.equal((await api('/domains/rival.example/dmarc', other)).status, 200, 'its owner sees it');
  const bad = await api('/domains/acme.example/dmarc?since=yesterday');
  expectError(t, bad, 422, 'validation_failed');
  t.ok(bad.body.error.details.since);
  const backwards = await api('/domains/acme.example/dmarc?since=2026-11-20&until=2026-11-10');
  expectError(t, backwards, 422, 'validation_failed');
  t.ok(backwards.body.error.details.since);
});
