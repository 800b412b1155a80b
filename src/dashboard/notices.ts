/**
 * What a page says after a form redirected to it, chosen by a code in its URL (`?notice=`,
 * `?error=`). The URL carries the code only: anyone can make a link to a dashboard page, and a
 * trusted page must not say in its own banner what that link's author wrote ("your account is
 * suspended, call …"). A code it does not know gets a generic sentence. What depends on the
 * input (why a domain name is not one) is said on the page the form's POST answers itself.
 */
export const NOTICES = {
  'customer-shown': 'Showing the customer chosen above.',
  'customer-created': 'Customer created.',
  'domain-added': 'Domain added: publish its DNS records, then verify.',
  'receiving-on': 'Receiving on.',
  'receiving-off': 'Receiving off.',
  'limits-saved': 'Inbound limits saved.',
  'key-revoked': 'Key revoked: requests with it are refused.',
  'endpoint-enabled': 'Endpoint enabled.',
  'endpoint-disabled': 'Endpoint disabled.',
  'endpoint-deleted': 'Endpoint deleted.',
  'endpoint-updated': 'Endpoint saved.',
  'message-canceled': 'Canceled: nothing will be sent.',
  'queue-retried': 'Retried: the deferred recipients are due now.',
  'queue-held': 'Held: the waiting recipients are not tried until released.',
  'queue-released': 'Released: the held recipients are due now.',
  'queue-deleted': 'Deleted: the waiting recipients are canceled and will not be sent.',
  'queue-unchanged': 'Nothing changed: no recipient was in a state this applies to.',
  'suppression-added': 'The address is suppressed.',
  'suppression-removed': 'The address is no longer suppressed.',
  'customer-paused': "Paused: this customer's new sends are refused and its queued mail is held.",
  'customer-resumed': "Resumed: this customer's held mail goes out, and its rates count again from now.",
} as const;

export const ERRORS = {
  'too-late': 'Too late to cancel: delivery has ended.',
  'not-suppressed': 'That address was not suppressed.',
  'limits-invalid': 'Limits are whole numbers from 0 (no limit) up; leave empty for the server default.',
  'customer-name': 'A customer name is 1-63 letters, digits, "_", "." or "-".',
  'pause-reason': 'A pause needs a reason (at most 500 characters): the customer is told it.',
  'reputation-state': 'Nothing changed: the customer was already paused, or was not paused.',
} as const;

export type NoticeCode = keyof typeof NOTICES;

/** What each queue operation's form says when it changed something. */
export const QUEUE_NOTICES = {
  retry: 'queue-retried',
  hold: 'queue-held',
  release: 'queue-released',
  delete: 'queue-deleted',
} as const satisfies Record<string, NoticeCode>;
export type ErrorCode = keyof typeof ERRORS;

const GENERIC_NOTICE = 'Done.';
const GENERIC_ERROR = 'Something went wrong with the last request.';

/** The sentence a `?notice=` code stands for; undefined when there is none. */
export function noticeText(code: string | undefined): string | undefined {
  if (!code) return undefined;
  return Object.hasOwn(NOTICES, code) ? NOTICES[code as NoticeCode] : GENERIC_NOTICE;
}

/** The sentence an `?error=` code stands for; undefined when there is none. */
export function errorText(code: string | undefined): string | undefined {
  if (!code) return undefined;
  return Object.hasOwn(ERRORS, code) ? ERRORS[code as ErrorCode] : GENERIC_ERROR;
}
