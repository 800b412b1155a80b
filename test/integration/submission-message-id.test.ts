import t from 'tap';
import { getEmail } from '../helpers/api.js';
import { customerId, makeDomain, startTestServer, type TestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { mxOfDomain } from '../helpers/mail-env.js';
import { runProgram, submissionToml } from '../helpers/submission.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

// An application that knows only the Message-ID its mailer wrote (Django, Rails and Python's
// smtplib write their own, and drop the 250 reply that names posthaste's id) finds its message
// by that id through the API, and recognises it in every event (docs/submission.md, Header
// fields). Python's smtplib sends over STARTTLS; one recipient is delivered, one bounces.

const { dns, mx } = await mxOfDomain('good.test');
mx.script = (rcpt) => (rcpt.startsWith('gone@') ? { rcpt: [550, '5.1.1 No such user'] } : undefined);
const rx = await new WebhookReceiver().start();
t.teardown(() => rx.stop());
const s: TestServer = await startTestServer(
  `[outbound]\nport = ${mx.port}\n[webhooks]\nallow_private_targets = true\ntls_ca_file = "${fixturePath('tls/ca.pem')}"\n` +
    submissionToml(),
  { manualDelivery: true, dns: dns.server },
);
t.teardown(() => s.close());
const key = (
  await s.store.keys.create({
    grant: fullGrant(),
    customerId: await customerId(s.store),
    kind: 'production',
    name: 'app',
    now: Date.now(),
  })
).key;
await makeDomain(s.store, 'example.com');
const port = s.daemon.submission['submission.listen']!.port;
const ep = await request(`${s.url}/api/v1/webhooks`, { key, body: { url: rx.url('/events') } });
rx.secrets.set('/events', ep.body.secret);

/** smtplib sends a message with its own Message-ID (email.utils.make_msgid, as Django does); prints the id and the 250 reply. */
const PY = `
import smtplib, ssl, sys
from email.message import EmailMessage
from email.utils import make_msgid
m = EmailMessage()
m['From'] = 'Shop <shop@example.com>'
m['To'] = 'ann@good.test, gone@good.test'
m['Subject'] = 'Order 77'
m['Message-ID'] = make_msgid(idstring='order77', domain='app.example.com')
m.set_content('Thanks')
with smtplib.SMTP('127.0.0.1', int(sys.argv[1])) as c:
    c.starttls(context=ssl.create_default_context(cafile=sys.argv[3]))
    c.login('posthaste', sys.argv[2])
    c.send_message(m)
    print('id', m['Message-ID'])
    print(c.noop())
`;

import { fullGrant } from '../../src/domain/key-scopes.js';

t.test("smtplib's own Message-ID finds the message through the API, and every event carries it", async (t) => {
  const r = await runProgram('/usr/bin/python3', ['-c', PY, String(port), key, fixturePath('tls/ca.pem')]);
  t.equal(r.code, 0, r.out);
  const written = /^id (<[^>]+>)$/m.exec(r.out)?.[1];
  t.match(written, /^<\d+\.\d+\.\d+\.order77@app\.example\.com>$/, 'the id smtplib wrote');
  const bare = written!.slice(1, -1);

  for (const q of [bare, written!]) {
    const list = await request(`${s.url}/api/v1/emails?message_id=${encodeURIComponent(q)}`, { key });
    t.equal(list.status, 200);
    t.equal(list.body.data.length, 1, `GET /api/v1/emails?message_id=${q} finds it`);
    t.equal(list.body.data[0].header_message_id, bare);
  }
  const found = (await request(`${s.url}/api/v1/emails?message_id=${encodeURIComponent(bare)}`, { key })).body
    .data[0] as Json;
  const id = found.message_id as string;
  t.not(id, bare, "posthaste's id is its own");
  const byOwn = await request(`${s.url}/api/v1/emails?message_id=${encodeURIComponent(id)}`, { key });
  t.same(
    byOwn.body.data.map((m: Json) => m.message_id),
    [id],
    "posthaste's id finds it too",
  );
  const m = await getEmail(s.url, key, id);
  t.equal(m.header_message_id, bare, 'the message shows the id the application wrote');
  const stored = (await s.sql.value('SELECT request FROM messages WHERE message_id = ?', id)) as Buffer;
  t.match(
    stored.toString('latin1'),
    new RegExp(`\\r\\nMessage-ID: ${written!.replace(/\./g, '\\.')}\\r\\n`),
    'kept in the message',
  );

  await s.daemon.scheduler.drain();
  await s.daemon.dispatcher.drain();
  const events = rx.on('/events').map((x) => JSON.parse(x.body) as Json);
  const mine = events.filter((e) => e.data.message_id === id);
  t.same(mine.map((e) => e.type).sort(), ['email.bounced', 'email.delivered', 'recipient.suppressed']);
  for (const e of mine) t.equal(e.data.header_message_id, bare, `${e.type} carries the application's Message-ID`);
  t.ok(
    rx.on('/events').every((x) => x.verified),
    'signed',
  );
});

t.test('a message without its own Message-ID: header_message_id is posthaste id', async (t) => {
  const py = `
import smtplib, ssl, sys
with smtplib.SMTP('127.0.0.1', int(sys.argv[1])) as c:
    c.starttls(context=ssl.create_default_context(cafile=sys.argv[3]))
    c.login('posthaste', sys.argv[2])
    c.sendmail('a@app', ['bo@good.test'], 'From: shop@example.com\\r\\nTo: bo@good.test\\r\\nSubject: none\\r\\n\\r\\nb\\r\\n')
    print(c.noop())
`;
  const r = await runProgram('/usr/bin/python3', ['-c', py, String(port), key, fixturePath('tls/ca.pem')]);
  t.equal(r.code, 0, r.out);
  const row = (await s.sql.get("SELECT message_id FROM messages WHERE subject = 'none'")) as { message_id: string };
  t.equal((await getEmail(s.url, key, row.message_id)).header_message_id, row.message_id);
});
