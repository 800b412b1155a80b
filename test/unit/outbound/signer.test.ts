import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import t from 'tap';
import { SignerPool } from '../../../src/outbound/signing/signer.js';

// The signing threads: a send request (json) is composed at its first attempt and its composed
// copy comes back to be kept; a message submitted over SMTP (mime) is signed byte for byte as it
// was stored, never composed, and nothing comes back to keep.

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = {
  domain: 'example.com',
  selector: 'sel1',
  privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
};
const record = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;

async function verified(message: Buffer): Promise<string> {
  const r = await dkimVerify(message, {
    resolver: async (name: string, type: string) =>
      type === 'TXT' && name === 'sel1._domainkey.example.com' ? [[record]] : [],
  } as never);
  return r.results.map((x: { status: { result: string } }) => x.status.result).join(',');
}

t.test('a submitted message is signed as it is; a send request is composed and its copy returned', async (t) => {
  const pool = new SignerPool(1);
  t.teardown(() => pool.close());
  // Written as a client writes it: its own header order, a header the composer never writes, a
  // body that is not what any request would compose.
  const mime = Buffer.from(
    'Received: from app.internal by relay.internal; Tue, 24 Nov 2026 09:00:00 +0000\r\nFrom: "Shop" <shop@example.com>\r\nX-Mailer: Django\r\nTo: bob@example.net\r\nSubject: As written\r\nMessage-ID: <client-1@app.example.com>\r\n\r\nLine one\r\n.dot line\r\n',
  );
  const submitted = await pool.sign({
    request: mime,
    format: 'mime',
    messageId: 'x@example.com',
    createdAt: 1,
    raw: null,
    key,
  });
  t.equal(submitted.raw, null, 'nothing composed, so nothing to keep');
  t.match(
    submitted.signed.toString('latin1'),
    /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=example\.com;/,
  );
  t.same(
    submitted.signed.subarray(submitted.signed.length - mime.length),
    mime,
    'the message follows the signature byte for byte',
  );
  t.equal(await verified(submitted.signed), 'pass');

  const request = Buffer.from(
    JSON.stringify({ from: 'shop@example.com', to: 'bob@example.net', subject: 'Composed', text_body: 'Hi' }),
  );
  const composed = await pool.sign({
    request,
    format: 'json',
    messageId: 'y@example.com',
    createdAt: 1,
    raw: null,
    key,
  });
  t.ok(composed.raw, 'composed now: the copy comes back');
  t.match(composed.raw!.toString(), /Subject: Composed\r\n[\s\S]*Message-ID: <y@example\.com>/);
  t.equal(await verified(composed.signed), 'pass');
});
