import t from 'tap';
import { customerId, makeKey } from '../helpers/env.js';
import { type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';
import { RawSmtp } from '../helpers/smtp-client.js';

const s = await startMailEnv({ mxDomains: ['good.test'], toml: '[inbound]\nrate_per_minute = 1000\n' });
const { key } = s;
s.mx.script = (rcpt) => (rcpt.startsWith('nobody') ? { rcpt: [550, '5.1.1 User unknown'] } : undefined);
const other = await makeKey(s.store, 'production', 'acme');
await s.store.domains.add({
  customerId: await customerId(s.store),
  name: 'in.example.com',
  receiving: true,
  now: Date.now(),
});

const ids: string[] = [];
for (const to of ['a@good.test', 'Bob@good.test', 'nobody@good.test', 'a@good.test'])
  ids.push(
    (
      await request(`${s.url}/api/v1/emails`, {
        key,
        body: { from: 'shop@example.com', to, subject: `to ${to}`, text_body: 'x' },
      })
    ).body.message_id,
  );
await s.daemon.scheduler.drain();
const list = async (q: string, k = key): Promise<Json> =>
  (await request(`${s.url}/api/v1/emails?${q}`, { key: k })).body;

t.test('GET /api/v1/emails: newest first, filtered, paged by cursor', async (t) => {
  const all = await list('');
  t.same(
    all.data.map((m: Json) => m.message_id),
    [...ids].reverse(),
  );
  t.same(all.data[0].states, { delivered: 1 });
  t.same(
    (await list('recipient=a@good.test')).data.map((m: Json) => m.message_id),
    [ids[3], ids[0]],
  );
  t.same(
    (await list('recipient=Bob@good.test')).data.map((m: Json) => m.message_id),
    [ids[1]],
    'an address is found as it was sent (local parts are case-sensitive)',
  );
  t.same(
    (await list('state=bounced')).data.map((m: Json) => m.message_id),
    [ids[2]],
  );
  t.same((await list(`message_id=${encodeURIComponent(`<${ids[1]}>`)}`)).data.length, 1);
  t.same((await list('until=2000-01-01')).data, [], 'nothing before 2000');
  t.equal((await list('since=2000-01-01')).data.length, 4);
  const p1 = await list('limit=3');
  t.equal(p1.data.length, 3);
  const p2 = await list(`limit=3&after=${p1.next}`);
  t.same(
    p2.data.map((m: Json) => m.message_id),
    [ids[0]],
  );
  t.equal(p2.next, null);
  t.same((await list('', other)).data, [], "another customer's key sees none of them");
  const bad = await request(`${s.url}/api/v1/emails?state=lost&since=yesterday`, { key });
  t.equal(bad.status, 422);
  t.ok(bad.body.error.details.state && bad.body.error.details.since, 'both bad filters named');
});

t.test('GET /api/v1/inbound: the received messages, newest first', async (t) => {
  const c = await RawSmtp.connect(s.daemon.smtp.port);
  await c.cmd('EHLO client.sender.test');
  for (const subject of ['first', 'second'])
    await c.send(
      'bob@sender.test',
      ['support@in.example.com'],
      `From: bob@sender.test\r\nTo: support@in.example.com\r\nSubject: ${subject}\r\n\r\nhi\r\n`,
    );
  c.close();
  const r = await request(`${s.url}/api/v1/inbound?limit=1`, { key });
  t.equal(r.status, 200);
  t.match(r.body.data[0], { id: /^in_/, subject: 'second', to: ['support@in.example.com'], authentication: Object });
  const next = await request(`${s.url}/api/v1/inbound?limit=1&after=${r.body.next}`, { key });
  t.equal(next.body.data[0].subject, 'first');
  t.same((await request(`${s.url}/api/v1/inbound`, { key: other })).body.data, []);
});
