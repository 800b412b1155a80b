import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { newSecret, signWebhook } from '../../src/webhooks/sign.js';

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
