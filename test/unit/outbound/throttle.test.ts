import t from 'tap';
import type { DestinationLimits } from '../../../src/domain/destinations.js';
import type { Reply } from '../../../src/domain/outcome.js';
import { isRateLimit, PAUSE_FIRST_MS, PAUSE_MAX_MS, pauseFor, Throttle } from '../../../src/outbound/throttle.js';

const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const busy: Reply = {
  code: 421,
  enhanced_code: '4.7.28',
  message: 'Our system has detected an unusual rate of unsolicited mail',
  classification: 'rate_limited',
};
const limits =
  (over: Partial<DestinationLimits> = {}) =>
  () => ({ connections: 8, perConnection: 10, perMinute: 0, ...over });

t.test('which replies ask us to slow down', async (t) => {
  t.ok(isRateLimit(busy));
  t.ok(
    isRateLimit({ code: 421, enhanced_code: '4.3.2', message: 'try again later', classification: 'other' }),
    'any 421',
  );
  t.ok(
    isRateLimit({
      code: 451,
      enhanced_code: '4.7.0',
      message: '[TSS04] unexpected volume',
      classification: 'rate_limited',
    }),
  );
  t.ok(
    isRateLimit({
      code: 451,
      enhanced_code: '4.7.500',
      message: 'Server busy. Please try again later from [192.0.2.1]. (S77719)',
      classification: 'rate_limited',
    }),
  );
  t.notOk(isRateLimit({ code: 451, enhanced_code: '4.7.1', message: 'Greylisted', classification: 'greylisted' }));
  t.notOk(
    isRateLimit({
      code: 450,
      enhanced_code: '4.2.1',
      message: 'The user you are trying to contact is receiving mail too quickly',
      classification: 'rate_limited',
    }),
    'one mailbox receiving too fast does not slow the destination',
  );
  t.notOk(
    isRateLimit({ code: 550, enhanced_code: '5.7.1', message: 'rate limit', classification: 'rate_limited' }),
    'a permanent refusal is a bounce, not a pace',
  );
});

t.test('the pause doubles from 30 s up to 15 minutes', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 10].map(pauseFor), [30_000, 60_000, 120_000, 240_000, 480_000, PAUSE_MAX_MS, PAUSE_MAX_MS]);
  t.equal(pauseFor(1), PAUSE_FIRST_MS);
});

t.test('connections and messages per connection are limited', async (t) => {
  const th = new Throttle(limits({ connections: 2 }));
  t.same(th.admit('a.test', T0), { kind: 'open', messages: 10 });
  const one = th.open('a.test', T0, 10);
  th.open('a.test', T0, 10);
  t.same(th.admit('a.test', T0), { kind: 'full' });
  t.same(th.admit('b.test', T0), { kind: 'open', messages: 10 }, 'another destination is not affected');
  th.close(one, { delivered: 10, refusal: null }, T0 + 100);
  t.same(th.admit('a.test', T0 + 100), { kind: 'open', messages: 10 });
});

t.test('per_minute: no more than N started in any 60 seconds', async (t) => {
  const th = new Throttle(limits({ perMinute: 25 }));
  const a = th.open('a.test', T0, 10);
  th.close(a, { delivered: 10, refusal: null }, T0);
  const b = th.open('a.test', T0 + 20_000, 10);
  th.close(b, { delivered: 10, refusal: null }, T0 + 20_000);
  t.same(
    th.admit('a.test', T0 + 20_000),
    { kind: 'open', messages: 5 },
    'a connection carries only what is left of the minute',
  );
  th.open('a.test', T0 + 20_000, 5);
  const spent = th.admit('a.test', T0 + 30_000);
  t.same(
    spent,
    { kind: 'spent', opensAt: T0 + 61_000 },
    'the first second’s messages leave the window a minute after that second',
  );
  t.same(th.admit('a.test', T0 + 60_999), spent);
  t.same(th.admit('a.test', T0 + 61_000), { kind: 'open', messages: 10 });
});

t.test(
  'a refusal pauses and halves connections; refusals keep doubling the pause; deliveries win it back',
  async (t) => {
    const th = new Throttle(limits());
    // Four connections open at once; all are refused.
    const tickets = [0, 1, 2, 3].map(() => th.open('g.test', T0, 10));
    const first = th.close(tickets[0]!, { delivered: 3, refusal: busy }, T0 + 1000);
    t.match(first, {
      kind: 'set',
      record: {
        destination: 'g.test',
        strikes: 1,
        connections: 4,
        pausedUntil: T0 + 1000 + 30_000,
        reason: busy,
        since: T0 + 1000,
      },
    });
    for (const x of tickets.slice(1))
      t.equal(
        th.close(x, { delivered: 0, refusal: busy }, T0 + 1200),
        null,
        'refusals of connections opened before the counted one are not counted again',
      );
    t.same(th.admit('g.test', T0 + 20_000), { kind: 'paused', until: T0 + 31_000 });
    t.ok(th.isThrottled('g.test'));
    t.notOk(th.isThrottled('other.test'));
    // Refused again after the pause: the pause doubles, connections halve again.
    const again = th.open('g.test', T0 + 31_000, 10);
    t.match(th.close(again, { delivered: 0, refusal: busy }, T0 + 32_000), {
      record: { strikes: 2, connections: 2, pausedUntil: T0 + 32_000 + 60_000, since: T0 + 1000 },
    });
    const third = th.open('g.test', T0 + 92_000, 10);
    t.match(th.close(third, { delivered: 0, refusal: busy }, T0 + 92_000), {
      record: { strikes: 3, connections: 1, pausedUntil: T0 + 92_000 + 120_000 },
    });
    t.equal(th.connections('g.test'), 1, 'never fewer than one');
    t.equal(th.capacity('g.test'), 10);
    // Accepted again: each good connection takes a refusal off and gives a connection back.
    let now = T0 + 212_000;
    const changes = [];
    for (let i = 0; i < 7; i++) {
      const x = th.open('g.test', now, 10);
      now += 500;
      changes.push(th.close(x, { delivered: 10, refusal: null }, now));
    }
    t.match(
      changes.slice(0, 6).map((c) => c && c.kind === 'set' && [c.record.strikes, c.record.connections]),
      [
        [2, 2],
        [1, 3],
        [0, 4],
        [0, 5],
        [0, 6],
        [0, 7],
      ],
    );
    t.same(changes[6], { kind: 'cleared', destination: 'g.test' }, 'back to the configured 8 connections');
    t.notOk(th.isThrottled('g.test'));
    t.same(th.throttled(), []);
    // Refused once more: the pause starts again from 30 s.
    const later = th.open('g.test', now, 10);
    t.match(th.close(later, { delivered: 0, refusal: busy }, now), {
      record: { strikes: 1, connections: 4, pausedUntil: now + 30_000 },
    });
  },
);

t.test('a connection that delivers nothing neither strikes nor recovers', async (t) => {
  const th = new Throttle(limits());
  const a = th.open('x.test', T0, 10);
  th.close(a, { delivered: 0, refusal: busy }, T0);
  const b = th.open('x.test', T0 + 30_000, 10);
  t.equal(th.close(b, { delivered: 0, refusal: null }, T0 + 30_000), null);
  t.match(th.throttled(), [{ strikes: 1, connections: 4 }]);
});

t.test('restored records apply at once (a restart keeps a pause), and a lower configured limit wins', async (t) => {
  let conf = limits({ connections: 8 })();
  const th = new Throttle(
    () => conf,
    [{ destination: 'g.test', connections: 6, strikes: 1, pausedUntil: T0 + 10_000, reason: busy, since: T0 - 5_000 }],
  );
  t.same(th.admit('g.test', T0), { kind: 'paused', until: T0 + 10_000 });
  t.equal(th.connections('g.test'), 6);
  conf = { ...conf, connections: 3 };
  t.equal(th.connections('g.test'), 3, 'a reload that lowers connections applies to a throttled destination too');
  t.equal(th.connections('other.test'), 3);
});

t.test(
  'held-back messages are spread at the pace the destination takes them, after those held back before',
  async (t) => {
    const th = new Throttle(limits({ perMinute: 60 }));
    t.same(th.slots('a.test', 3, T0), [T0, T0 + 1000, T0 + 2000], 'per_minute 60: one a second');
    t.same(th.slots('a.test', 2, T0), [T0 + 3000, T0 + 4000], 'after the ones held back before');
    t.same(th.slots('a.test', 1, T0 + 60_000), [T0 + 60_000], 'never before the time asked for');
    const fast = new Throttle(limits({ connections: 2, perConnection: 10 }));
    // No connection measured yet: 5 s assumed per connection, 2 × 10 messages per round.
    t.same(fast.slots('b.test', 3, T0), [T0, T0 + 250, T0 + 500]);
    t.equal(fast.nextRound('b.test', T0), T0 + 5000);
  },
);

t.test('idle destinations are forgotten; busy, throttled or counting ones are kept', async (t) => {
  const th = new Throttle(limits({ perMinute: 10, connections: 1 }));
  const idle = th.open('idle.test', T0, 1);
  th.close(idle, { delivered: 1, refusal: null }, T0);
  th.open('busy.test', T0, 1);
  const refused = th.open('refused.test', T0, 1);
  th.close(refused, { delivered: 0, refusal: busy }, T0);
  th.forgetIdle(T0 + 10_000);
  t.same(th.admit('idle.test', T0 + 10_000), { kind: 'open', messages: 9 }, 'still counted within its minute');
  th.forgetIdle(T0 + 62_000);
  t.same(th.admit('idle.test', T0 + 62_000), { kind: 'open', messages: 10 }, 'forgotten after it: a fresh state');
  t.same(th.admit('busy.test', T0 + 62_000), { kind: 'full' }, 'a destination with a connection open is kept');
  t.match(th.throttled(), [{ destination: 'refused.test' }], 'a throttled destination is kept');
});

t.test(
  'starts are counted without per_minute too, only over the last minute: a reload that sets it counts from there',
  async (t) => {
    let conf = limits()();
    const th = new Throttle(() => conf);
    for (let i = 0; i < 600; i++)
      th.close(th.open('a.test', T0 + i * 1000, 1), { delivered: 1, refusal: null }, T0 + i * 1000);
    conf = { ...conf, perMinute: 100 };
    t.same(
      th.admit('a.test', T0 + 600_000),
      { kind: 'open', messages: 10 },
      '100 less the 60 started in the last minute leaves room for a full connection',
    );
    conf = { ...conf, perMinute: 65 };
    t.same(
      th.admit('a.test', T0 + 600_000),
      { kind: 'open', messages: 5 },
      'exactly the last minute counts (60), not the ten before',
    );
  },
);

t.test("an operator's retry lifts a pause set before it; a pause set after it stays", async (t) => {
  const th = new Throttle(limits());
  th.close(th.open('d.test', T0, 1), { delivered: 0, refusal: busy }, T0);
  t.ok(th.isPaused('d.test', T0 + 1000));
  t.notOk(th.lift('d.test', T0 - 1, T0 + 1000), 'a retry before the pause: kept');
  t.notOk(th.lift('other.test', T0 + 500, T0 + 1000), 'a destination never paused: nothing to lift');
  t.ok(th.lift('d.test', T0 + 500, T0 + 1000), 'retried after the pause was set: lifted');
  t.same(th.admit('d.test', T0 + 1000), { kind: 'open', messages: 10 }, 'tryable now');
  t.ok(th.isThrottled('d.test'), 'still throttled: its fewer connections and its refusal stay');
  t.equal(th.connections('d.test'), 4);
  const again = th.close(th.open('d.test', T0 + 2000, 1), { delivered: 0, refusal: busy }, T0 + 2000);
  t.match(again, { kind: 'set', record: { strikes: 2, pausedUntil: T0 + 2000 + 60_000 } }, 'a new refusal: longer');
  t.notOk(th.lift('d.test', T0 + 500, T0 + 3000), 'the old retry does not lift the new pause');
});
