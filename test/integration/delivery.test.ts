import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { parseReturnToken } from '../../src/domain/return-path.js';
import { ManualClock } from '../../src/lib/clock.js';
import { RETURN_PATH_SECRET } from '../../src/main.js';
import { eventsOf, getEmail, recipientOf, sendEmail } from '../helpers/api.js';
import { makeKey, publishDomainTxt } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { ScriptedPeer } from '../helpers/scripted-peer.js';

const clock = new ManualClock(Date.now());
const s = await startMailEnv({
  mxDomains: ['good.test'],
  outbound: 'connect_timeout = "1s"\ngreeting_timeout = "1s"\ncommand_timeout = "2s"\nconcurrency_per_domain = 3\n',
  daemon: { clock },
});
const { dns, mx, key: live } = s;
const sandbox = await makeKey(s.store, 'sandbox');
// Publish the sender domain's records where the remote side (mailauth) will look.
await publishDomainTxt(s.store, dns, 'example.com');
const port = mx.port;
const banner = await new ScriptedPeer({ banner: '421 4.3.2 mx busy, try again later' }).start(port, '127.0.0.3');
const silent = await new ScriptedPeer({ banner: null }).start(port, '127.0.0.4');
const drop = await new ScriptedPeer({ ehlo: ['8BITMIME'], dropInData: true }).start(port, '127.0.0.5');
// Offers CHUNKING, then answers BDAT as a command it does not know.
const chunkless = await new ScriptedPeer({
  ehlo: ['PIPELINING', 'CHUNKING'],
  answer: (l) => (l.startsWith('BDAT') ? '502 5.5.2 Error: command not recognized' : undefined),
}).start(port, '127.0.0.6');
t.teardown(async () => {
  await Promise.all([banner.stop(), silent.stop(), drop.stop(), chunkless.stop()]);
});

// The remote world, on loopback (good.test's MX is the environment's).
dns.set('twomx.test', {
  MX: [
    { preference: 10, exchange: 'dead.twomx.test' },
    { preference: 20, exchange: 'mx.twomx.test' },
  ],
});
dns.set('dead.twomx.test', { A: ['127.0.0.2'] }); // nothing listens there
dns.set('mx.twomx.test', { A: ['127.0.0.1'] });
// Each misbehaving peer is its own destination (destinations are named by their MX hosts'
// registrable domain): a 421 slows down its destination only.
dns.set('busy.test', { MX: [{ preference: 10, exchange: 'mx.busy.test' }] });
dns.set('busy2.test', {
  MX: [
    { preference: 10, exchange: 'mx.busy2.test' },
    { preference: 20, exchange: 'mx.good.test' },
  ],
});
dns.set('mx.busy.test', { A: ['127.0.0.3'] });
dns.set('mx.busy2.test', { A: ['127.0.0.3'] });
dns.set('silent.test', { MX: [{ preference: 10, exchange: 'mx.silent.test' }] });
dns.set('mx.silent.test', { A: ['127.0.0.4'] });
dns.set('drop.test', { MX: [{ preference: 10, exchange: 'mx.drop.test' }] });
dns.set('mx.drop.test', { A: ['127.0.0.5'] });
dns.set('chunkless.test', { MX: [{ preference: 10, exchange: 'mx.chunkless.test' }] });
dns.set('mx.chunkless.test', { A: ['127.0.0.6'] });
dns.set('nullmx.test', { MX: [{ preference: 0, exchange: '.' }] });
dns.set('arecord.test', { A: ['127.0.0.1'] }); // no MX: the implicit MX is the domain itself
dns.set('servfail.test', {});
dns.failures.set('servfail.test', 'SERVFAIL');
// The MX answers; its host's address lookup does not.
dns.set('hostfail.test', { MX: [{ preference: 10, exchange: 'mx.hostfail.test' }] });
dns.failures.set('mx.hostfail.test', 'SERVFAIL');

mx.script = (rcpt, attempt) => {
  const local = rcpt.split('@')[0]!;
  if (local.startsWith('nobody'))
    return { rcpt: [550, '5.1.1 <' + rcpt + '>: Recipient address rejected: User unknown in virtual mailbox table'] };
  if (local.startsWith('grey') && attempt === 1)
    return {
      rcpt: [451, '4.7.1 <' + rcpt + '>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/'],
    };
  if (local === 'full') return { rcpt: [452, '4.2.2 The email account that you tried to reach is over quota.'] };
  if (local === 'toolarge') return { data: [552, '5.3.4 Message size exceeds fixed maximum message size'] };
  // A provider's content filter, answering after DATA in the words of an unknown user (NTT docomo's style).
  if (local === 'filtered') return { data: [550, `Unknown user ${rcpt}`] };
  return undefined;
};

const send = (to: string | string[], key = live) =>
  sendEmail(s.url, key, {
    from: 'Shop <shop@example.com>',
    to,
    subject: 'Order',
    text_body: 'Thanks for your order.\n.\nA line with a dot.',
  });
const message = (id: string) => getEmail(s.url, live, id);
const recipient = recipientOf;
const events = eventsOf;

const deliver = () => s.daemon.scheduler.drain();

t.test('delivered: straight to the MX found through DNS, DKIM-valid, over STARTTLS, with its event', async (t) => {
  const before = mx.received.length;
  const id = await send('bob@good.test');
  await deliver();
  const m = await message(id);
  t.equal(recipient(m, 'bob@good.test').state, 'delivered');
  const [ev] = events(m, 'email.delivered');
  t.match(ev.data, {
    email_id: Number,
    message_id: id,
    from: 'Shop <shop@example.com>',
    subject: 'Order',
    recipient: 'bob@good.test',
    sandbox: false,
    mx: 'mx.good.test',
    tls: true,
    attempt: 1,
  });
  t.match(ev.data.response, { code: 250, message: /queued as TEST/ });
  t.match(ev.id, /^msg_/);
  t.equal(mx.received.length, before + 1);
  const got = mx.received[mx.received.length - 1]!;
  t.equal(got.secure, true, 'STARTTLS was used although the certificate is self-signed');
  t.same(got.to, ['bob@good.test']);
  const local = got.from.split('@')[0]!;
  t.match(got.from, /^bounces\+[0-9a-z]{20}@bounces\.test\.posthaste$/, 'per-recipient return path');
  const rcptId = parseReturnToken(await s.store.admin.secret(RETURN_PATH_SECRET), local.slice('bounces+'.length));
  t.equal(
    rcptId,
    ((await s.sql.get('SELECT id FROM recipients WHERE address = ?', 'bob@good.test')) as { id: number }).id,
    'the token maps back to the recipient',
  );
  t.match(
    got.data.toString(),
    /\r\nThanks for your order\.\r\n\.\r\nA line with a dot\./,
    'dot-stuffing undone by the receiver: the body arrives intact',
  );
  const resolver = new Resolver();
  resolver.setServers([dns.server]);
  const verified = await dkimVerify(got.data, {
    resolver: async (name: string, type: string) => (type === 'TXT' ? resolver.resolveTxt(name) : []),
  } as never);
  t.same(
    verified.results.map((r: Json) => [r.status.result, r.signingDomain]),
    [['pass', 'example.com']],
    'DKIM verifies against the published key',
  );
  t.equal(await storedComposed(id), null, 'no composed copy is kept once every recipient is done');
  t.equal(
    m.size,
    got.data.length - dkimHeaderLength(got.data),
    'its size is: the message as composed, before the signature',
  );
});

async function storedComposed(id: string): Promise<Buffer | null> {
  return ((await s.sql.get('SELECT raw FROM messages WHERE message_id = ?', id)) as { raw: Buffer | null }).raw;
}

/** The DKIM-Signature field the signer puts first, with its folded lines and their CRLF. */
function dkimHeaderLength(data: Buffer): number {
  const m = /^DKIM-Signature:.*\r\n(?:[ \t].*\r\n)*/.exec(data.toString('latin1'));
  if (!m) throw new Error('the message does not start with a DKIM-Signature field');
  return m[0].length;
}

t.test('first MX dead: the next one by preference delivers', async (t) => {
  const id = await send('carol@twomx.test');
  await deliver();
  const m = await message(id);
  t.equal(recipient(m, 'carol@twomx.test').state, 'delivered');
  t.equal(events(m, 'email.delivered')[0].data.mx, 'mx.twomx.test');
});

t.test('421 at the banner: deferred when it is the only MX, delivered through the next MX otherwise', async (t) => {
  const a = await send('dave@busy.test');
  const b = await send('erin@busy2.test');
  await deliver();
  const ma = await message(a);
  t.equal(recipient(ma, 'dave@busy.test').state, 'deferred');
  t.match(events(ma, 'email.deferred')[0].data, { attempt: 1, response: { code: 421, classification: String } });
  const mb = await message(b);
  t.equal(recipient(mb, 'erin@busy2.test').state, 'delivered');
  t.ok(banner.connections >= 2, 'the busy host was tried for both');
  // The 421 slows its destination down (outbound/throttle.ts); the one delivered through its next MX is not.
  t.match(await s.store.delivery.throttles(), [
    { destination: 'busy.test', strikes: 1, connections: 1, pausedUntil: clock.now() + 30_000, reason: { code: 421 } },
  ]);
});

t.test('451 greylisting, then delivered on the retry a minute later', async (t) => {
  const id = await send('grey@good.test');
  await deliver();
  let m = await message(id);
  const r = recipient(m, 'grey@good.test');
  t.equal(r.state, 'deferred');
  const [d] = events(m, 'email.deferred');
  t.match(d.data.response, { code: 451, enhanced_code: '4.7.1', classification: 'greylisted' });
  t.equal(d.data.next_attempt_at, new Date(clock.now() + 60_000).toISOString(), 'first retry after 1 m');
  await deliver();
  t.equal(recipient(await message(id), 'grey@good.test').state, 'deferred', 'not retried before it is due');
  clock.advance(60_000);
  await deliver();
  m = await message(id);
  t.equal(recipient(m, 'grey@good.test').state, 'delivered');
  t.equal(events(m, 'email.delivered')[0].data.attempt, 2);
});

t.test('452 deferrals on the retry schedule until max_queue_time, then bounced expired', async (t) => {
  const start = clock.now();
  const id = await send('full@good.test');
  const delays: number[] = [];
  let last = clock.now();
  for (let i = 0; i < 40; i++) {
    await deliver();
    const r = recipient(await message(id), 'full@good.test');
    if (r.state !== 'deferred') break;
    const next = Date.parse(r.next_attempt_at);
    delays.push(next - last);
    clock.set(next);
    last = next;
  }
  const m = await message(id);
  t.equal(recipient(m, 'full@good.test').state, 'bounced');
  t.same(
    delays.slice(0, 7).map((d) => d / 60_000),
    [1, 5, 15, 30, 60, 120, 240],
    'retry schedule 1m 5m 15m 30m 1h 2h 4h',
  );
  t.ok(
    delays.slice(7).every((d) => d === 4 * 3_600_000),
    'then every 4 h',
  );
  const [b] = events(m, 'email.bounced');
  t.match(b.data, { bounce_type: 'expired', response: { code: 452, classification: 'mailbox_full' } });
  t.ok(clock.now() - start <= 72 * 3_600_000, 'within max_queue_time');
  t.equal(events(m, 'recipient.suppressed').length, 0, 'an expiry does not suppress');
});

t.test('550 hard bounce: bounced, suppressed, recipient.suppressed, and a later send is refused', async (t) => {
  const id = await send('nobody@good.test');
  await deliver();
  const m = await message(id);
  t.equal(recipient(m, 'nobody@good.test').state, 'bounced');
  t.match(events(m, 'email.bounced')[0].data, {
    bounce_type: 'hard',
    response: { code: 550, enhanced_code: '5.1.1', classification: 'unknown_recipient' },
  });
  t.match(events(m, 'recipient.suppressed')[0].data, {
    recipient: 'nobody@good.test',
    reason: 'hard_bounce',
    message_id: id,
  });
  const again = await request(`${s.url}/api/v1/emails`, {
    key: live,
    body: { from: 'shop@example.com', to: 'nobody@good.test', subject: 'x', text_body: 'x' },
  });
  t.equal(again.status, 422);
  t.equal(again.body.error.code, 'recipient_suppressed');
});

t.test('552 after DATA: a hard bounce of the message, the address is not suppressed', async (t) => {
  const id = await send('toolarge@good.test');
  await deliver();
  const m = await message(id);
  t.match(events(m, 'email.bounced')[0].data, {
    bounce_type: 'hard',
    response: { code: 552, classification: 'message_too_large' },
  });
  t.equal(events(m, 'recipient.suppressed').length, 0);
});

/** Rewrites a queued message's stored request, as an older build (or looser rules) would have accepted it. */
const storeRequest = async (id: string, change: (body: Record<string, unknown>) => Record<string, unknown>) => {
  const row = (await s.sql.get('SELECT request FROM messages WHERE message_id = ?', id)) as { request: Buffer };
  await s.sql.run(
    'UPDATE messages SET request = ? WHERE message_id = ?',
    Buffer.from(JSON.stringify(change(JSON.parse(row.request.toString())))),
    id,
  );
};

t.test('a queued message accepted under looser rules is delivered as it was accepted, not judged again', async (t) => {
  const id = await send('gina@good.test');
  // Today's validation refuses a subject over 998 characters and more than 10 tags.
  const subject = Array.from({ length: 160 }, (_, i) => `word${i}`).join(' ');
  t.ok(subject.length > 998, `a subject of ${subject.length} characters`);
  await storeRequest(id, (b) => ({ ...b, subject, tags: Array.from({ length: 12 }, (_, i) => `t${i}`) }));
  await deliver();
  const m = await message(id);
  t.equal(recipient(m, 'gina@good.test').state, 'delivered');
  const got = mx.received.find((r) => r.to[0] === 'gina@good.test')!;
  const parsed = await simpleParser(got.data);
  t.equal(parsed.subject, subject, 'the subject as stored, folded on the wire');
});

t.test(
  'a queued message whose stored request cannot be read bounces at once, not after days of retries, and suppresses nobody',
  async (t) => {
    const id = await send('frank@good.test');
    await storeRequest(id, (b) => ({ ...b, subject: 42 }));
    const before = mx.received.length;
    await deliver();
    const m = await message(id);
    t.equal(recipient(m, 'frank@good.test').state, 'bounced');
    t.match(events(m, 'email.bounced')[0].data, {
      bounce_type: 'hard',
      response: { code: 554, enhanced_code: '5.6.0', classification: 'policy', message: /cannot be read: subject/ },
    });
    t.equal(events(m, 'recipient.suppressed').length, 0, 'the address is not to blame');
    t.equal(mx.received.length, before, 'nothing was sent');
  },
);

t.test(
  '"550 Unknown user" after DATA bounces the message but does not suppress: the server accepted the address at RCPT TO',
  async (t) => {
    const id = await send('filtered@good.test');
    await deliver();
    const m = await message(id);
    t.equal(recipient(m, 'filtered@good.test').state, 'bounced');
    t.match(events(m, 'email.bounced')[0].data, {
      bounce_type: 'hard',
      response: { code: 550, classification: 'unknown_recipient' },
    });
    t.equal(events(m, 'recipient.suppressed').length, 0);
    t.equal(
      (
        await request(`${s.url}/api/v1/emails`, {
          key: live,
          body: { from: 'shop@example.com', to: 'filtered@good.test', subject: 's', text_body: 'b' },
        })
      ).status,
      202,
      'a later send is accepted',
    );
  },
);

t.test('a connection dropped mid-DATA and a silent peer are deferrals', async (t) => {
  const a = await send('x@drop.test');
  const b = await send('y@silent.test');
  await deliver();
  const ma = await message(a);
  t.equal(recipient(ma, 'x@drop.test').state, 'deferred');
  t.equal(events(ma, 'email.deferred')[0].data.response.classification, 'connection_failure');
  const mb = await message(b);
  t.equal(recipient(mb, 'y@silent.test').state, 'deferred');
  t.equal(events(mb, 'email.deferred')[0].data.response.classification, 'timeout');
});

t.test(
  'a server that offers CHUNKING but does not know BDAT: deferred, not bounced, and sent DATA from then on',
  async (t) => {
    const id = await send(['c1@chunkless.test', 'c2@chunkless.test']);
    await deliver();
    let m = await message(id);
    t.equal(recipient(m, 'c1@chunkless.test').state, 'deferred', 'the 502 says nothing about the message');
    t.match(events(m, 'email.deferred')[0].data.response, {
      code: 451,
      enhanced_code: '4.5.0',
      message: /offered CHUNKING but answered BDAT with "502 5\.5\.2/,
    });
    t.equal(
      recipient(m, 'c2@chunkless.test').state,
      'delivered',
      'the rest of the group went over a new connection, with DATA',
    );
    t.equal(chunkless.reads.flat().filter((l) => l.startsWith('BDAT')).length, 1, 'BDAT was tried once');
    clock.advance(60_000);
    await deliver();
    m = await message(id);
    t.equal(recipient(m, 'c1@chunkless.test').state, 'delivered', 'and the retry too');
    t.equal(chunkless.reads.flat().filter((l) => l.startsWith('BDAT')).length, 1, 'no BDAT again that day');
    t.equal(chunkless.messages.filter((x) => x.endsWith('\r\n.\r\n')).length, 2, 'both sent with DATA');
    // A day on, on the daemon's clock, the server is given BDAT again (and still refuses it).
    clock.advance(24 * 3_600_000);
    const later = await send('c3@chunkless.test');
    await deliver();
    t.equal(chunkless.reads.flat().filter((l) => l.startsWith('BDAT')).length, 2, 'BDAT tried once more after a day');
    t.equal(recipient(await message(later), 'c3@chunkless.test').state, 'deferred');
  },
);

t.test('DNS: NXDOMAIN and null MX bounce at once, SERVFAIL defers, no MX falls back to the A record', async (t) => {
  const nx = await send('a@nxdomain.test');
  const nul = await send('b@nullmx.test');
  const sf = await send('c@servfail.test');
  const ar = await send('d@arecord.test');
  await deliver();
  t.match(events(await message(nx), 'email.bounced')[0].data, {
    bounce_type: 'hard',
    response: { code: 550, enhanced_code: '5.1.2', classification: 'dns_failure' },
  });
  t.match(events(await message(nul), 'email.bounced')[0].data, {
    bounce_type: 'hard',
    response: { code: 556, enhanced_code: '5.1.10', classification: 'dns_failure' },
  });
  const msf = await message(sf);
  t.equal(recipient(msf, 'c@servfail.test').state, 'deferred');
  t.equal(events(msf, 'email.deferred')[0].data.response.classification, 'dns_failure');
  t.match(
    events(msf, 'email.deferred')[0].data.response.message,
    /the DNS server did not answer the MX query for servfail\.test \(SERVFAIL\): check that 127\.0\.0\.1:\d+ answers, or set dns\.servers/,
    'a resolver failure is not told as a missing record: it names the servers asked and dns.servers',
  );
  const hf = await send('e@hostfail.test');
  await deliver();
  const hfm = await message(hf);
  t.equal(recipient(hfm, 'e@hostfail.test').state, 'deferred');
  t.match(events(hfm, 'email.deferred')[0].data.response, {
    classification: 'dns_failure',
    message: /did not answer the A\/AAAA query for mx\.hostfail\.test \(SERVFAIL\).*dns\.servers/,
  });
  t.equal(recipient(await message(ar), 'd@arecord.test').state, 'delivered');
});

t.test('several recipients of one message end differently, each with its own event', async (t) => {
  const id = await send(['ok1@good.test', 'nobody2@good.test', 'grey2@good.test', 'late@good.test']);
  // Suppressed after it was queued: delivery checks the list again and does not send.
  await s.store.suppressions.add({ customerId: 1, address: 'late@good.test', reason: 'manual', now: clock.now() });
  await deliver();
  const m = await message(id);
  t.equal(recipient(m, 'ok1@good.test').state, 'delivered');
  t.equal(recipient(m, 'nobody2@good.test').state, 'bounced');
  t.equal(recipient(m, 'grey2@good.test').state, 'deferred');
  t.equal(recipient(m, 'late@good.test').state, 'suppressed');
  t.equal(mx.attempts.get('late@good.test'), undefined, 'never offered to the MX');
  t.equal(events(m, 'email.delivered').length, 1);
  t.equal(events(m, 'email.bounced').length, 1);
  t.equal(events(m, 'email.deferred').length, 1);

  // One recipient is left to retry: the composed message is kept for it, and it gets the same bytes.
  const kept = await storedComposed(id);
  t.not(kept, null, 'the composed copy is kept while a recipient may still be sent to');
  const first = mx.received.find((r) => r.to.includes('ok1@good.test'))!;
  t.same(first.data.subarray(dkimHeaderLength(first.data)), kept, 'what is kept is what was sent, after the signature');
  clock.advance(60_000);
  await deliver();
  t.equal(recipient(await message(id), 'grey2@good.test').state, 'delivered', 'delivered on the retry');
  const retried = mx.received.find((r) => r.to.includes('grey2@good.test'))!;
  t.same(retried.data.subarray(dkimHeaderLength(retried.data)), kept, 'the retry sends the same bytes');
  t.equal(await storedComposed(id), null, 'and the copy goes once no recipient is left to send to');
  t.equal((await message(id)).size, kept!.length, 'the size stays');
});

t.test(
  'recipients at two destinations, one deferred: both get the same bytes, kept until the second is done',
  async (t) => {
    const id = await send(['ok3@good.test', 'grey3@arecord.test']);
    await deliver();
    let m = await message(id);
    t.equal(recipient(m, 'ok3@good.test').state, 'delivered');
    t.equal(recipient(m, 'grey3@arecord.test').state, 'deferred');
    const kept = await storedComposed(id);
    t.not(kept, null, 'kept for the deferred recipient at the other destination');
    clock.advance(60_000);
    await deliver();
    m = await message(id);
    t.equal(recipient(m, 'grey3@arecord.test').state, 'delivered');
    const bodies = ['ok3@good.test', 'grey3@arecord.test'].map((a) => {
      const r = mx.received.find((x) => x.to.includes(a))!;
      return r.data.subarray(dkimHeaderLength(r.data));
    });
    t.same(bodies[0], kept);
    t.same(bodies[1], kept, 'one message, one set of bytes, whichever destination');
    t.equal(await storedComposed(id), null);
  },
);

t.test('several messages to one domain share a connection', async (t) => {
  const before = mx.connections;
  const received = mx.received.length;
  for (let i = 0; i < 5; i++) await send(`share${i}@good.test`);
  await deliver();
  t.equal(mx.received.length, received + 5);
  t.equal(mx.connections - before, 1, 'one connection for five messages');
});

t.test('sandbox keys never connect; the simulator domain chooses each outcome', async (t) => {
  const conns = mx.connections;
  const plain = await send('someone@good.test', sandbox);
  const sim = Object.fromEntries(
    await Promise.all(
      ['delivered', 'bounced', 'async-bounced', 'deferred', 'expired', 'complained'].map(async (l) => [
        l,
        await send(`${l}@simulator.posthaste.test`, sandbox),
      ]),
    ),
  ) as Record<string, string>;
  await deliver();
  t.equal(mx.connections, conns, 'no connection was opened');
  clock.advance(60_000); // the simulated deferrals come due (and earlier live deferrals with them)
  await deliver();
  t.equal(mx.attempts.get('someone@good.test'), undefined, 'the MX never saw a sandbox recipient');
  const get = (id: string) => getEmail(s.url, sandbox, id);
  const p = await get(plain);
  t.match(events(p, 'email.delivered')[0].data, { sandbox: true, recipient: 'someone@good.test' });
  const types = async (l: string) => (await get(sim[l]!)).events.map((e: Json) => e.type);
  t.same(await types('delivered'), ['email.delivered']);
  t.same(await types('bounced'), ['email.bounced', 'recipient.suppressed']);
  t.same(await types('async-bounced'), ['email.delivered', 'email.bounced', 'recipient.suppressed']);
  t.same(await types('deferred'), ['email.deferred', 'email.delivered']);
  t.same(await types('expired'), ['email.deferred', 'email.bounced']);
  t.same(await types('complained'), ['email.delivered', 'email.complained', 'recipient.suppressed']);
  const ab = await get(sim['async-bounced']!);
  t.equal(events(ab, 'email.bounced')[0].data.bounce_type, 'async');
  t.equal(events(await get(sim.expired!), 'email.bounced')[0].data.bounce_type, 'expired');
  t.match(events(await get(sim.complained!), 'email.complained')[0].data, {
    feedback_type: 'abuse',
    user_agent: String,
    sandbox: true,
  });
  const n = await s.sql.value("SELECT COUNT(*) FROM suppressions WHERE address LIKE '%@simulator.posthaste.test'");
  t.equal(n, 0, 'the real suppression list is untouched');
  const again = await request(`${s.url}/api/v1/emails`, {
    key: sandbox,
    body: { from: 'shop@example.com', to: 'bounced@simulator.posthaste.test', subject: 'x', text_body: 'x' },
  });
  t.equal(again.status, 202, 'so the simulator address can be used again');
});
