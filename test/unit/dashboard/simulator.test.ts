import t from 'tap';
import { SUPPRESSING_SIMULATOR_ADDRESSES } from '../../../src/dashboard/simulator.js';
import { type SandboxStep, SIMULATOR_DOMAIN, sandboxSteps } from '../../../src/domain/sandbox.js';

// A step that fires recipient.suppressed (outbound/scheduler.ts recordSandbox): a hard bounce
// that suppresses, an async bounce, a complaint.
const suppresses = (s: SandboxStep) =>
  (s.kind === 'bounced' && s.suppress && s.bounceType === 'hard') ||
  s.kind === 'async_bounce' ||
  s.kind === 'complaint';
const suppressing = (address: string) => [0, 1, 2].some((attempts) => sandboxSteps(address, attempts).some(suppresses));

t.test('the simulator addresses the dashboard lists are those that suppress, and only those', async (t) => {
  for (const a of SUPPRESSING_SIMULATOR_ADDRESSES) t.ok(suppressing(a), a);
  for (const local of ['delivered', 'deferred', 'expired', 'anyone'])
    t.notOk(suppressing(`${local}@${SIMULATOR_DOMAIN}`), `${local}: does not suppress`);
});
