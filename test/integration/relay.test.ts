// outbound.relay: everything through a submission host instead of direct to MX. The relay is a
// real SMTP server on loopback (smtp-server) with a certificate from the test CA for "localhost",
// requiring STARTTLS and AUTH; the recipients' domains have no DNS at all, so mail that arrives
// can only have come through the relay.

import { Resolver } from 'node:dns/promises';
import { writeFileSync } from 'node:fs';
import type net from 'node:net';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { SMTPServer } from 'smtp-server';
import t from 'tap';
import { describeConfig, loadConfig } from '../../src/config/load.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { publishDomainTxt, startTestServer, type TestServer, tempDir } from '../helpers/env.js';
import { fixture, fixturePath } from '../helpers/fixtures.js';
import type { Json } from '../helpers/http.js';
import { type MailEnv, startMailEnv } from '../helpers/mail-env.js';

const USER = 'posthaste@relay';
const PASSWORD = 'correct horse battery staple';

/** A submission server: TLS (STARTTLS, or implicit), AUTH PLAIN/LOGIN for one user; records everything. */
class TestRelay {
  received: Array<{ from: string; to: string[]; data: Buffer; user: unknown; secure: boolean }> = [];
  authAttempts: Array<{ method: string; secure: boolean }> = [];
  mailCommands = 0;
  private server: SMTPServer;
  port = 0;

  constructor(opts: { implicitTls?: boolean; noStartTls?: boolean; selfSigned?: boolean } = {}) {
    this.server = new SMTPServer({
      ...(opts.selfSigned ? {} : { key: fixture('tls/server-key.pem'), cert: fixture('tls/server.pem') }),
      secure: !!opts.implicitTls,
      // No STARTTLS at all: not advertised, and the command refused if sent anyway.
      ...(opts.noStartTls ? { hideSTARTTLS: true, disabledCommands: ['STARTTLS'] } : {}),
      // MAIL FROM without AUTH is refused by onMailFrom below (and counted), not by smtp-server.
      authOptional: true,
      // smtp-server refuses AUTH before TLS unless told otherwise; allowing it here shows that
      // posthaste itself never offers credentials in plaintext.
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      disableReverseLookup: true,
      logger: false,
      onAuth: (auth, session, cb) => {
        this.authAttempts.push({ method: auth.method, secure: session.secure });
        if (auth.username === USER && auth.password === PASSWORD) return cb(null, { user: auth.username });
        cb(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }));
      },
      onMailFrom: (_address, session, cb) => {
        this.mailCommands++;
        if (!session.user) return cb(Object.assign(new Error('5.7.0 Authentication required'), { responseCode: 530 }));
        cb();
      },
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          this.received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
            data: Buffer.concat(chunks),
            user: session.user,
            secure: session.secure,
          });
          cb(null, 'Ok: queued as RELAYED');
        });
      },
    });
    this.server.on('error', () => undefined);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.server.address() as net.AddressInfo).port;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const dir = tempDir();
const passwordFile = join(dir.path, 'relay-password');
writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
const wrongFile = join(dir.path, 'wrong-password');
writeFileSync(wrongFile, 'not the password\n', { mode: 0o600 });
t.teardown(() => dir.remove());

async function withRelay(
  relayOpts: ConstructorParameters<typeof TestRelay>[0],
  url: (port: number) => string,
  extra: string,
  fn: (s: MailEnv, relay: TestRelay, key: string) => Promise<void>,
): Promise<void> {
  const relay = await new TestRelay(relayOpts).start();
  // The environment's MX is never named in DNS: mail can reach nothing but the relay.
  const s = await startMailEnv({
    outbound: `relay = "${url(relay.port)}"\n${extra}tls_ca_file = "${fixturePath('tls/ca.pem')}"\nconnect_timeout = "2s"\ngreeting_timeout = "2s"\ncommand_timeout = "3s"\n`,
  });
  try {
    s.dns.set('localhost', { A: ['127.0.0.1'] });
    await publishDomainTxt(s.store, s.dns, 'example.com');
    await fn(s, relay, s.key);
  } finally {
    await s.stop();
    await relay.stop();
  }
}

async function sendAndDeliver(s: TestServer, key: string, to: string[]): Promise<Json> {
  const id = await sendEmail(s.url, key, {
    from: 'Shop <shop@example.com>',
    to,
    subject: 'Through the relay',
    text_body: 'Relayed.',
  });
  await s.daemon.scheduler.drain();
  return getEmail(s.url, key, id);
}

const auth = `relay_user = "${USER}"\nrelay_password_file = "${passwordFile}"\n`;

t.test('smtp:// with STARTTLS and AUTH: every domain goes through the relay, signed with our DKIM key', async (t) => {
  await withRelay(
    {},
    (port) => `smtp://localhost:${port}`,
    auth,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['ann@nowhere.test', 'bob@elsewhere.test']);
      t.same(
        m.recipients.map((r: Json) => r.state),
        ['delivered', 'delivered'],
        'domains without any DNS are delivered: through the relay',
      );
      t.equal(relay.received.length, 2);
      t.same(
        relay.authAttempts,
        [
          { method: 'PLAIN', secure: true },
          { method: 'PLAIN', secure: true },
        ],
        'AUTH PLAIN, after STARTTLS, once per connection',
      );
      t.ok(
        relay.received.every((r) => r.secure && r.user === USER),
        'each message over TLS by the authenticated user',
      );
      const ev = m.events.find((e: Json) => e.type === 'email.delivered');
      t.match(
        ev.data,
        { mx: 'localhost', tls: true, tls_verified: true, response: { code: 250, message: /queued as RELAYED/ } },
        'the event names the relay host',
      );
      t.match(
        relay.received[0]!.from,
        /^bounces\+[0-9a-z]{20}@bounces\.test\.posthaste$/,
        'the per-recipient return path is kept',
      );
      const resolver = new Resolver();
      resolver.setServers([s.dns.server]);
      const verified = await dkimVerify(relay.received[0]!.data, {
        resolver: async (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : []),
      } as never);
      t.same(
        verified.results.map((r: Json) => [r.status.result, r.signingDomain]),
        [['pass', 'example.com']],
        'DKIM is still ours',
      );
    },
  );
});

t.test('smtps:// (implicit TLS, port 465 style) with AUTH', async (t) => {
  await withRelay(
    { implicitTls: true },
    (port) => `smtps://localhost:${port}`,
    auth,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['carol@nowhere.test']);
      t.equal(m.recipients[0].state, 'delivered');
      t.equal(relay.received.length, 1);
      t.equal(relay.received[0]!.secure, true);
    },
  );
});

t.test('a relay named by its address: its certificate is checked against the addresses it names', async (t) => {
  await withRelay(
    {},
    (port) => `smtp://127.0.0.1:${port}`,
    auth,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['dan@nowhere.test']);
      t.equal(m.recipients[0].state, 'delivered', 'the certificate names IP 127.0.0.1');
      t.equal(relay.received[0]!.secure, true);
    },
  );
});

t.test('a wrong password: deferred as auth_failure, nothing sent, nothing lost', async (t) => {
  await withRelay(
    {},
    (port) => `smtp://localhost:${port}`,
    `relay_user = "${USER}"\nrelay_password_file = "${wrongFile}"\n`,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['dan@nowhere.test']);
      t.equal(m.recipients[0].state, 'deferred', 'retried later, not bounced');
      t.equal(relay.received.length, 0);
      t.equal(relay.mailCommands, 0, 'no MAIL FROM after the refusal');
      const ev = m.events.find((e: Json) => e.type === 'email.deferred');
      t.match(ev.data.response, {
        code: 535,
        classification: 'auth_failure',
        message: /refused posthaste's credentials for posthaste@relay: 535 5\.7\.8/,
      });
      t.notMatch(JSON.stringify(m), /not the password/, 'the password appears nowhere in the message or its events');
    },
  );
});

t.test('a relay that does not offer STARTTLS: refused, never in plaintext', async (t) => {
  await withRelay(
    { noStartTls: true },
    (port) => `smtp://localhost:${port}`,
    auth,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['erin@nowhere.test']);
      t.equal(m.recipients[0].state, 'deferred');
      t.equal(m.events.find((e: Json) => e.type === 'email.deferred').data.response.classification, 'tls_failure');
      t.same(relay.authAttempts, [], 'no credentials sent over the plaintext connection');
      t.equal(relay.mailCommands, 0, 'no MAIL FROM in plaintext');
    },
  );
});

t.test('a relay whose certificate is not valid (self-signed): refused', async (t) => {
  await withRelay(
    { selfSigned: true },
    (port) => `smtp://localhost:${port}`,
    auth,
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['fay@nowhere.test']);
      t.equal(m.recipients[0].state, 'deferred');
      t.equal(m.events.find((e: Json) => e.type === 'email.deferred').data.response.classification, 'tls_failure');
      t.same(relay.authAttempts, []);
      t.equal(relay.received.length, 0);
    },
  );
});

t.test('a permanent refusal from the relay bounces as an MX refusal would', async (t) => {
  await withRelay(
    {},
    (port) => `smtp://localhost:${port}`,
    `relay_user = "someone-else"\nrelay_password_file = "${passwordFile}"\n`,
    async (s, _relay, key) => {
      // Credentials refused: deferred. The same relay refusing MAIL FROM without AUTH (no relay_user): a 5xx policy bounce.
      const m = await sendAndDeliver(s, key, ['gus@nowhere.test']);
      t.equal(m.recipients[0].state, 'deferred');
    },
  );
  await withRelay(
    {},
    (port) => `smtp://localhost:${port}`,
    '',
    async (s, relay, key) => {
      const m = await sendAndDeliver(s, key, ['hal@nowhere.test']);
      t.equal(m.recipients[0].state, 'bounced');
      t.match(m.events.find((e: Json) => e.type === 'email.bounced').data.response, {
        code: 530,
        classification: 'policy',
      });
      t.equal(relay.mailCommands, 1);
      t.equal(await s.sql.value('SELECT COUNT(*) FROM suppressions'), 0, 'a refusal of the sender suppresses nobody');
    },
  );
});

t.test('configuration: the URL is checked, the password is never printed, a user needs a password', async (t) => {
  const cfg = (toml: string, env: NodeJS.ProcessEnv = {}) => {
    const p = join(dir.path, 'c.toml');
    writeFileSync(p, toml);
    return loadConfig({ path: p, env });
  };
  t.throws(() => cfg('[outbound]\nrelay = "http://relay.example"\n'), /outbound\.relay: expected "smtp:\/\/host:587"/);
  t.throws(() => cfg('[outbound]\nrelay = "smtp://relay.example:70000"\n'), /out of range/);
  const c = cfg('[outbound]\nrelay = "smtp://relay.example"\nrelay_user = "u"\n', {
    POSTHASTE_OUTBOUND_RELAY_PASSWORD: 's3cret-from-env',
  });
  t.equal(c.outbound.relay_password, 's3cret-from-env');
  t.equal(describeConfig(c).outbound!.relay_password, '********');
  t.notMatch(JSON.stringify(describeConfig(c)), /s3cret/);
  const { relayTarget } = await import('../../src/config/settings.js');
  t.same(relayTarget(c), { host: 'relay.example', port: 587, implicitTls: false }, 'smtp:// defaults to 587');
  t.same(
    relayTarget(cfg('[outbound]\nrelay = "smtps://Relay.Example"\n')),
    { host: 'relay.example', port: 465, implicitTls: true },
    'smtps:// defaults to 465',
  );
  await t.rejects(
    startTestServer('[outbound]\nrelay = "smtp://relay.example"\nrelay_user = "u"\n'),
    /a relay user needs a password/,
  );
});
