import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { newSecret, signatureHeader, signWebhook } from '../../src/webhooks/sign.js';

t.test('the official Standard Webhooks vector', async (t) => {
  const sig = signWebhook(
    'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    'msg_p5jXN8AQM9LWM0D4loKWxJek',
    1614265330,
    '{"test": 2432232314}',
  );
  t.equal(sig, 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
});

t.test('a 32-byte key vector (docs/protocols.md, vector B)', async (t) => {
  const body =
    '{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}';
  t.equal(
    signWebhook(
      'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
      'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W',
      1674087231,
      body,
    ),
    'v1,4PMU5Dl90B4kgwxDpwuMZ/cnZ5ztf+Y+kviYQD66rJg=',
  );
});

t.test('the standardwebhooks package signs and verifies the same for fresh secrets', async (t) => {
  for (let i = 0; i < 20; i++) {
    const secret = newSecret();
    t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    t.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
    const body = JSON.stringify({ id: `msg_${i}`, n: i, s: 'Zoë ☃' });
    const ts = Math.floor(Date.now() / 1000);
    const ours = signWebhook(secret, `msg_${i}`, ts, body);
    const wh = new Webhook(secret);
    t.equal(ours, wh.sign(`msg_${i}`, new Date(ts * 1000), body));
    t.doesNotThrow(() =>
      wh.verify(body, { 'webhook-id': `msg_${i}`, 'webhook-timestamp': String(ts), 'webhook-signature': ours }),
    );
  }
});

t.test('after a rotation: both signatures while the grace period lasts, then the new alone', async (t) => {
  const [old, fresh] = [newSecret(), newSecret()];
  const body = '{"type":"email.delivered"}';
  const headers = (signature: string) => ({
    'webhook-id': 'msg_1',
    'webhook-timestamp': '1700000000',
    'webhook-signature': signature,
  });
  const verifies = (secret: string, signature: string) => {
    try {
      new Webhook(secret).verify(body, headers(signature));
      return true;
    } catch {
      return false;
    }
  };
  const secrets = { secret: fresh, previousSecret: old, previousSecretExpiresAt: 2_000 };
  const during = signatureHeader(secrets, 'msg_1', 1700000000, body, 1_999);
  t.equal(during, `${signWebhook(old, 'msg_1', 1700000000, body)} ${signWebhook(fresh, 'msg_1', 1700000000, body)}`);
  const after = signatureHeader(secrets, 'msg_1', 1700000000, body, 2_000);
  t.equal(after, signWebhook(fresh, 'msg_1', 1700000000, body));
  const never = signatureHeader(
    { secret: fresh, previousSecret: null, previousSecretExpiresAt: null },
    'msg_1',
    1700000000,
    body,
    0,
  );
  t.equal(never, after);
  // standardwebhooks checks the timestamp against the clock: verify at the signed time.
  const real = Date.now;
  Date.now = () => 1700000000 * 1000;
  try {
    t.ok(verifies(old, during) && verifies(fresh, during), 'either secret verifies during the grace period');
    t.ok(verifies(fresh, after) && !verifies(old, after), 'only the new one after it');
  } finally {
    Date.now = real;
  }
});
