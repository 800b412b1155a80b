import t from 'tap';
import { inboundLimitCheck, type ReceivingDomain, usagePeriods } from '../../../src/store/model.js';

// The rule both engines apply to a received message (store/model/inbound.ts): the domain's own
// per-minute and monthly limits, else the defaults, 0 meaning none; the month is checked first,
// and each refusal says when its window ends.

const now = Date.UTC(2026, 10, 26, 20, 15, 30);
const domain = (ratePerMinute: number | null, monthlyLimit: number | null): ReceivingDomain => ({
  id: 1,
  customerId: 1,
  name: 'in.example',
  ratePerMinute,
  monthlyLimit,
});
const defaults = { ratePerMinute: 10, monthlyLimit: 100 };

t.test('the periods a message counts in: its minute and its UTC month', async (t) => {
  t.same(usagePeriods(now), { minute: `m:${Math.floor(now / 60_000)}`, month: 'M:2026-11' });
});

t.test('under both limits: ok', async (t) => {
  t.same(inboundLimitCheck(domain(null, null), defaults, { minute: 9, month: 99 }, now), { ok: true });
});

t.test('the defaults apply where the domain sets none; its own where it does', async (t) => {
  t.match(inboundLimitCheck(domain(null, null), defaults, { minute: 10, month: 0 }, now), { ok: false, limit: 'rate' });
  t.same(inboundLimitCheck(domain(20, null), defaults, { minute: 10, month: 0 }, now), { ok: true });
  t.match(inboundLimitCheck(domain(null, 5), defaults, { minute: 0, month: 5 }, now), { ok: false, limit: 'monthly' });
});

t.test('0 means no limit', async (t) => {
  t.same(inboundLimitCheck(domain(0, 0), defaults, { minute: 1e6, month: 1e9 }, now), { ok: true });
});

t.test('the month first; each refusal ends with its window', async (t) => {
  t.same(inboundLimitCheck(domain(null, null), defaults, { minute: 10, month: 100 }, now), {
    ok: false,
    limit: 'monthly',
    windowEndsAt: Date.UTC(2026, 11, 1),
  });
  t.same(inboundLimitCheck(domain(null, null), defaults, { minute: 10, month: 1 }, now), {
    ok: false,
    limit: 'rate',
    windowEndsAt: Date.UTC(2026, 10, 26, 20, 16, 0),
  });
  const december = Date.UTC(2026, 11, 31, 23, 59, 59);
  t.match(inboundLimitCheck(domain(null, null), defaults, { minute: 0, month: 100 }, december), {
    windowEndsAt: Date.UTC(2027, 0, 1),
  });
});
