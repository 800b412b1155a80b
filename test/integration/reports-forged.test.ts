import { randomBytes } from 'node:crypto';
import t from 'tap';
import { returnPath as makeReturnPath } from '../../src/domain/return-path.js';
import { getEmail } from '../helpers/api.js';
import { fixture } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

// A report changes state only when a token posthaste issued ties it to the recipient: the return
// path it came to, or the original's envelope sender quoted inside it. A Message-ID and an address
// are no secret (every recipient of a message sees both), so a report tied by nothing else is kept
// and changes nothing. Every shape of forgery below names a real message and a real recipient.

const FEEDBACK = 'fbl@mx.test.posthaste';
const s = await startMailEnv({ mxDomains: ['example.net'], daemon: { smtp: `feedback_address = "${FEEDBACK}"\n` } });
const { mx, key } = s;
const FIXTURE_VERP = 'bounces+0000001k5c2y8qh3h0wz@bounces.test.posthaste';
const FIXTURE_ID = '<01jdsnfixture00000000000000@example.com>';
const RP_DOMAIN = FIXTURE_VERP.split('@')[1]!;

/** Sends one message to two recipients and delivers it; their return paths as the MX saw them. */
async function deliverPair(a: string, b: string): Promise<{ id: string; paths: Record<string, string> }> {
  const r = await request(`${s.url}/api/v1/emails`, {
    key,
    body: { from: 'Shop <shop@example.com>', to: [a, b], subject: 'Your order', text_body: 'Thanks' },
  });
  await s.daemon.scheduler.drain();
  const paths: Record<string, string> = {};
  for (const m of mx.received) if (m.to[0] === a || m.to[0] === b) paths[m.to[0]!] = m.from;
  return { id: r.body.message_id as string, paths };
}

async function inject(rcpt: string, raw: Buffer): Promise<string> {
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO mx.example.net');
  const r = await c.send('', [rcpt], raw);
  c.close();
  return `${r.rcpt[0]} / ${r.data}`;
}

const eventTypes = async (id: string): Promise<string[]> =>
  ((await getEmail(s.url, key, id)).events as Json[]).map((e) => `${e.type} ${e.data.recipient}`);
const suppressed = async () =>
  ((await request(`${s.url}/api/v1/suppressions`, { key, method: 'GET' })).body.data as Array<{ address: string }>).map(
    (x) => x.address,
  );
const reportsKept = async () =>
  (await s.sql.value('SELECT COUNT(*) FROM inbound_reports WHERE recipient_id IS NULL')) as number;

/** A bounce of `victim`'s copy of message `id`, its envelope sender written as `sender`. */
function dsn(id: string, victim: string, sender: string): Buffer {
  return Buffer.from(
    fixture('dsn/postfix.eml')
      .toString()
      .replaceAll(FIXTURE_VERP, sender)
      .replaceAll(FIXTURE_ID, `<${id}>`)
      .replaceAll('bob@example.net', victim),
  );
}

/** A complaint about `victim`'s copy of message `id`, its quoted envelope sender written as `sender`. */
function arf(file: 'yahoo' | 'microsoft', id: string, victim: string, sender: string): Buffer {
  return Buffer.from(
    fixture(`arf/${file}.eml`)
      .toString()
      .replaceAll(FIXTURE_VERP, sender)
      .replaceAll(FIXTURE_ID, `<${id}>`)
      .replaceAll('bob@example.net', victim)
      .replaceAll('Original-Rcpt-To: REDACTED', `Original-Rcpt-To: ${victim}`),
  );
}

/** The same report with every quoted envelope sender taken out (Original-Mail-From, Return-Path). */
const withoutSender = (raw: Buffer) =>
  Buffer.from(raw.toString().replace(/^(Original-Mail-From|Return-Path):.*\r?\n/gim, ''));

t.test(
  'forged bounces and complaints that name a real message and recipient fire nothing and suppress nothing',
  async (t) => {
    const victim = 'ivy@example.net';
    const { id, paths } = await deliverPair(victim, 'jack@example.net');
    const real = paths[victim]!;
    const madeUp = `bounces+${randomBytes(10).toString('hex')}@${RP_DOMAIN}`;
    const wrongMac = real.replace(/bounces\+(\w{8})\w{12}@/, 'bounces+$1aaaaaaaaaaaa@');
    const otherSecret = makeReturnPath(randomBytes(32), 1, RP_DOMAIN);
    const shapes: Array<[string, string, Buffer]> = [
      ['a DSN to a made-up token', madeUp, dsn(id, victim, madeUp)],
      ['a DSN to a real recipient id with a forged MAC', wrongMac, dsn(id, victim, wrongMac)],
      ['a DSN to a token made with another secret', otherSecret, dsn(id, victim, otherSecret)],
      [
        'a DSN to the feedback address, Message-ID and recipient only',
        FEEDBACK,
        withoutSender(dsn(id, victim, madeUp)),
      ],
      ['a DSN to the feedback address quoting a forged sender', FEEDBACK, dsn(id, victim, wrongMac)],
      [
        'a complaint naming the Message-ID and recipient, no sender',
        FEEDBACK,
        withoutSender(arf('yahoo', id, victim, madeUp)),
      ],
      ['a complaint whose Original-Mail-From is forged', FEEDBACK, arf('yahoo', id, victim, wrongMac)],
      ["a JMRP complaint whose original's Return-Path is forged", FEEDBACK, arf('microsoft', id, victim, madeUp)],
      ['a complaint sent to a forged return path', wrongMac, withoutSender(arf('yahoo', id, victim, madeUp))],
    ];
    const keptBefore = await reportsKept();
    for (const [shape, rcpt, raw] of shapes)
      t.match(await inject(rcpt, raw), /^250 .*\/ 250/, `${shape}: accepted, no backscatter`);
    t.same(
      (await eventTypes(id)).sort(),
      [`email.delivered ${victim}`, 'email.delivered jack@example.net'].sort(),
      'no event fired',
    );
    t.same(await suppressed(), [], 'nothing suppressed');
    t.equal((await reportsKept()) - keptBefore, shapes.length, 'each kept, tied to no recipient');
    // A return path without a token is no address of posthaste's: refused before DATA.
    t.match(await inject(`bounces@${RP_DOMAIN}`, dsn(id, victim, `bounces@${RP_DOMAIN}`)), /^550 5\.7\.1 /);
    const again = await request(`${s.url}/api/v1/emails`, {
      key,
      body: { from: 'shop@example.com', to: victim, subject: 's', text_body: 'b' },
    });
    t.equal(again.status, 202, 'the victim can still be sent to');
  },
);

t.test("one recipient's own token bounces that recipient only, whatever address the report names", async (t) => {
  // A recipient knows its own return path (the Return-Path header of its copy): with it, a report
  // naming a fellow recipient of the same message changes the token's recipient alone.
  const { id, paths } = await deliverPair('kate@example.net', 'liam@example.net');
  const own = paths['kate@example.net']!;
  t.match(await inject(own, dsn(id, 'liam@example.net', own)), /^250 .*\/ 250/);
  t.match(await inject(FEEDBACK, arf('yahoo', id, 'liam@example.net', own)), /^250 .*\/ 250/);
  const types = await eventTypes(id);
  t.notOk(
    types.some((e) => e.endsWith('liam@example.net') && !e.startsWith('email.delivered')),
    'nothing happens to the other recipient',
  );
  t.notOk((await suppressed()).includes('liam@example.net'));
});
