import { execFileSync } from 'node:child_process';
import t from 'tap';
import { TestDnsServer } from '../../support/dns-server.js';
import { freePort, PostfixPeer, postfixAvailable } from '../../support/postfix.js';
import { waitFor } from '../../support/wait.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import {
  customerId,
  makeDomain,
  makeKey,
  publishDomainTxt,
  startTestServer,
  type TestServer,
  tempDir,
} from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { withPeer } from '../helpers/peers.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// Debian's Postfix as the peer on the other side, both ways: posthaste delivers to it, it bounces
// to posthaste in its own words, and it relays mail into posthaste's inbound listener.
// A DKIM verifier that is not ours: dkimpy (Debian's python3-dkim), with its DNS answered from the
// records posthaste publishes instead of the network.
const PY_VERIFY = `
import sys, json, dkim
records = json.loads(sys.argv[1])
def txt(name, timeout=5):
    return records.get(name.decode().rstrip('.'), '').encode() or None
print('pass' if dkim.verify(sys.stdin.buffer.read(), dnsfunc=txt) else 'fail')
`;

function dkimpyVerify(message: Buffer, records: Record<string, string>): string {
  return execFileSync('/usr/bin/python3', ['-c', PY_VERIFY, JSON.stringify(records)], { input: message })
    .toString()
    .trim();
}

const until = <T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 20_000): Promise<T> =>
  waitFor(what, probe, ms, 100);

async function run(): Promise<void> {
  const dns = await new TestDnsServer().start();
  const postfixPort = await freePort();
  dns.set('peer.test', { MX: [{ preference: 10, exchange: 'mx.peer.test' }] });
  dns.set('mx.peer.test', { A: ['127.0.0.1'] });

  const s: TestServer = await startTestServer(
    `[outbound]\nport = ${postfixPort}\n[inbound]\nrate_per_minute = 1000\n`,
    { manualDelivery: true, dns: dns.server },
  );
  const key = await makeKey(s.store);
  await makeDomain(s.store, 'example.com');
  await s.store.domains.add({
    customerId: await customerId(s.store),
    name: 'in.example.com',
    receiving: true,
    now: Date.now(),
  });
  const published = await publishDomainTxt(s.store, dns, 'example.com');

  const dir = tempDir('posthaste-postfix-');
  const peer = new PostfixPeer({
    dir: dir.path,
    port: postfixPort,
    relayPort: s.daemon.smtp.port,
    hostname: 'mx.peer.test',
    mailboxes: { domain: 'peer.test', users: ['alice'] },
    tls: { cert: fixturePath('tls/server.pem'), key: fixturePath('tls/server-key.pem') },
    extra: [
      // Postfix logs each command a peer on this list sends, so a test can tell BDAT from DATA.
      'debug_peer_list = 127.0.0.1',
      // One address refused at RCPT TO, as a real MX refuses an unknown user.
      'smtpd_recipient_restrictions = check_recipient_access inline:{ a-refused@peer.test=REJECT }, permit_mynetworks, reject_unauth_destination',
    ],
  }).start();
  t.teardown(async () => {
    peer.stop();
    await s.close();
    await dns.stop();
    dir.remove();
  });

  const send = async (to: string | string[], subject: string): Promise<string> => {
    const id = await sendEmail(s.url, key, {
      from: 'Shop <shop@example.com>',
      to,
      subject,
      text_body: 'Thanks for your order.\n.\nA line with a dot.',
    });
    await s.daemon.scheduler.drain();
    return id;
  };
  const events = async (id: string): Promise<Json[]> => (await getEmail(s.url, key, id)).events;

  t.test('delivered to Postfix over STARTTLS, and its DKIM signature verifies with dkimpy', async (t) => {
    const id = await send('alice@peer.test', 'Order 1');
    const ev = await events(id);
    t.match(ev.find((e) => e.type === 'email.delivered')?.data, {
      recipient: 'alice@peer.test',
      mx: 'mx.peer.test',
      tls: true,
      response: { code: 250, message: /queued as/ },
    });
    const [got] = await until('the message in alice’s mailbox', () => {
      const box = peer.mailbox('alice');
      return box.length ? box : undefined;
    });
    const text = got!.toString('latin1');
    t.match(text, /^Return-Path: <bounces\+[0-9a-z]{20}@bounces\.test\.posthaste>/m, 'the VERP return path');
    t.match(text, /with ESMTPS id/, 'Postfix recorded the session as TLS');
    t.match(
      peer.log(),
      /< [^ ]*\[127\.0\.0\.1\]: BDAT \d+ LAST/,
      'sent with BDAT, which Postfix offers (CHUNKING, RFC 3030)',
    );
    t.notMatch(peer.log(), /< [^ ]*\[127\.0\.0\.1\]: DATA\b/, 'not DATA');
    t.match(
      text,
      /\nThanks for your order\.\n\.\nA line with a dot\./,
      'the body arrived intact, its line with only a dot too',
    );
    // The Received and Return-Path lines Postfix added precede the signature and are not signed.
    t.equal(dkimpyVerify(got!, published), 'pass', 'dkimpy verifies the signature against the published key');
    const tampered = Buffer.from(text.replace('Thanks for your order.', 'Thanks for your order!'), 'latin1');
    t.equal(dkimpyVerify(tampered, published), 'fail', 'and rejects the same message altered');
  });

  t.test(
    "an unknown user: Postfix's own DSN comes back to the return path, email.bounced (async) and a suppression",
    async (t) => {
      const id = await send('ghost@peer.test', 'Order 2');
      t.same(
        (await events(id)).map((e) => e.type),
        ['email.delivered'],
        'Postfix accepted it (unlisted recipients are not refused at RCPT)',
      );
      const ev = await until('the bounce', async () => {
        const e = await events(id);
        return e.length >= 3 ? e : undefined;
      });
      t.same(
        ev.map((e) => e.type),
        ['email.delivered', 'email.bounced', 'recipient.suppressed'],
      );
      t.match(ev[1].data, {
        bounce_type: 'async',
        recipient: 'ghost@peer.test',
        response: { enhanced_code: '5.1.1', classification: 'unknown_recipient' },
      });
      t.match(ev[2].data, { reason: 'hard_bounce', recipient: 'ghost@peer.test' });
      const report = (await s.sql.value(
        "SELECT raw FROM inbound_reports WHERE kind = 'dsn' ORDER BY id DESC",
      )) as Buffer;
      t.match(report.toString(), /Reporting-MTA: dns; mx\.peer\.test/, 'the stored report is the one Postfix wrote');
      const again = await request(`${s.url}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to: 'ghost@peer.test', subject: 's', text_body: 'b' },
      });
      t.equal(again.body.error?.code, 'recipient_suppressed');
    },
  );

  t.test(
    'a recipient Postfix refuses at RCPT TO, with BDAT and the message already sent behind it: Postfix reads the chunk, and the next transaction on the connection is delivered',
    async (t) => {
      const before = peer.mailbox('alice').length;
      const bdats = (peer.log().match(/: BDAT \d+ LAST/g) ?? []).length;
      // The address sorts first, so its transaction is the first on the connection.
      const id = await send(['a-refused@peer.test', 'alice@peer.test'], 'Order 3');
      const m = await getEmail(s.url, key, id);
      t.match(
        m.recipients.map((r: Json) => [r.address, r.state, r.last_response?.code]),
        [
          ['a-refused@peer.test', 'bounced', 554],
          ['alice@peer.test', 'delivered', 250],
        ],
      );
      t.equal(
        (peer.log().match(/: BDAT \d+ LAST/g) ?? []).length,
        bdats + 2,
        'both transactions sent BDAT, the refused one too',
      );
      t.notMatch(
        peer.log(),
        /command not recognized|[Uu]nrecognized command|improper command pipelining/,
        'Postfix never took the message for commands',
      );
      await until('the message in alice’s mailbox', () => (peer.mailbox('alice').length > before ? true : undefined));
    },
  );

  t.test("Postfix relays a message into posthaste's inbound listener", async (t) => {
    const c = await RawSmtp.connect(postfixPort);
    t.match(await c.cmd('EHLO client.sender.test'), /^250/);
    const raw =
      'From: Bob <bob@sender.test>\r\nTo: support@in.example.com\r\nSubject: Through Postfix\r\nMessage-ID: <through-postfix@sender.test>\r\n\r\nHello from the other side.\r\n';
    const r = await c.send('bob@sender.test', ['support@in.example.com'], raw);
    c.close();
    t.match(r.data, /^250 /, 'Postfix queued it');
    const stored = await until('the inbound message', async () => {
      const row = (await s.sql.get("SELECT id, raw FROM inbound_messages WHERE subject = 'Through Postfix'")) as
        | { id: string; raw: Buffer }
        | undefined;
      return row;
    });
    t.match(
      stored.raw.toString(),
      /Received: from client\.sender\.test .*\r?\n\s+by mx\.peer\.test \(Postfix\)/,
      "Postfix's Received line: it came through the peer",
    );
    const view = await request(`${s.url}/api/v1/inbound/${stored.id}`, { key });
    t.match(view.body, {
      subject: 'Through Postfix',
      text: /Hello from the other side\./,
      envelope: { mail_from: 'bob@sender.test', rcpt_to: ['support@in.example.com'] },
    });
  });
}

await withPeer(postfixAvailable(), run);
