import type { Config } from '../config/schema.js';
import {
  type InboundSettings,
  inboundSettings,
  type Live,
  live,
  type OutboundSettings,
  outboundSettings,
  type SendSettings,
  type SubmissionSettings,
  sendSettings,
  submissionSettings,
} from '../config/settings.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';

/** What the steps share: the configuration as started (never changed), the log, the clock, and each part's settings that reloads replace. */
export interface Ctx {
  config: Config;
  log: Logger;
  clock: Clock;
  settings: Settings;
}

/** The parts' reloadable settings (config/settings.ts). */
export interface Settings {
  inbound: Live<InboundSettings>;
  send: Live<SendSettings>;
  outbound: Live<OutboundSettings>;
  submission: Live<SubmissionSettings>;
}

/** Each part's settings as the configuration starts them. */
export function startSettings(config: Config): Settings {
  return {
    inbound: live(inboundSettings(config)),
    send: live(sendSettings(config)),
    outbound: live(outboundSettings(config)),
    submission: live(submissionSettings(config)),
  };
}
