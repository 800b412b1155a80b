// A batch's answer as the client hears it (api/routes/emails.ts, batchBody): the store keeps an
// item the commit refused as the refusal itself, and the API says it as its error, fresh or
// replayed; an answer kept in the earlier form (each item its body already) is sent as kept.

import t from 'tap';
import { batchBody } from '../../../src/api/routes/emails.js';
import { refusal } from '../../../src/domain/errors.js';

const accepted = { message_id: 'a@example.com', status: 'queued', sandbox: false, recipients: ['a@example.net'] };
const invalid = { error: { code: 'validation_failed', message: 'bad', details: { subject: ['is required'] } } };
const suppressed = {
  kind: 'suppressed' as const,
  addresses: [{ address: 'no@example.net', field: 'to', reason: 'manual' }],
};

t.test("an item the commit refused is said as the refusal's error; the others as kept", async (t) => {
  const kept = { data: [accepted, invalid, { refused: suppressed, domain: 'example.com' }] };
  t.same(batchBody(kept), { data: [accepted, invalid, refusal(suppressed, 'example.com').toBody()] });
  t.same(
    batchBody({ data: [{ refused: { kind: 'domain_unverified' }, domain: 'pending.example' }] }),
    { data: [refusal({ kind: 'domain_unverified' }, 'pending.example').toBody()] },
    'the domain named in the message',
  );
});

t.test('an answer kept in the earlier form is sent as it was kept', async (t) => {
  const earlier = { data: [accepted, invalid, refusal(suppressed, 'example.com').toBody()] };
  const text = JSON.stringify(earlier);
  t.equal(JSON.stringify(batchBody(JSON.parse(text))), text, 'byte for byte');
});

t.test('what is not a batch answer is left alone', async (t) => {
  t.same(batchBody(accepted), accepted, "a single send's 202 body");
  t.equal(batchBody(null), null);
});
