import t from 'tap';
import type { ClaimRoom, FreshDelivery, SettledAttempt } from '../../../src/store/model.js';
import type { Db } from '../../../src/store/sqlite/db.js';
import { recordEvent } from '../../../src/store/sqlite/events.js';
import { sqliteStore } from '../../../src/store/sqlite/index.js';
import { hasDelivery, recordAttempts } from '../../../src/store/sqlite/webhook-attempts.js';
import { createEndpoint, fanOutCursor } from '../../../src/store/sqlite/webhooks.js';
import { FanOut, type FanOutWrite } from '../../../src/webhooks/fanout.js';
import { storeWithKey } from '../../helpers/env.js';

// The fan-out's crash-recovery cursor, without HTTP: a real store, events and endpoints, the
// dispatcher's part played by the test (attempts settled, batches committed or failed, in any order).

const endpoint = (db: Db, name: string, events: string[] | null = null) =>
  createEndpoint(db, {
    customerId: 1,
    url: `https://${name}.example/hook`,
    events,
    description: name,
    secret: 'whsec_x',
    now: 0,
  }).id;

const events = (db: Db, n: number, type: 'email.delivered' | 'email.bounced' = 'email.delivered') => {
  for (let i = 0; i < n; i++) recordEvent(db, { customerId: 1, type, data: { n: i }, now: 10 });
};

const unlimited: ClaimRoom = { room: () => 1_000_000, take: () => {} };

/** A first attempt of a fresh delivery, succeeded. */
const attempt = (d: FreshDelivery): SettledAttempt => ({
  attempt: {
    endpointId: d.endpointId,
    deliveryId: null,
    eventId: d.event.id,
    eventType: d.event.type,
    attempt: 1,
    at: 20,
    status: 200,
    error: null,
    durationMs: 1,
    response: null,
  },
  deliveryId: null,
  eventSeq: d.eventSeq,
  state: 'succeeded',
  nextAt: null,
  disableEndpoint: false,
});

const commit = (db: Db, fan: FanOut, attempts: SettledAttempt[], w: FanOutWrite) => {
  db.tx(() => recordAttempts(db, { batch: attempts, pending: w.pending, cursor: w.cursor, now: 30 }));
  fan.recorded(w);
};

/** Every event up to the stored cursor has a row for each endpoint that subscribes to it. */
const cursorHonest = (db: Db, subscribed: (seq: number) => string[]): string | null => {
  const cursor = fanOutCursor(db).seq;
  for (let seq = 1; seq <= cursor; seq++)
    for (const e of subscribed(seq))
      if (!hasDelivery(db, seq, e)) return `event ${seq} to ${e} has no row, cursor ${cursor}`;
  return null;
};

t.test('the cursor moves past an event only once all its deliveries are stored', async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  const b = endpoint(db, 'b');
  events(db, 3);
  let wants = 0;
  const fan = new FanOut(sqliteStore(db).webhooks, () => wants++);
  const held = (await fan.next(10, unlimited)).map((x) => x.delivery);
  t.equal(held.length, 6, 'a delivery per event per endpoint');
  t.equal(fan.forBatch([]), null, 'nothing stored: nothing to write');
  const d = (seq: number, e: string) => held.find((x) => x.eventSeq === seq && x.endpointId === e)!;

  // Event 1 to both, event 2 to a only: the cursor stops before event 2.
  const first = [attempt(d(1, a)), attempt(d(1, b)), attempt(d(2, a))];
  const w1 = fan.forBatch(first)!;
  t.equal(w1.cursor?.seq, 1, 'past event 1 only');
  commit(db, fan, first, w1);
  t.equal(fanOutCursor(db).seq, 1);

  // Event 3 done before event 2's last delivery: the cursor still waits at event 1.
  const w2 = fan.forBatch([attempt(d(3, a)), attempt(d(3, b))])!;
  t.equal(w2.cursor, null, 'unchanged while event 2 has an unstored delivery');
  commit(db, fan, [attempt(d(3, a)), attempt(d(3, b))], w2);

  // Event 2's delivery to b taken back (its endpoint over quota): written pending, and the cursor goes to the end.
  fan.park(d(2, b));
  t.ok(wants > 0, 'a parked delivery asks for a batch');
  const w3 = fan.forBatch([])!;
  t.same(w3.pending, [{ endpointId: b, eventSeq: 2 }]);
  t.equal(w3.cursor?.seq, 3);
  commit(db, fan, [], w3);
  t.equal(
    cursorHonest(db, () => [a, b]),
    null,
  );
});

t.test(
  'a batch that fails keeps its pending rows and does not move the cursor; one in flight holds the next back',
  async (t) => {
    const db = storeWithKey(t);
    const a = endpoint(db, 'a');
    events(db, 2);
    const fan = new FanOut(sqliteStore(db).webhooks, () => {});
    const [one, two] = (await fan.next(10, { room: () => 0, take: () => {} })).map((x) => x.delivery);
    t.equal(one, undefined, 'no room: nothing held');
    void two;
    const w = fan.forBatch([])!;
    t.same(
      w.pending.map((p) => p.eventSeq),
      [1, 2],
      'both parked as pending rows',
    );
    t.equal(w.cursor?.seq, 2);
    fan.notRecorded(w);
    t.equal(fanOutCursor(db).seq, 0, 'nothing committed');
    const again = fan.forBatch([])!;
    t.same(
      again.pending.map((p) => p.eventSeq),
      [1, 2],
      'the next batch writes them',
    );
    // While `again` is in flight, a later batch cannot claim its deliveries as stored.
    t.equal(fan.forBatch([]), null, 'nothing more to write until it commits');
    commit(db, fan, [], again);
    t.equal(fanOutCursor(db).seq, 2);
    t.ok(hasDelivery(db, 1, a) && hasDelivery(db, 2, a));
  },
);

t.test('disabled since fan-out: a dropped delivery needs no row and does not hold the cursor', async (t) => {
  const db = storeWithKey(t);
  endpoint(db, 'a');
  events(db, 1);
  const fan = new FanOut(sqliteStore(db).webhooks, () => {});
  const [x] = (await fan.next(10, unlimited)).map((y) => y.delivery);
  fan.drop(x!);
  const w = fan.forBatch([])!;
  t.equal(w.cursor?.seq, 1);
  t.same(w.pending, []);
});

t.test(
  'a crash anywhere: the cursor never passes an unstored delivery, and a restart fans out exactly what has no row',
  async (t) => {
    // Seeded pseudo-random runs: fan out with random room, settle random deliveries, park some, cut
    // batches, commit or fail them in any order, and "crash" (a new FanOut on the same store).
    let seed = 7;
    const rand = (n: number) => {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return Math.floor((((x ^ (x >>> 14)) >>> 0) / 4_294_967_296) * n);
    };
    let moves = 0;
    for (let run = 0; run < 40; run++) {
      const db = storeWithKey(t);
      const all = endpoint(db, 'all');
      const bounces = endpoint(db, 'bounces', ['email.bounced']);
      const subscribed = (seq: number) => (seq % 3 === 0 ? [all, bounces] : [all]);
      for (let i = 1; i <= 30; i++) events(db, 1, i % 3 === 0 ? 'email.bounced' : 'email.delivered');
      let fan = new FanOut(sqliteStore(db).webhooks, () => {});
      let held: FreshDelivery[] = [];
      let done: SettledAttempt[] = [];
      let inFlight: Array<{ attempts: SettledAttempt[]; w: FanOutWrite }> = [];
      for (let step = 0; step < 120; step++) {
        const op = rand(6);
        if (op === 0) {
          let left = rand(8);
          held.push(
            ...(await fan.next(1 + rand(10), { room: () => left, take: () => void left-- })).map((x) => x.delivery),
          );
        } else if (op === 1 && held.length) done.push(attempt(held.splice(rand(held.length), 1)[0]!));
        else if (op === 2 && held.length) fan.park(held.splice(rand(held.length), 1)[0]!);
        else if (op === 3) {
          const w = fan.forBatch(done);
          if (w) inFlight.push({ attempts: done, w });
          done = [];
        } else if (op === 4 && inFlight.length) {
          const [b] = inFlight.splice(rand(inFlight.length), 1);
          if (rand(4) === 0) {
            fan.notRecorded(b!.w);
            done.unshift(...b!.attempts);
          } else {
            if (b!.w.cursor !== null) moves++;
            commit(db, fan, b!.attempts, b!.w);
          }
        } else if (op === 5 && rand(5) === 0) {
          // Crash: memory is lost; what was not committed is gone with it.
          fan = new FanOut(sqliteStore(db).webhooks, () => {});
          held = [];
          done = [];
          inFlight = [];
        }
        const broken = cursorHonest(db, subscribed);
        if (broken) {
          t.fail(`run ${run}, step ${step}: ${broken}`);
          return;
        }
      }
      // Restart and finish: every subscribed delivery ends with exactly one row.
      fan = new FanOut(sqliteStore(db).webhooks, () => {});
      for (;;) {
        const next = (await fan.next(1000, unlimited)).map((x) => x.delivery);
        const again = next.filter((d) => hasDelivery(db, d.eventSeq, d.endpointId));
        t.same(again, [], `run ${run}: nothing with a row is fanned out again`);
        const batch = next.map(attempt);
        const w = fan.forBatch(batch);
        if (!w) break;
        commit(db, fan, batch, w);
      }
      t.equal(cursorHonest(db, subscribed), null, `run ${run}: every event has its rows`);
      t.equal(fanOutCursor(db).seq, 30, `run ${run}: the cursor at the end`);
    }
    t.ok(moves > 50, `the runs moved the cursor often (${moves} times) before the end`);
  },
);

t.test('the store failing mid-way: the events before are handed out, the one it failed on is read again', async (t) => {
  const db = storeWithKey(t);
  const a = endpoint(db, 'a');
  events(db, 3);
  const store = sqliteStore(db).webhooks;
  // Before a restart something was delivered (so hasDelivery is asked), and the store goes away
  // while the second event is read: as PostgreSQL restarting does to one read of many.
  db.tx(() => recordAttempts(db, { batch: [], pending: [{ endpointId: a, eventSeq: 3 }], cursor: null, now: 5 }));
  let calls = 0;
  const failing: typeof store = {
    ...store,
    hasDelivery: async (seq, endpointId) => {
      if (++calls === 2) throw new Error('store unavailable');
      return store.hasDelivery(seq, endpointId);
    },
  };
  const fan = new FanOut(failing, () => {});
  const first = (await fan.next(10, unlimited)).map((x) => x.delivery);
  t.same(
    first.map((d) => d.eventSeq),
    [1],
    'the first event handed out; not lost with an error thrown after the cursor passed it',
  );
  const second = (await fan.next(10, unlimited)).map((x) => x.delivery);
  t.same(
    second.map((d) => d.eventSeq),
    [2],
    'the one the store failed on is read again; the third already had its row',
  );
  const attempts = [...first, ...second].map(attempt);
  const w = fan.forBatch(attempts)!;
  commit(db, fan, attempts, w);
  t.equal(fanOutCursor(db).seq, 3, 'and the cursor goes past all three');
  t.equal(
    cursorHonest(db, () => [a]),
    null,
  );
});
