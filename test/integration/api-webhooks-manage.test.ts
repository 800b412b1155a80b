// A webhook endpoint changed after its creation (PATCH /api/v1/webhooks/{id}) and its secret
// rotated (POST /api/v1/webhooks/{id}/rotate-secret) while deliveries flow: during the grace
// period every delivery verifies, with the standardwebhooks package, under the old secret and under
// the new one, and none is lost (test/unit/webhooks/sign.test.ts: after it, only the new one signs).

import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { waitFor } from '../../support/wait.js';
import { sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { makeKey } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { type Received, WebhookReceiver } from '../helpers/webhook-receiver.js';

const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());

const GRACE_S = 600;
const webhooksToml = `[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\nsecret_grace = "${GRACE_S}s"\n`;
const s = await startMailEnv({ mxDomains: ['good.test'], toml: webhooksToml, daemon: { manualDelivery: false } });
const { key } = s;

async function endpoint(path: string, extra: Record<string, unknown> = {}): Promise<Json> {
  const r = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: rx.url(path), ...extra } });
  if (r.status !== 201) throw new Error(`create failed ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const patch = (id: string, body: unknown, k = key) =>
  request(`${s.url}/api/v1/webhooks/${id}`, { key: k, method: 'PATCH', body });

/** Whether standardwebhooks accepts the request under this secret. */
function verifies(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

const messageOf = (r: Received): string => JSON.parse(r.body).data.message_id;

t.test('PATCH changes url, events and enabled, each validated as at creation', async (t) => {
  const ep = await endpoint('/patch-a', { events: ['email.bounced'], description: 'one' });
  const moved = await patch(ep.id, { url: rx.url('/patch-b'), events: ['email.delivered', 'domain.verified'] });
  t.equal(moved.status, 200);
  t.match(moved.body, { id: ep.id, url: rx.url('/patch-b'), events: ['email.delivered', 'domain.verified'] });
  t.equal(moved.body.secret, undefined, 'no secret in the answer');
  t.match((await patch(ep.id, { enabled: false })).body, { enabled: false, disabled_reason: 'disabled by its owner' });
  t.match((await patch(ep.id, { enabled: true, events: null })).body, { enabled: true, events: [/./] });
  t.equal(
    (await request(`${s.url}/api/v1/webhooks/${ep.id}`, { key })).body.events.length > 2,
    true,
    'null: every type',
  );

  const bad = await patch(ep.id, { url: 'ftp://x', events: ['email.nope'], enabled: 'yes', colour: 1 });
  expectError(t, bad, 422, 'validation_failed');
  t.same(Object.keys(bad.body.error.details).sort(), ['colour', 'enabled', 'events', 'url']);
  expectError(t, await patch(ep.id, {}), 422, 'validation_failed', 'an empty change');
  t.match((await request(`${s.url}/api/v1/webhooks/${ep.id}`, { key })).body, { url: rx.url('/patch-b') }, 'unchanged');

  const other = await makeKey(s.store, 'production', 'other-customer');
  expectError(t, await patch(ep.id, { enabled: false }, other), 404, 'not_found', "another customer's endpoint");
  expectError(t, await patch('wh_nope', { enabled: false }), 404, 'not_found');
  expectError(
    t,
    await request(`${s.url}/api/v1/webhooks/${ep.id}/rotate-secret`, { key: other, method: 'POST' }),
    404,
    'not_found',
  );
});

t.test(
  'a secret rotated under load: every delivery in the grace period verifies with the old and the new',
  async (t) => {
    const ep = await endpoint('/rotate', { events: ['email.delivered'] });
    const old: string = ep.secret;
    rx.secrets.set('/rotate', old);
    const send = (i: number) =>
      sendEmail(s.url, key, { from: 'a@example.com', to: `r${i}@good.test`, subject: `n${i}`, text_body: 'x' });

    // Deliveries already flowing when the secret changes.
    const before = await Promise.all(Array.from({ length: 150 }, (_, i) => send(i)));
    await waitFor('deliveries flowing', () => rx.on('/rotate').length >= 10);
    const rotated = await request(`${s.url}/api/v1/webhooks/${ep.id}/rotate-secret`, { key, method: 'POST' });
    t.equal(rotated.status, 200);
    const fresh: string = rotated.body.secret;
    t.match(fresh, /^whsec_/);
    t.not(fresh, old);
    t.ok(Date.parse(rotated.body.previous_secret_expires_at) > Date.now(), 'the old secret signs on for a while');
    t.equal((await request(`${s.url}/api/v1/webhooks/${ep.id}`, { key })).body.secret, undefined, 'shown once');
    // Events made after the rotation: signed after it, under both secrets.
    const after = await Promise.all(Array.from({ length: 150 }, (_, i) => send(1000 + i)));

    const all = new Set([...before, ...after]);
    const got = await waitFor('every delivery', () => {
      const r = rx.on('/rotate');
      return new Set(r.map(messageOf)).size >= all.size && r;
    });
    t.same(new Set(got.map(messageOf)), all, 'no delivery lost');
    t.equal(
      got.filter((r) => !verifies(old, r)).length,
      0,
      'the receiver still on the old secret verifies every delivery',
    );
    const graced = got.filter((r) => after.includes(messageOf(r)));
    t.equal(graced.length >= after.length, true);
    t.equal(
      graced.filter((r) => !verifies(fresh, r)).length,
      0,
      'the receiver on the new secret verifies every delivery made after the rotation',
    );
    t.match(graced[0]!.signature, /^v1,\S+ v1,\S+$/, 'two signatures, space-separated');

    t.ok(
      got.some((r) => before.includes(messageOf(r)) && !verifies(fresh, r)),
      'some deliveries went before the rotation, under the old secret alone',
    );
  },
);

t.test('the CLI: webhooks update and rotate-secret, validated as the API validates', async (t) => {
  const ep = await endpoint('/cli-a');
  const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);
  const updated = await cli(
    'webhooks',
    'update',
    ep.id,
    '--url',
    rx.url('/cli-b'),
    '--events',
    'email.bounced',
    '--enabled',
    'false',
    '--json',
  );
  t.equal(updated.code, 0, updated.stderr);
  t.match(json<Json>(updated), { id: ep.id, url: rx.url('/cli-b'), events: ['email.bounced'], enabled: false });
  const again = await cli('webhooks', 'update', ep.id, '--events', 'all', '--enabled', 'true', '--json');
  t.equal(again.code, 0, again.stderr);
  const all = json<Json>(again);
  t.match(all, { enabled: true, events: [/./] });
  t.ok(all.events.length > 2, '"all": every type');
  const bad = await cli('webhooks', 'update', ep.id, '--url', 'ftp://x');
  t.equal(bad.code, 1);
  t.match(bad.stderr, /url/);
  const rotated = await cli('webhooks', 'rotate-secret', ep.id, '--json');
  t.equal(rotated.code, 0, rotated.stderr);
  const r = json<Json>(rotated);
  t.match(r, { id: ep.id, secret: /^whsec_/, previous_secret_expires_at: /^20/ });
  t.match(await s.store.webhooks.getEndpoint(ep.id), { secret: r.secret, previousSecret: ep.secret });
});
