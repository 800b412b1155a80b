import type { SMTPServerAuthentication, SMTPServerAuthenticationResponse } from 'smtp-server';
import { addressAllowed, hasScope } from '../domain/key-scopes.js';
import { isStoreUnavailable } from '../store/errors.js';
import type { ApiKeyInfo } from '../store/model.js';
import { type Session, type SubmissionDeps, smtpError } from './session.js';

/**
 * AUTH (RFC 4954, PLAIN and LOGIN): the password is an API key, the user name is not read
 * (docs/submission.md says why). The key is looked up checked, the auth epoch read first, so a key
 * revoked is refused at the next AUTH on every node; the epoch the cache was at is kept with the
 * session, and the commit of each message checks the key again when it has moved since.
 *
 * Repeated failures from one address are throttled: past FAILURES_ALLOWED in FAILURE_WINDOW_MS,
 * every AUTH from it is answered 454 4.7.0 after THROTTLE_DELAY_MS, its credentials unread, until
 * its oldest failure leaves the window. Neither the password nor the user name (some clients put
 * the key there) is ever logged.
 */
export const FAILURES_ALLOWED = 10;
export const FAILURE_WINDOW_MS = 15 * 60_000;
export const THROTTLE_DELAY_MS = 2_000;
/** Addresses remembered at most (a spray from many addresses cannot grow the map without bound). */
const MAX_ADDRESSES = 10_000;

/** Failed AUTHs per client address, in memory (a restart forgets them, as the dashboard's login throttle does). */
export class AuthFailures {
  private readonly failures = new Map<string, number[]>();

  /** Whether this address is throttled now; its failures older than the window are let go. */
  throttled(address: string, now: number): boolean {
    const times = this.failures.get(address);
    if (!times) return false;
    while (times.length > 0 && times[0]! <= now - FAILURE_WINDOW_MS) times.shift();
    if (times.length === 0) this.failures.delete(address);
    return times.length >= FAILURES_ALLOWED;
  }

  /** One more failure; true when it is the one that starts the throttling. */
  fail(address: string, now: number): boolean {
    let times = this.failures.get(address);
    if (!times) {
      if (this.failures.size >= MAX_ADDRESSES) this.failures.delete(this.failures.keys().next().value!);
      times = [];
      this.failures.set(address, times);
    }
    times.push(now);
    return times.length === FAILURES_ALLOWED;
  }
}

/**
 * Why a live key may not submit (domain/key-scopes.ts): it lacks the `send` scope, or the
 * connecting address is outside its allowed_cidrs; undefined when it may.
 */
function keyRefusal(key: ApiKeyInfo, address: string): string | undefined {
  if (!hasScope(key, 'send')) return 'the key lacks the send scope';
  if (!addressAllowed(key.allowed_cidrs, address)) return "the client address is outside the key's allowed_cidrs";
  return undefined;
}

type AuthCallback = (err: Error | null | undefined, response?: SMTPServerAuthenticationResponse) => void;

/** smtp-server's onAuth for the submission listeners. */
export function onAuth(
  deps: SubmissionDeps,
  failures: AuthFailures,
): (auth: SMTPServerAuthentication, session: Session, cb: AuthCallback) => void {
  return (auth, session, cb) => {
    const address = session.remoteAddress;
    if (failures.throttled(address, deps.clock.now())) {
      deps.onAuth?.('throttled');
      setTimeout(
        () => cb(smtpError(454, '4.7.0 Too many failed authentications from your address; try again later')),
        THROTTLE_DELAY_MS,
      ).unref();
      return;
    }
    deps.auth.key(auth.password ?? '', true).then(
      (key) => {
        if (!key) {
          deps.onAuth?.('failure');
          if (failures.fail(address, deps.clock.now()))
            deps.log.warn(
              { remote: address, failures: FAILURES_ALLOWED },
              'submission: repeated failed AUTH; throttling this address',
            );
          else
            deps.log.info(
              { remote: address, method: auth.method },
              'submission: AUTH refused (unknown or revoked API key)',
            );
          return cb(smtpError(535, '5.7.8 Authentication credentials invalid: the password must be a current API key'));
        }
        const refused = keyRefusal(key, address);
        if (refused) {
          // The reason is for the log: the client hears only that the credentials do not serve here.
          deps.onAuth?.('failure');
          deps.log.info({ remote: address, key: key.id }, `submission: AUTH refused (${refused})`);
          return cb(smtpError(535, '5.7.8 Authentication credentials invalid'));
        }
        session.key = key;
        session.authEpoch = deps.auth.epoch;
        deps.onAuth?.('success');
        cb(null, { user: key.id });
      },
      (e: unknown) => {
        if (!isStoreUnavailable(e)) deps.log.error({ err: e }, 'submission: AUTH failed');
        cb(smtpError(454, '4.7.0 Temporary authentication failure, try again later'));
      },
    );
  };
}
