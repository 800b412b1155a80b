import t from 'tap';
import { freePort, PostfixPeer, postfixAvailable } from '../../support/postfix.js';
import { waitFor } from '../../support/wait.js';
import { getEmail } from '../helpers/api.js';
import { makeDomain, makeKey, publishDomainTxt, startTestServer, type TestServer, tempDir } from '../helpers/env.js';
import type { Json } from '../helpers/http.js';
import { mxOfDomain } from '../helpers/mail-env.js';
import { withPeer } from '../helpers/peers.js';
import { RawSmtp } from '../helpers/smtp-client.js';
import { dkimResults, submissionToml } from '../helpers/submission.js';

// Debian's Postfix as a machine's local MTA with posthaste as its smarthost: relayhost on the
// submission listener, SASL with an API key as the password, TLS required
// (smtp_tls_security_level = encrypt). Mail handed to Postfix reaches posthaste's queue, is
// DKIM-signed and delivered to a loopback MX.

async function run(): Promise<void> {
  const { dns, mx } = await mxOfDomain('good.test');
  const s: TestServer = await startTestServer(`[outbound]\nport = ${mx.port}\n` + submissionToml(), {
    manualDelivery: true,
    dns: dns.server,
  });
  const key = await makeKey(s.store);
  await makeDomain(s.store, 'example.com');
  const published = await publishDomainTxt(s.store, dns, 'example.com');
  const submissionPort = s.daemon.submission['submission.listen']!.port;

  const dir = tempDir('posthaste-postfix-');
  const port = await freePort();
  const relay = `[127.0.0.1]:${submissionPort}`;
  const peer = new PostfixPeer({
    dir: dir.path,
    port,
    relayPort: submissionPort,
    hostname: 'host.app.test',
    extra: [
      'smtp_sasl_auth_enable = yes',
      `smtp_sasl_password_maps = inline:{ ${relay}=posthaste:${key} }`,
      'smtp_sasl_security_options = noanonymous',
      'smtp_sasl_tls_security_options = noanonymous',
      'smtp_tls_security_level = encrypt',
      'smtp_tls_loglevel = 1',
    ],
  }).start();
  t.teardown(async () => {
    peer.stop();
    await s.close();
    dir.remove();
  });

  t.test(
    'a message handed to Postfix is relayed over TLS with SASL, queued by posthaste, DKIM-signed and delivered',
    async (t) => {
      const c = await RawSmtp.connect(port);
      t.match(await c.cmd('EHLO app.test'), /^250/);
      const raw =
        'From: Shop <shop@example.com>\r\nTo: Alice <alice@good.test>\r\nSubject: Through the smarthost\r\nMessage-ID: <smarthost-1@host.app.test>\r\n' +
        'X-Posthaste-Tag: cron\r\n\r\nThe nightly report.\r\n';
      // The local sender, as a cron job's mail has it: posthaste does not judge MAIL FROM.
      const r = await c.send('root@host.app.test', ['alice@good.test'], raw);
      c.close();
      t.match(r.data, /^250 /, 'Postfix queued it');
      const row = await waitFor(
        'the message in posthaste’s queue',
        async () =>
          (await s.sql.get("SELECT message_id FROM messages WHERE subject = 'Through the smarthost'")) as
            | { message_id: string }
            | undefined,
        30_000,
        100,
      );
      const log = await waitFor(
        'Postfix’s log line for the relay',
        () => /status=sent \(250 2\.0\.0 Ok: queued as (\S+)\)/.exec(peer.log()) ?? undefined,
        10_000,
        100,
      );
      t.equal(log[1], row.message_id, "Postfix logged posthaste's 250 naming the message id");
      t.match(
        peer.log(),
        /(Trusted|Untrusted|Verified) TLS connection established to 127\.0\.0\.1\[127\.0\.0\.1\]:\d+/,
        'over TLS',
      );
      t.match(peer.log(), new RegExp(`relay=127\\.0\\.0\\.1\\[127\\.0\\.0\\.1\\]:${submissionPort}`));
      const m = await getEmail(s.url, key, row.message_id);
      t.match(m, { from: 'Shop <shop@example.com>', tags: ['cron'] });
      t.same(
        (m.recipients as Json[]).map((x) => x.address),
        ['alice@good.test'],
      );

      await s.daemon.scheduler.drain();
      const got = await waitFor(
        'the message at the MX',
        () => mx.received.find((x) => x.to.includes('alice@good.test')),
        10_000,
        50,
      );
      const text = got.data.toString('latin1');
      t.match(
        got.from,
        /^bounces\+[0-9a-z]{20}@bounces\.test\.posthaste$/,
        "posthaste's return path, not root@host.app.test",
      );
      t.match(
        text,
        /^Received: from host\.app\.test \(\[127\.0\.0\.1\]\)\r\n\tby mx\.test\.posthaste \(posthaste\) with ESMTPSA id/m,
        "posthaste's Received line: authenticated, over TLS",
      );
      t.match(
        text,
        /^Received: from app\.test \(localhost \[127\.0\.0\.1\]\)\r\n\tby host\.app\.test \(Postfix\) with ESMTP id/m,
        "Postfix's own Received line is kept",
      );
      t.match(text, /^Message-ID: <smarthost-1@host\.app\.test>/m, "the client's Message-ID is kept");
      t.notMatch(text, /^X-Posthaste-Tag/im);
      t.same(await dkimResults(got.data, published), ['example.com:pass'], 'DKIM-signed by example.com');
      t.same(
        ((await getEmail(s.url, key, row.message_id)).events as Json[]).map((e) => e.type),
        ['email.delivered'],
      );
    },
  );

  t.test('a wrong key: Postfix keeps the message and says why; nothing reaches posthaste', async (t) => {
    peer.postconf('-e', `smtp_sasl_password_maps = inline:{ ${relay}=posthaste:ph_live_${'x'.repeat(40)} }`);
    peer.reload();
    const before = Number(await s.sql.value('SELECT count(*) FROM messages'));
    const c = await RawSmtp.connect(port);
    await c.cmd('EHLO app.test');
    t.match(
      (
        await c.send(
          'root@host.app.test',
          ['alice@good.test'],
          'From: shop@example.com\r\nTo: alice@good.test\r\nSubject: wrong key\r\n\r\nb\r\n',
        )
      ).data,
      /^250 /,
    );
    c.close();
    const said = await waitFor(
      'Postfix’s deferral',
      () =>
        /status=deferred \(.*SASL authentication failed; server 127\.0\.0\.1\[127\.0\.0\.1\] said: 535 5\.7\.8 ([^)]*)/.exec(
          peer.log(),
        ) ?? undefined,
      30_000,
      100,
    );
    t.match(said[1], /Authentication credentials invalid/);
    t.ok(peer.queued() >= 1, 'the message waits in Postfix’s queue');
    t.equal(Number(await s.sql.value('SELECT count(*) FROM messages')), before);
  });
}

await withPeer(postfixAvailable(), run);
