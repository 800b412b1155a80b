import { SIMULATOR_DOMAIN } from '../domain/sandbox.js';

/**
 * The simulator's addresses whose outcome fires recipient.suppressed (docs/delivery.md, "Sandbox
 * and the simulator"): a hard bounce, an async bounce, a complaint. A sandbox key's message to
 * them suppresses nothing for real; the Suppressions page lists what they simulated apart.
 * test/unit/dashboard/simulator.test.ts checks the list against the simulator itself.
 */
export const SUPPRESSING_SIMULATOR_ADDRESSES = ['bounced', 'async-bounced', 'complained'].map(
  (local) => `${local}@${SIMULATOR_DOMAIN}`,
);
