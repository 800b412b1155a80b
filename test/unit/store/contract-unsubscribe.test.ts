import { contract, readEvents, send, sender } from '../../helpers/stores.js';

// The store's contract for one-click unsubscribe, on both engines: a customer's default, and a
// recipient's unsubscribe (suppressed with reason `unsubscribe` and `recipient.unsubscribed` in one
// transaction, once; an address already on the list, or an unknown recipient, changes nothing).

contract('customers: the List-Unsubscribe default is off until set, and set per customer', async (t, s) => {
  const c = (await s.customers.find('default'))!;
  const acme = await s.customers.add('acme', 5);
  t.equal(await s.customers.unsubscribeDefault(c.id), false);
  await s.customers.setUnsubscribeDefault(acme.id, true);
  t.same([await s.customers.unsubscribeDefault(c.id), await s.customers.unsubscribeDefault(acme.id)], [false, true]);
  await s.customers.setUnsubscribeDefault(acme.id, false);
  t.equal(await s.customers.unsubscribeDefault(acme.id), false);
});

contract('suppressions: an unsubscribe suppresses the address and fires recipient.unsubscribed once', async (t, s) => {
  const who = await sender(s);
  const { messageId, result } = await send(s, who, { to: ['Ann@example.net', 'bob@example.net'] });
  t.equal(result.kind, 'accepted');
  await s.suppressions.add({ customerId: who.customerId, address: 'bob@example.net', reason: 'manual', now: 5 });
  const before = await s.webhooks.fanOutCursor();
  // A fresh store's first message: its recipients are rows 1 and 2, in order.
  t.equal(await s.suppressions.unsubscribe(1, 'one_click', 2_000_000), 'unsubscribed');
  t.equal(await s.suppressions.unsubscribe(1, 'one_click', 2_000_001), 'already', 'a replay');
  t.equal(await s.suppressions.unsubscribe(2, 'mailto', 2_000_002), 'already', 'on the list for another reason');
  t.equal(await s.suppressions.unsubscribe(999_999, 'mailto', 2_000_003), 'unknown');
  const found = await s.suppressions.find(who.customerId, ['ann@example.net', 'bob@example.net']);
  t.same(Object.fromEntries(found), { 'ann@example.net': 'unsubscribe', 'bob@example.net': 'manual' });
  const events = (await readEvents(s, 1, before)).filter((e) => e.type === 'recipient.unsubscribed');
  t.equal(events.length, 1, 'one event');
  t.match(JSON.parse(events[0]!.body).data, {
    recipient: 'Ann@example.net',
    reason: 'unsubscribe',
    method: 'one_click',
    message_id: messageId,
  });
  const listed = await s.suppressions.list(who.customerId, { limit: 10, reason: 'unsubscribe' });
  t.same(
    listed.map((r) => [r.address, r.message_id]),
    [['ann@example.net', messageId]],
  );
});
