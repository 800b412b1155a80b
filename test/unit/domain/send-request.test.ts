import t from 'tap';
import { Problems } from '../../../src/domain/errors.js';
import { type SendRequest, validateSendRequest } from '../../../src/domain/send-request.js';

const send = (from: unknown) =>
  validateSendRequest({ from, to: 'a@example.org', subject: 's', text_body: 'b' }, { maxRecipients: 50 });

t.test('the sender is parsed once per distinct from; each request gets the same answer', async (t) => {
  const first = send('Shop <Orders@Example.COM>') as SendRequest;
  const again = send('Shop <Orders@Example.COM>') as SendRequest;
  t.same(first.from, { address: 'Orders@example.com', local: 'Orders', domain: 'example.com', name: 'Shop' });
  t.same(again.from, first.from);
  t.ok(Object.isFrozen(again.from), 'shared between requests, so frozen');
  for (let i = 0; i < 2; i++) {
    const bad = send('Shop <orders@>');
    t.ok(bad instanceof Problems, 'a bad sender is refused every time');
    t.match((bad as Problems).details.from, [/orders@/]);
  }
  const other = send('billing@example.net') as SendRequest;
  t.equal(other.from.address, 'billing@example.net', 'another sender, its own result');
});
