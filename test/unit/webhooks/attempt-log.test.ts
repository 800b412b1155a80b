import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import type { AttemptBatch, ClaimRoom, FreshDelivery, SettledAttempt } from '../../../src/store/model.js';
import type { Db } from '../../../src/store/sqlite/db.js';
import { recordEvent } from '../../../src/store/sqlite/events.js';
import { sqliteStore } from '../../../src/store/sqlite/index.js';
import { hasDelivery, recordAttempts } from '../../../src/store/sqlite/webhook-attempts.js';
import { createEndpoint } from '../../../src/store/sqlite/webhooks.js';
import { AttemptLog } from '../../../src/webhooks/attempt-log.js';
import { FanOut } from '../../../src/webhooks/fanout.js';
import { waitFor } from '../../../support/wait.js';
import { storeWithKey } from '../../helpers/env.js';

// The batched attempt log (src/webhooks/attempt-log.ts), on a real store and fan-out: attempts
// wait up to the flush interval and are committed together; a full batch or an urgent attempt is
// written at once; a batch that fails to commit is kept and written with the next; a batch the
// store refuses (another node leads the fan-out) stops the fan-out; each recorded attempt is
// counted by outcome.

const FLUSH_MS = 40;
const unlimited: ClaimRoom = { room: () => 1_000_000, take: () => {} };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const settled = (
  d: FreshDelivery,
  state: SettledAttempt['state'] = 'succeeded',
  opts: { disable?: boolean; ms?: number } = {},
): SettledAttempt => ({
  attempt: {
    endpointId: d.endpointId,
    deliveryId: null,
    eventId: d.event.id,
    eventType: d.event.type,
    attempt: 1,
    at: 20,
    status: state === 'succeeded' ? 200 : 500,
    error: state === 'succeeded' ? null : 'HTTP 500',
    durationMs: opts.ms ?? 7,
    response: null,
  },
  deliveryId: null,
  eventSeq: d.eventSeq,
  state,
  nextAt: state === 'pending' ? 1_000 : null,
  disableEndpoint: opts.disable ?? false,
});

interface Rig {
  db: Db;
  fan: FanOut;
  log: AttemptLog;
  held: FreshDelivery[];
  /** Every batch handed to `record`, in order, with what it answered. */
  calls: Array<{ input: AttemptBatch; answer: 'ok' | 'refused' | 'failed' }>;
  /** What the next `record` calls answer (then 'ok'). */
  answers: Array<'ok' | 'refused' | 'failed'>;
  counted: Array<[string, number]>;
  lines: () => Array<{ level: number; msg: string }>;
  endpoints: string[];
}

/** `blockB`: endpoint b has no room, so its deliveries are parked, to be written as pending rows. */
async function rig(t: Test, opts: { events?: number; blockB?: boolean } = {}): Promise<Rig> {
  const db = storeWithKey(t);
  const endpoints = ['a', 'b'].map(
    (name) =>
      createEndpoint(db, {
        customerId: 1,
        url: `https://${name}.example/hook`,
        events: null,
        description: name,
        secret: 'whsec_x',
        now: 0,
      }).id,
  );
  for (let i = 0; i < (opts.events ?? 2); i++)
    recordEvent(db, { customerId: 1, type: 'email.delivered', data: { n: i }, now: 10 });
  const fan = new FanOut(sqliteStore(db).webhooks, () => {});
  const room: ClaimRoom = opts.blockB
    ? { room: (e) => (e === endpoints[1] ? 0 : 1_000_000), take: () => {} }
    : unlimited;
  const held = (await fan.next(1000, room)).map((x) => x.delivery);
  const out: string[] = [];
  const logger = createLogger(
    'info',
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        out.push(chunk.toString());
        cb();
      },
    }),
  );
  const calls: Rig['calls'] = [];
  const answers: Rig['answers'] = [];
  const counted: Rig['counted'] = [];
  const log = new AttemptLog({
    clock: new ManualClock(5_000),
    log: logger,
    fanOut: fan,
    flushInterval: FLUSH_MS,
    onAttempt: (outcome, ms) => counted.push([outcome, ms]),
    record: async (input) => {
      const answer = answers.shift() ?? 'ok';
      calls.push({ input: { ...input, batch: [...input.batch], pending: [...input.pending] }, answer });
      await sleep(1);
      if (answer === 'failed') throw new Error('SQLITE_FULL: database or disk is full');
      if (answer === 'refused') return false;
      db.tx(() => recordAttempts(db, input));
      return true;
    },
  });
  t.teardown(() => log.stop());
  const lines = () =>
    out.flatMap((s) => s.split('\n').filter(Boolean)).map((l) => JSON.parse(l) as { level: number; msg: string });
  return { db, fan, log, held, calls, answers, counted, lines, endpoints };
}

t.test('attempts wait for the flush interval and are committed together, at the clock time', async (t) => {
  const r = await rig(t);
  r.log.add(settled(r.held[0]!), false);
  r.log.add(settled(r.held[1]!), false);
  t.equal(r.calls.length, 0, 'nothing written before the interval');
  await waitFor('a batch', () => r.calls.length > 0);
  await sleep(FLUSH_MS * 2);
  t.equal(r.calls.length, 1, 'one batch');
  t.equal(r.calls[0]!.input.batch.length, 2, 'with both attempts');
  t.equal(r.calls[0]!.input.now, 5_000, 'stamped by the clock');
  t.ok(hasDelivery(r.db, r.held[0]!.eventSeq, r.held[0]!.endpointId), 'the rows are in the store');
  t.ok(hasDelivery(r.db, r.held[1]!.eventSeq, r.held[1]!.endpointId));
});

t.test('an attempt added with now = true is written at once, with what was waiting', async (t) => {
  const r = await rig(t);
  r.log.add(settled(r.held[0]!), false);
  r.log.add(settled(r.held[1]!), true);
  t.equal(r.calls.length, 1, 'written without the interval');
  t.same(
    r.calls[0]!.input.batch.map((a) => a.eventSeq),
    [r.held[0]!.eventSeq, r.held[1]!.eventSeq],
    'both, in the order added',
  );
  await sleep(FLUSH_MS * 2);
  t.equal(r.calls.length, 1, 'the timer left no second batch');
});

t.test('a full batch (256 attempts) is written at once; the next attempt starts a new one', async (t) => {
  const r = await rig(t, { events: 130 });
  t.equal(r.held.length, 260);
  for (const d of r.held.slice(0, 256)) r.log.add(settled(d), false);
  t.equal(r.calls.length, 1, 'the 256th attempt wrote the batch');
  t.equal(r.calls[0]!.input.batch.length, 256);
  for (const d of r.held.slice(256)) r.log.add(settled(d), false);
  await r.log.settle();
  t.equal(r.calls.length, 2);
  t.equal(r.calls[1]!.input.batch.length, 4);
});

t.test('settle writes what waits and resolves only once every batch under way has committed', async (t) => {
  const r = await rig(t);
  r.log.add(settled(r.held[0]!), true);
  r.log.add(settled(r.held[1]!), false);
  await r.log.settle();
  t.equal(r.calls.length, 2);
  t.equal(r.counted.length, 2, 'both batches recorded before settle resolved');
  for (const d of r.held.slice(0, 2)) t.ok(hasDelivery(r.db, d.eventSeq, d.endpointId));
});

t.test('stop leaves no timer: an attempt waiting is not written by one', async (t) => {
  const r = await rig(t);
  r.log.add(settled(r.held[0]!), false);
  r.log.stop();
  await sleep(FLUSH_MS * 3);
  t.equal(r.calls.length, 0);
});

t.test('nothing to write: no batch at all', async (t) => {
  const r = await rig(t);
  await r.log.flush();
  await r.log.settle();
  t.equal(r.calls.length, 0);
});

t.test('each recorded attempt is counted by outcome with its duration; failures are logged', async (t) => {
  const r = await rig(t);
  r.log.add(settled(r.held[0]!, 'succeeded', { ms: 11 }), false);
  r.log.add(settled(r.held[1]!, 'pending', { ms: 22 }), false);
  r.log.add(settled(r.held[2]!, 'failed', { ms: 33, disable: true }), false);
  r.log.add(settled(r.held[3]!, 'failed', { ms: 44 }), false);
  await r.log.settle();
  t.same(r.counted, [
    ['success', 11],
    ['failure', 22],
    ['gone', 33],
    ['failure', 44],
  ]);
  t.equal(
    r.lines().filter((l) => l.msg === 'webhook attempt failed').length,
    3,
    'a line per attempt that did not succeed',
  );
});

t.test('a batch that fails to commit is kept, with its pending rows, and written first with the next', async (t) => {
  const r = await rig(t, { blockB: true });
  t.equal(r.held.length, 2, 'endpoint a holds its two deliveries');
  const [first, second] = r.held;
  r.answers.push('failed');
  r.log.add(settled(first!), true);
  await waitFor('the failure handled', () =>
    r.lines().some((l) => l.msg === 'webhooks: recording attempts failed; will retry'),
  );
  t.equal(r.calls.length, 1);
  t.equal(r.calls[0]!.answer, 'failed');
  const pendingFirst = r.calls[0]!.input.pending;
  t.equal(pendingFirst.length, 2, "endpoint b's two deliveries go pending with the first batch");
  t.same(r.counted, [], 'a batch not recorded is not counted');
  t.ok(
    r.lines().some((l) => l.msg === 'webhooks: recording attempts failed; will retry' && l.level === 50),
    'the failure is logged as an error',
  );
  t.notOk(hasDelivery(r.db, first!.eventSeq, first!.endpointId));

  r.log.add(settled(second!), true);
  await r.log.settle();
  t.equal(r.calls.length, 2);
  t.same(
    r.calls[1]!.input.batch.map((a) => [a.eventSeq, a.attempt.endpointId]),
    [
      [first!.eventSeq, first!.endpointId],
      [second!.eventSeq, second!.endpointId],
    ],
    'the kept attempt first, then the new one',
  );
  t.same(r.calls[1]!.input.pending, pendingFirst, "the failed batch's pending rows go with the next");
  t.same(
    r.counted.map(([o]) => o),
    ['success', 'success'],
  );
  t.ok(hasDelivery(r.db, first!.eventSeq, first!.endpointId), 'the kept attempt is in the store at last');
});

t.test('a batch that failed is tried again by itself a second later', async (t) => {
  const r = await rig(t);
  r.answers.push('failed');
  r.log.add(settled(r.held[0]!), true);
  await waitFor('a second batch', () => r.calls.length >= 2, 10_000);
  await r.log.settle();
  t.equal(r.calls.length, 2, 'retried without another attempt');
  t.equal(r.calls[1]!.answer, 'ok');
  t.ok(hasDelivery(r.db, r.held[0]!.eventSeq, r.held[0]!.endpointId));
});

t.test(
  'a batch the store refuses (another node leads the fan-out): a warning, the attempts still counted',
  async (t) => {
    const r = await rig(t);
    r.answers.push('refused');
    r.log.add(settled(r.held[0]!), true);
    await r.log.settle();
    t.equal(r.calls.length, 1, 'not tried again');
    t.ok(
      r
        .lines()
        .some(
          (l) => l.level === 40 && l.msg === 'webhooks: another node leads the fan-out now; this one stops fanning out',
        ),
    );
    t.same(r.counted, [['success', 7]]);
  },
);
