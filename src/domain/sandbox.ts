import { type Reply, reply } from './outcome.js';

/** The simulator domain: its local parts choose the outcome of a sandbox message (docs/delivery.md). */
export const SIMULATOR_DOMAIN = 'simulator.posthaste.test';

export type SandboxStep =
  | { kind: 'delivered'; reply: Reply }
  | { kind: 'deferred'; reply: Reply }
  | { kind: 'bounced'; bounceType: 'hard' | 'expired'; reply: Reply; suppress: boolean }
  | { kind: 'async_bounce'; reply: Reply }
  | { kind: 'complaint'; feedbackType: string; userAgent: string };

const OK = reply(250, '2.0.0', 'OK: sandbox message not delivered');

/**
 * What happens to a sandbox recipient on this attempt (`attempts` made so far). Nothing here
 * opens a connection; everything but the simulator domain is "delivered" at once.
 */
export function sandboxSteps(address: string, attempts: number): SandboxStep[] {
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at).toLowerCase();
  const domain = address.slice(at + 1).toLowerCase();
  if (domain !== SIMULATOR_DOMAIN) return [{ kind: 'delivered', reply: OK }];
  switch (local) {
    case 'bounced':
      return [
        {
          kind: 'bounced',
          bounceType: 'hard',
          reply: reply(
            550,
            '5.1.1',
            'The email account that you tried to reach does not exist (simulated)',
            'unknown_recipient',
          ),
          suppress: true,
        },
      ];
    case 'async-bounced':
      return [
        { kind: 'delivered', reply: OK },
        { kind: 'async_bounce', reply: reply(550, '5.1.1', 'User unknown (simulated DSN)', 'unknown_recipient') },
      ];
    case 'deferred':
      return attempts === 0
        ? [{ kind: 'deferred', reply: reply(451, '4.3.0', 'Temporary failure, try again later (simulated)', 'other') }]
        : [{ kind: 'delivered', reply: OK }];
    case 'expired':
      return attempts === 0
        ? [{ kind: 'deferred', reply: reply(451, '4.4.1', 'No answer from host (simulated)', 'timeout') }]
        : [
            {
              kind: 'bounced',
              bounceType: 'expired',
              reply: reply(451, '4.4.7', 'Delivery time expired (simulated)', 'expired'),
              suppress: false,
            },
          ];
    case 'complained':
      return [
        { kind: 'delivered', reply: OK },
        { kind: 'complaint', feedbackType: 'abuse', userAgent: 'posthaste-simulator/1.0' },
      ];
    default:
      return [{ kind: 'delivered', reply: OK }];
  }
}
