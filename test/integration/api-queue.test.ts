// A key's own messages in the queue through the API: POST /api/v1/emails/{id}/retry makes its
// deferred recipients due now (the clock not moved), DELETE cancels what of it has not been sent,
// deferred recipients included; delivery to a real SMTP server on loopback, on a manual clock.
import t from 'tap';
import { ManualClock } from '../../src/lib/clock.js';
import { getEmail, sendEmail } from '../helpers/api.js';
import { makeKey } from '../helpers/env.js';
import { expectError, type Json, request } from '../helpers/http.js';
import { startMailEnv } from '../helpers/mail-env.js';

const clock = new ManualClock(Date.now());
const s = await startMailEnv({ mxDomains: ['queue.test'], daemon: { clock } });
const { key, mx } = s;
const other = await makeKey(s.store, 'production', 'other');
const refused = new Set<string>();
mx.script = (rcpt) => (refused.has(rcpt) ? { rcpt: [451, '4.3.0 try again later'] } : undefined);
const received = (to: string) => mx.received.filter((m) => m.to.includes(to)).length;
const send = (to: string[]) => sendEmail(s.url, key, { from: 'shop@example.com', to, subject: 'x', text_body: 'y' });
const retry = (id: string, k = key) =>
  request(`${s.url}/api/v1/emails/${encodeURIComponent(id)}/retry`, { key: k, method: 'POST' });
const cancel = (id: string, k = key) =>
  request(`${s.url}/api/v1/emails/${encodeURIComponent(id)}`, { key: k, method: 'DELETE' });
const states = async (id: string) =>
  ((await getEmail(s.url, key, id)).recipients as Json[]).map((r) => [r.address, r.state, r.attempts]);

t.test('retry: the deferred recipients of the key own message are due now, no attempt counted', async (t) => {
  refused.add('a@queue.test');
  const id = await send(['a@queue.test', 'b@queue.test']);
  await s.daemon.scheduler.drain();
  t.same(await states(id), [
    ['a@queue.test', 'deferred', 1],
    ['b@queue.test', 'delivered', 1],
  ]);
  expectError(t, await retry(id, other), 404, 'not_found', "another customer's");
  expectError(t, await retry('nosuch@example.com'), 404, 'not_found');
  refused.delete('a@queue.test');
  const r = await retry(id);
  t.equal(r.status, 200);
  t.same(r.body, { message_id: id, retried: 1 });
  await s.daemon.scheduler.drain();
  t.equal(received('a@queue.test'), 1, 'delivered without the clock moving');
  t.same(await states(id), [
    ['a@queue.test', 'delivered', 2],
    ['b@queue.test', 'delivered', 1],
  ]);
  t.same((await retry(id)).body, { message_id: id, retried: 0 }, 'nothing left: 0, no error');
});

t.test('DELETE: what has not been sent is canceled, deferred recipients included; the delivered stay', async (t) => {
  refused.add('c@queue.test');
  const id = await send(['c@queue.test', 'd@queue.test']);
  await s.daemon.scheduler.drain();
  expectError(t, await cancel(id, other), 404, 'not_found', "another customer's");
  const r = await cancel(id);
  t.equal(r.status, 200);
  t.same(
    (r.body.recipients as Json[]).map((x) => [x.address, x.state, x.next_attempt_at]),
    [
      ['c@queue.test', 'canceled', null],
      ['d@queue.test', 'delivered', null],
    ],
  );
  clock.advance(2 * 3_600_000);
  await s.daemon.scheduler.drain();
  t.equal(received('c@queue.test'), 0, 'never tried again');
  const again = await cancel(id);
  expectError(t, again, 409, 'conflict', 'nothing left to cancel');
  t.same(again.body.error.details.recipients, ['1 canceled', '1 delivered']);
});
