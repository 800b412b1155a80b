import t from 'tap';
import { CLAIM_PER_ENDPOINT, CLAIM_TOTAL, Quotas } from '../../../src/webhooks/quotas.js';

// The dispatcher's claim quotas (src/webhooks/quotas.ts): an endpoint whose last attempt succeeded
// holds its full quota, any other twice its concurrency; one fill takes up to each endpoint's
// quota less what it holds, and all together up to the total less what is held in all.

const quotas = (claimPerEndpoint = 100, claimTotal = 1000, perEndpoint = 4) =>
  new Quotas({ perEndpoint, claimPerEndpoint, claimTotal });

t.test('the defaults: a large quota per endpoint, a total that is a multiple of it', async (t) => {
  t.equal(CLAIM_PER_ENDPOINT, 1024);
  t.equal(CLAIM_TOTAL, 16_384);
});

t.test(
  'a new endpoint holds twice its concurrency; one that succeeded its full quota; a failure takes it back',
  async (t) => {
    const q = quotas(100, 1000, 4);
    t.equal(q.quota('a'), 8, 'new: 2 x concurrency');
    q.attempted('a', true);
    t.equal(q.quota('a'), 100, 'last attempt succeeded: the full quota');
    t.equal(q.quota('b'), 8, 'health is per endpoint');
    q.attempted('a', false);
    t.equal(q.quota('a'), 8, 'last attempt failed: back to 2 x concurrency');
    q.attempted('a', false);
    t.equal(q.quota('a'), 8, 'a failure on a failing endpoint changes nothing');
  },
);

t.test('twice the concurrency never exceeds the quota per endpoint', async (t) => {
  const q = quotas(10, 1000, 50);
  t.equal(q.quota('a'), 10, 'min(quota, 2 x concurrency)');
  q.attempted('a', true);
  t.equal(q.quota('a'), 10);
});

t.test('excess: what an endpoint has waiting beyond its quota, never negative', async (t) => {
  const q = quotas(100, 1000, 4);
  t.equal(q.excess('a', 20), 12, 'a failing endpoint with 20 waiting gives back 12');
  t.equal(q.excess('a', 8), 0);
  t.equal(q.excess('a', 3), 0, 'under the quota: nothing');
  q.attempted('a', true);
  t.equal(q.excess('a', 20), 0, 'healthy: 20 is within 100');
  t.equal(q.excess('a', 130), 30);
});

t.test('room: each endpoint up to its quota less what it holds, counted down by take', async (t) => {
  const q = quotas(100, 1000, 4);
  q.attempted('healthy', true);
  const held: Record<string, number> = { healthy: 90, failing: 5 };
  const r = q.room((e) => held[e] ?? 0, 95);
  t.equal(r.room('healthy'), 10, '100 less the 90 it holds');
  t.equal(r.room('failing'), 3, '8 less the 5 it holds');
  t.equal(r.room('new'), 8, 'holds nothing: its whole quota');
  r.take('failing');
  r.take('failing');
  t.equal(r.room('failing'), 1, 'each take counts');
  r.take('failing');
  t.equal(r.room('failing'), 0);
  r.take('failing');
  t.equal(r.room('failing'), 0, 'never negative');
  t.equal(r.room('healthy'), 10, 'takes of one endpoint leave the others');
});

t.test('room: all endpoints together up to the total less what is held in all', async (t) => {
  const q = quotas(100, 10, 4);
  const r = q.room(() => 0, 7);
  t.equal(r.room('a'), 3, 'the total leaves 3');
  r.take('a');
  r.take('b');
  t.equal(r.room('c'), 1, 'takes of any endpoint count against the total');
  r.take('c');
  t.equal(r.room('a'), 0);
  t.equal(q.room(() => 0, 50).room('a'), 0, 'more held than the total: no room, not negative');
});

t.test('room reads what an endpoint holds once per fill', async (t) => {
  const q = quotas(100, 1000, 4);
  const reads: string[] = [];
  const r = q.room((e) => {
    reads.push(e);
    return 2;
  }, 0);
  r.room('a');
  r.take('a');
  r.room('a');
  r.room('b');
  r.room('a');
  t.same(reads, ['a', 'b']);
  t.equal(r.room('a'), 5, '8 less the 2 held and the one taken');
});
