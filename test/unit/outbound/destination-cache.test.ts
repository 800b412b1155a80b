import t from 'tap';
import { ManualClock } from '../../../src/lib/clock.js';
import { DestinationCache } from '../../../src/outbound/destination-cache.js';

// The scheduler's view of each recipient domain's destination: looked up once in the background
// (the domain's items wait a round), trusted for a minute, refreshed in the background after it,
// and swept once more than 10,000 domains are known.

function cache(lookup: (domain: string) => Promise<string>) {
  const clock = new ManualClock();
  const work: Array<Promise<void>> = [];
  let resolved = 0;
  const swept: number[] = [];
  const learned: Array<[string, string]> = [];
  const c = new DestinationCache({
    lookup,
    clock,
    track: (p) => void work.push(p),
    onResolved: () => void resolved++,
    onSweep: (now) => void swept.push(now),
    onLearned: (domain, destination) => void learned.push([domain, destination]),
  });
  const settle = async () => {
    await Promise.all(work.splice(0));
  };
  return { c, clock, settle, resolved: () => resolved, swept, learned };
}

t.test('unknown: undefined while looked up once in the background; then known, and the loop is woken', async (t) => {
  const asked: string[] = [];
  const { c, settle, resolved } = cache(async (d) => {
    asked.push(d);
    return `dest-of-${d}`;
  });
  t.equal(c.get('a.example'), undefined, 'first look: not known yet');
  t.equal(c.get('a.example'), undefined, 'asked again while looking up');
  t.same(asked, ['a.example'], 'one lookup, however often it is asked');
  await settle();
  t.equal(resolved(), 1, 'the loop is woken once the lookup is in');
  t.equal(c.get('a.example'), 'dest-of-a.example');
  t.same(asked, ['a.example'], 'known: no lookup');
});

t.test(
  'a failed lookup, nothing learnt before: the domain stands for itself, kept nowhere, tried again in 10 s',
  async (t) => {
    let fail = true;
    const { c, clock, settle, learned } = cache(async () => {
      if (fail) throw new Error('SERVFAIL');
      return 'provider.test';
    });
    c.get('b.example');
    await settle();
    t.equal(c.get('b.example'), 'b.example');
    t.same(learned, [], 'a failure is not kept in the store');
    fail = false;
    clock.advance(10_000);
    t.equal(c.get('b.example'), 'b.example', 'looked up again after 10 s');
    await settle();
    t.equal(c.get('b.example'), 'provider.test');
    t.same(learned, [['b.example', 'provider.test']]);
  },
);

t.test('a failed lookup keeps the destination learnt before', async (t) => {
  let fail = false;
  const { c, clock, settle, learned } = cache(async () => {
    if (fail) throw new Error('SERVFAIL');
    return 'provider.test';
  });
  c.get('k.example');
  await settle();
  fail = true;
  clock.advance(60_000);
  c.get('k.example');
  await settle();
  t.equal(c.get('k.example'), 'provider.test', 'still its destination: held and throttled under its name');
  t.same(learned, [['k.example', 'provider.test']], 'nothing new kept');
});

t.test('a domain that becomes its own is told (the store forgets what it kept), once', async (t) => {
  let answer = 'provider.test';
  const { c, clock, settle, learned } = cache(async () => answer);
  c.get('m.example');
  await settle();
  answer = 'm.example';
  clock.advance(60_000);
  c.get('m.example');
  await settle();
  t.equal(c.get('m.example'), 'm.example');
  clock.advance(60_000);
  c.get('m.example');
  await settle();
  t.same(
    learned,
    [
      ['m.example', 'provider.test'],
      ['m.example', 'm.example'],
    ],
    'learnt, then its own: told once each',
  );
});

t.test('the first answer in this process is told, its own included (the store may keep an older one)', async (t) => {
  const { c, settle, learned } = cache(async (d) => d);
  c.get('n.example');
  await settle();
  t.same(learned, [['n.example', 'n.example']]);
});

t.test('after a minute the old destination is still answered while a fresh lookup runs', async (t) => {
  let answer = 'first';
  const asked: string[] = [];
  const { c, clock, settle } = cache(async (d) => {
    asked.push(d);
    return answer;
  });
  c.get('c.example');
  await settle();
  clock.advance(59_999);
  t.equal(c.get('c.example'), 'first');
  t.equal(asked.length, 1, 'within the minute: trusted');
  clock.advance(1);
  answer = 'second';
  t.equal(c.get('c.example'), 'first', 'old: answered as it was while it is looked up again');
  t.equal(asked.length, 2);
  await settle();
  t.equal(c.get('c.example'), 'second');
});

t.test('past 10,000 domains, those past their minute are swept and the caller told', async (t) => {
  const { c, clock, settle, swept } = cache(async (d) => d);
  for (let i = 0; i < 10_000; i++) c.get(`old${i}.example`);
  await settle();
  t.same(swept, [], 'at 10,000: nothing swept');
  clock.advance(60_000);
  c.get('new.example');
  await settle();
  t.same(swept, [clock.now()], 'the 10,001st: swept, and the caller told when');
  t.equal(c.get('new.example'), 'new.example', 'the fresh one stays');
  t.equal(
    c.get('old0.example'),
    undefined,
    'an old one is gone: looked up afresh (unswept, its old answer would come back)',
  );
});
