import t from 'tap';
import { SESSION_SEEN_STEP_MS, sessionUse } from '../../../src/store/model.js';

// The rule both engines apply when a dashboard session is used (store/model/accounts.ts): idle
// longer than the idle time, it ends; else its last-seen time is written again at most once a
// minute.

t.test('a session idle longer than the idle time ends; one used within it is seen again, to the minute', async (t) => {
  const idleMs = 30 * 60_000;
  t.equal(sessionUse(0, idleMs + 1, idleMs), 'end', 'idle one ms too long');
  t.equal(sessionUse(0, idleMs, idleMs), 'seen', 'idle exactly the idle time: still live, seen again');
  t.equal(sessionUse(0, SESSION_SEEN_STEP_MS, idleMs), 'keep', 'a minute: not written again yet');
  t.equal(sessionUse(0, SESSION_SEEN_STEP_MS + 1, idleMs), 'seen', 'past the minute: written again');
  t.equal(sessionUse(1000, 1000, idleMs), 'keep');
});
