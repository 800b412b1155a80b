import { readFileSync } from 'node:fs';
import { ConfigError } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { relayTarget } from '../../config/settings.js';
import type { RelayOptions } from '../smtp/session.js';

/** outbound.relay with its credentials: the password from relay_password_file, else relay_password (the environment). */
export function relayOptions(config: Config): RelayOptions | null {
  const o = config.outbound;
  const target = relayTarget(config); // valid: loadConfig checked it
  if (!target) return null;
  if (!o.relay_user) return target;
  let pass = o.relay_password;
  if (o.relay_password_file) {
    try {
      pass = readFileSync(o.relay_password_file, 'utf8').split(/\r?\n/)[0]!;
    } catch (e) {
      throw new ConfigError(
        'outbound.relay_password_file',
        `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
  }
  if (!pass)
    throw new ConfigError(
      'outbound.relay_user',
      'a relay user needs a password: outbound.relay_password_file, or POSTHASTE_OUTBOUND_RELAY_PASSWORD in the environment',
    );
  return { ...target, auth: { user: o.relay_user, pass } };
}
