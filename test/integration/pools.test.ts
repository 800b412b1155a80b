// Pools of source addresses (docs/delivery.md, "Sending identities"), on loopback: 127.0.0.0/8
// is this machine's on Linux, so each pool gets addresses of its own, with PTR records in the
// loopback DNS server. The MX (smtp-server) sees each pool's mail from its own addresses with
// their EHLO names; a customer's default pool and a message's own are honoured; a retry keeps the
// address it was first tried from; a pool chosen per send (the API's `pool`, submission's
// X-Posthaste-Pool) is honoured when the customer may choose it and refused otherwise, nothing
// queued; an address that is not this machine's stops the start.

import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import nodemailer from 'nodemailer';
import t from 'tap';
import { ConfigError } from '../../src/config/load.js';
import { createLogger } from '../../src/lib/logger.js';
import type { ZoneRecords } from '../../support/dns-server.js';
import { waitFor } from '../../support/wait.js';
import { eventsOf, getEmail, sendEmail } from '../helpers/api.js';
import { json, runCli } from '../helpers/cli.js';
import { startTestServer } from '../helpers/env.js';
import { fixturePath } from '../helpers/fixtures.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { send, sender } from '../helpers/stores.js';
import { submissionToml } from '../helpers/submission.js';

const POOLS = `retry_schedule = ["1s"]

[[outbound.pools]]
name = "transactional"
addresses = [ { ip = "127.0.0.2", ehlo = "mta2.pools.test" }, { ip = "127.0.0.3", ehlo = "mta3.pools.test" }, { ip = "::1", ehlo = "mta6.pools.test" } ]

[[outbound.pools]]
name = "bulk"
addresses = [ { ip = "127.0.0.4", ehlo = "bulk.pools.test" } ]

[[outbound.pools]]
name = "v6only"
addresses = [ { ip = "::1", ehlo = "mta6.pools.test" } ]
`;

const logLines: Json[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    for (const line of chunk.toString().split('\n')) if (line.trim()) logLines.push(JSON.parse(line) as Json);
    cb();
  },
});

// The records a receiver checks: the PTR of .2, .3 and ::1 name their EHLO names, which resolve back; .4 has none.
const zone: Record<string, ZoneRecords> = {
  [`1.${'0.'.repeat(31)}ip6.arpa`]: { PTR: ['mta6.pools.test'] },
  'mta6.pools.test': { AAAA: ['::1'] },
};
for (const n of [2, 3]) {
  zone[`${n}.0.0.127.in-addr.arpa`] = { PTR: [`mta${n}.pools.test`] };
  zone[`mta${n}.pools.test`] = { A: [`127.0.0.${n}`] };
}
const s = await startMailEnv({
  mxDomains: ['rcpt.test'],
  zone,
  outbound: POOLS,
  toml: submissionToml(),
  daemon: { log: createLogger('info', sink) },
});
const { mx, key } = s;
const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args]);

async function sendAndDrain(to: string): Promise<Json> {
  const id = await sendEmail(s.url, key, { from: 'shop@example.com', to, subject: 'Hi', text_body: 'Hello.' });
  await s.daemon.scheduler.drain();
  return getEmail(s.url, key, id);
}

const got = (to: string) => mx.received.filter((m) => m.to[0] === to);

t.test(
  "each connection binds an address of the default pool, in turn, and says that address's EHLO name",
  async (t) => {
    const a = await sendAndDrain('a@rcpt.test');
    const b = await sendAndDrain('b@rcpt.test');
    t.same(
      [...got('a@rcpt.test'), ...got('b@rcpt.test')].map((m) => [m.remoteAddress, m.helo]),
      [
        ['127.0.0.2', 'mta2.pools.test'],
        ['127.0.0.3', 'mta3.pools.test'],
      ],
      "from the pool's IPv4 addresses (the MX has only an A record: ::1 is passed over)",
    );
    t.match(eventsOf(a, 'email.delivered')[0]?.data, { pool: 'transactional', source_ip: '127.0.0.2' });
    t.match(eventsOf(b, 'email.delivered')[0]?.data, { pool: 'transactional', source_ip: '127.0.0.3' });
    const line = logLines.find((l) => l.msg === 'delivery attempt' && l.recipient === 'a@rcpt.test');
    t.match(line, { pool: 'transactional', source_ip: '127.0.0.2', outcome: 'delivered' }, 'the delivery log line');
  },
);

t.test('the PTR of each address is checked at start: a warning names the record to publish', async (t) => {
  await waitFor('the warning about 127.0.0.4', () => logLines.some((l) => l.address === '127.0.0.4'));
  const warned = logLines.filter((l) => typeof l.fix === 'string');
  t.same(
    warned.map((l) => [l.address, l.fix]),
    [['127.0.0.4', 'publish 4.0.0.127.in-addr.arpa PTR bulk.pools.test (its PTR names nothing)']],
    'only the address without its records',
  );
});

t.test("a customer's default pool, and a message's own pool, are honoured", async (t) => {
  const unknown = await cli('customers', 'set', 'default', '--pool', 'nope');
  t.equal(unknown.code, 1, 'an unknown pool is an error');
  t.match(unknown.stderr, /--pool: "nope" is not a configured pool \(outbound\.pools: transactional, bulk, v6only\)/);
  t.match(
    json(await cli('customers', 'show', 'default', '--json')),
    { pool: null, allowed_pools: [] },
    'nothing changed',
  );

  const set = await cli(
    'customers',
    'set',
    'default',
    '--pool',
    'bulk',
    '--allow-pools',
    'transactional,bulk',
    '--json',
  );
  t.equal(set.code, 0, set.stderr);
  t.match(json(set), { name: 'default', pool: 'bulk', allowed_pools: ['transactional', 'bulk'] });
  t.match(
    json<Json[]>(await cli('customers', 'list', '--json')).find((c) => c.name === 'default'),
    {
      pool: 'bulk',
      allowed_pools: ['transactional', 'bulk'],
    },
  );
  await sleep(1100); // the delivery side reads the customers' pools again after a second
  const c = await sendAndDrain('c@rcpt.test');
  t.same(
    got('c@rcpt.test').map((m) => [m.remoteAddress, m.helo]),
    [['127.0.0.4', 'bulk.pools.test']],
  );
  t.match(eventsOf(c, 'email.delivered')[0]?.data, { pool: 'bulk', source_ip: '127.0.0.4' });

  // A message's own pool (kept by the store from the send) over the customer's default; a pool
  // no longer configured gives the configured default, logged.
  const who = await sender(s.store);
  await send(s.store, who, { to: ['d@rcpt.test'], pool: 'transactional', now: Date.now() });
  await send(s.store, who, { to: ['e@rcpt.test'], pool: 'gone', now: Date.now() });
  await s.daemon.scheduler.drain();
  t.match(got('d@rcpt.test')[0], { remoteAddress: /^127\.0\.0\.[23]$/, helo: /^mta[23]\.pools\.test$/ });
  t.match(got('e@rcpt.test')[0], { remoteAddress: /^127\.0\.0\.[23]$/ }, 'from the default pool');
  t.ok(
    logLines.some((l) => l.pool === 'gone' && l.used === 'transactional'),
    'the pool that is gone is logged',
  );
});

t.test(
  'a pool chosen per send, through the API and through submission; any other refused, nothing queued',
  async (t) => {
    await cli('customers', 'set', 'default', '--pool', 'transactional', '--allow-pools', 'bulk');
    const count = async () => Number(await s.sql.value('SELECT count(*) FROM messages'));
    const body = (to: string, pool?: string) => ({
      from: 'shop@example.com',
      to,
      subject: 'Hi',
      text_body: 'Hello.',
      ...(pool !== undefined ? { pool } : {}),
    });

    const viaApi = await request(`${s.url}/api/v1/emails`, { key, body: body('p1@rcpt.test', 'bulk') });
    t.equal(viaApi.status, 202, JSON.stringify(viaApi.body));
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: s.daemon.submission['submission.listen']!.port,
      secure: false,
      requireTLS: true,
      auth: { user: 'posthaste', pass: key },
      tls: { ca: readFileSync(fixturePath('tls/ca.pem')) },
    });
    t.teardown(() => transport.close());
    const viaSmtp = await transport.sendMail({
      from: 'shop@example.com',
      to: 'p2@rcpt.test',
      subject: 'Hi',
      text: 'Hello.',
      headers: { 'X-Posthaste-Pool': 'bulk' },
    });
    t.match(viaSmtp.response, /^250 2\.0\.0 Ok: queued as /);
    await s.daemon.scheduler.drain();
    for (const to of ['p1@rcpt.test', 'p2@rcpt.test'])
      t.same(
        got(to).map((m) => [m.remoteAddress, m.helo]),
        [['127.0.0.4', 'bulk.pools.test']],
        `${to}: from the pool chosen, over the customer's default`,
      );
    t.notMatch(
      got('p2@rcpt.test')[0]?.data.toString() ?? '',
      /X-Posthaste-Pool/i,
      'the field is taken out before sending',
    );
    t.same(
      (await request(`${s.url}/api/v1/emails`, { key, body: body('p3@rcpt.test', 'transactional') })).status,
      202,
      'its default pool may be named too',
    );

    const before = await count();
    const other = await request(`${s.url}/api/v1/emails`, { key, body: body('p4@rcpt.test', 'v6only') });
    t.equal(other.status, 422);
    t.match(other.body, {
      error: {
        code: 'validation_failed',
        details: {
          pool: [/pool v6only is not one this customer may choose \(this customer may choose bulk, transactional/],
        },
      },
    });
    const unknown = await request(`${s.url}/api/v1/emails`, { key, body: body('p5@rcpt.test', 'nowhere') });
    t.equal(unknown.status, 422);
    t.match(unknown.body, { error: { details: { pool: [/pool nowhere is not configured on this server/] } } });
    const malformed = await request(`${s.url}/api/v1/emails`, { key, body: body('p6@rcpt.test', 'no such pool') });
    t.equal(malformed.status, 422);
    t.match(malformed.body, { error: { details: { pool: [/must be the name of a pool/] } } });
    const refused: unknown = await transport
      .sendMail({
        from: 'shop@example.com',
        to: 'p7@rcpt.test',
        subject: 'Hi',
        text: 'Hello.',
        headers: { 'X-Posthaste-Pool': 'v6only' },
      })
      .then(
        () => 'accepted',
        (e: unknown) => e,
      );
    t.match(refused, {
      responseCode: 550,
      response: /^550 5\.7\.1 X-Posthaste-Pool: pool v6only is not one this customer may choose/,
    });
    t.equal(await count(), before, 'nothing queued for a refused pool');

    // Refused on the very next send once no longer allowed (a change of pools moves the auth epoch).
    await cli('customers', 'set', 'default', '--allow-pools', '');
    const revoked = await request(`${s.url}/api/v1/emails`, { key, body: body('p8@rcpt.test', 'bulk') });
    t.equal(revoked.status, 422, 'no longer allowed: refused on the very next send');
    await cli('customers', 'set', 'default', '--pool', '');
    await s.daemon.scheduler.drain();
  },
);

t.test("a pool without an address of the MX host's family sends nothing, and says why", async (t) => {
  const who = await sender(s.store);
  const { messageId } = await send(s.store, who, { to: ['f@rcpt.test'], pool: 'v6only', now: Date.now() });
  await s.daemon.scheduler.drain();
  t.same(got('f@rcpt.test'), [], 'nothing sent from a wrong address');
  const m = await s.store.messages.get(who.customerId, messageId);
  t.match(m?.events.find((e) => e.type === 'email.deferred')?.data, {
    response: {
      code: 451,
      enhanced_code: '4.4.4',
      message: /no MX host has an address of the families pool "v6only" sends from \(IPv6\)/,
    },
  });
});

t.test('a recipient retried after a deferral keeps the address it was first tried from', async (t) => {
  await cli('customers', 'set', 'default', '--pool', '');
  await sleep(1100);
  mx.script = (rcpt, n) =>
    rcpt === 'grey@rcpt.test' && n === 1 ? { rcpt: [451, '4.7.1 Greylisted, try again'] } : undefined;
  const id = await sendEmail(s.url, key, {
    from: 'shop@example.com',
    to: 'grey@rcpt.test',
    subject: 'Hi',
    text_body: 'Hi',
  });
  await s.daemon.scheduler.drain();
  const first = eventsOf(await getEmail(s.url, key, id), 'email.deferred')[0]?.data;
  t.match(first, { pool: 'transactional', source_ip: /^127\.0\.0\.[23]$/ }, 'the deferral says where it went from');
  await sleep(1100);
  await s.daemon.scheduler.drain();
  t.same(
    got('grey@rcpt.test').map((m) => m.remoteAddress),
    [first?.source_ip],
    'the retry came from the same address (greylisting lists the triplet)',
  );
  t.match(eventsOf(await getEmail(s.url, key, id), 'email.delivered')[0]?.data, { source_ip: first?.source_ip });
});

t.test("`dns server`: the SPF record lists every pool's addresses", async (t) => {
  const server = json<Json>(await cli('dns', 'server', '--json'));
  t.equal(server.records[1].text, 'v=spf1 ip4:127.0.0.2 ip4:127.0.0.3 ip6:::1 ip4:127.0.0.4 ~all');
});

t.test("an address that is not this machine's stops the start, named", async (t) => {
  await t.rejects(
    startTestServer(
      `[[outbound.pools]]\nname = "far"\naddresses = [ { ip = "192.0.2.10", ehlo = "far.pools.test" } ]\n`,
    ),
    new ConfigError(
      'outbound.pools',
      'pool "far": 192.0.2.10 is not an address of this machine (cannot bind it: EADDRNOTAVAIL); each node lists only its own addresses',
    ),
  );
});
