import { addressKey } from '../domain/addresses.js';
import { pausedText, poolText, type Refusal as SendRefusal } from '../domain/errors.js';
import { quotaMessage } from '../domain/quotas.js';
import { acceptInputOf, admitSend, isRefused, sendRules } from '../send/admit.js';
import { acceptSend } from '../store/auth-cache.js';
import { isStoreFull, isStoreUnavailable } from '../store/errors.js';
import type { AcceptInput, SendCommit } from '../store/model.js';
import { type Refusal, readSubmitted, type Submitted } from './message.js';
import type { Rcpt, Session, SubmissionDeps } from './session.js';

/**
 * A submitted message, from the bytes DATA brought to the store's commit: the same steps as
 * `POST /api/v1/emails` (send/admit.ts: the sender domain the key's customer's and verified, a
 * Message-ID drawn; then the commit that re-checks the key and the domain when the auth epoch
 * moved and refuses a suppressed recipient), with the message itself as the stored request
 * (format `mime`).
 * Resolves with the 250 text; throws the Refusal the client gets otherwise.
 */
export async function acceptSubmitted(
  deps: SubmissionDeps,
  session: Session,
  chunks: Buffer[],
  size: number,
): Promise<string> {
  const key = session.key!;
  const authEpoch = session.authEpoch!;
  const now = deps.clock.now();
  const read = readSubmitted(chunks, size);
  if ('code' in read) throw read;
  const admitted = await admitSend(deps.auth, sendRules(deps), {
    key,
    fromDomain: read.from.domain,
    unsubscribe: read.unsubscribe,
    ...(read.pool !== undefined ? { pool: read.pool } : {}),
    now,
  });
  if (isRefused(admitted)) throw smtpRefusal(admitted, read.from.domain);
  const { messageId } = admitted;
  const input: AcceptInput = acceptInputOf(
    key,
    admitted,
    {
      // The client's own Message-ID, kept in the message: it finds the message too (docs/submission.md).
      ...(read.headerMessageId !== undefined ? { headerMessageId: read.headerMessageId } : {}),
      fromHeader: read.fromHeader,
      subject: read.subject,
      metadata: read.metadata,
      request: read.build(receivedField(deps, session, messageId, now), missingFields(read, messageId, now)),
      requestFormat: 'mime',
      recipients: (session.rcpts ?? []).map((r) => ({ ...r, field: fieldOf(read, r) })),
      ...(read.tags.length ? { tags: read.tags } : {}),
      ...(read.unsubscribe ? { unsubscribe: true } : {}),
    },
    now,
  );
  // The commit checks the key and the domain again if the epoch moved, and drops the cache if it did (store/auth-cache.ts).
  const result = await commit(deps, { ...input, authEpoch });
  // Accepted: the key was live at the epoch the commit answers (checked there if the epoch had
  // moved), so the session's next message is checked again only if it moves after this one.
  if (result.kind === 'accepted') session.authEpoch = result.authEpoch;
  return answer(session, result, messageId);
}

const refusal = (code: number, text: string): Refusal => ({ code, text });

/** The store's commit, its infrastructure failures as the temporary refusals SMTP has for them. */
async function commit(deps: SubmissionDeps, input: AcceptInput & { authEpoch: string }): Promise<SendCommit> {
  try {
    return await acceptSend(deps.auth, deps.store.messages, input);
  } catch (e) {
    if (isStoreFull(e)) throw refusal(452, '4.3.1 Insufficient system storage, try again later');
    if (isStoreUnavailable(e)) deps.log.warn({ err: e }, 'store unavailable: submitted message refused with 451');
    else deps.log.error({ err: e }, 'submitted message failed');
    throw refusal(451, '4.3.0 Local error: the message was not queued, try again later');
  }
}

/** What the commit decided, as the client hears it: 250 naming the message, or why nothing was queued. */
function answer(session: Session, result: SendCommit, messageId: string): string {
  switch (result.kind) {
    case 'accepted':
      return `2.0.0 Ok: queued as ${messageId}`;
    case 'key_revoked':
      // Temporary: a client that authenticates again with a current key sends it then.
      session.revoked = true;
      throw refusal(
        451,
        '4.7.0 The API key was revoked after this session authenticated: nothing was queued; authenticate again with a current key',
      );
    case 'domain_unknown':
    case 'domain_unverified':
      throw refusal(550, '5.7.1 The sender domain was removed or unverified meanwhile: nothing was queued');
    case 'suppressed':
    case 'rate_limited':
    case 'customer_paused':
      throw smtpRefusal(result, '');
    default:
      throw refusal(451, '4.3.0 Local error: the message was not queued, try again later');
  }
}

/** A send's refusal (domain/errors.ts, Refusal) as the SMTP reply submission gives it; `domain` is the From domain. */
function smtpRefusal(r: SendRefusal, domain: string): Refusal {
  switch (r.kind) {
    case 'from_not_allowed':
      return refusal(
        550,
        `5.7.1 This API key may send only from ${r.allowed.join(', ')}: ${domain} is not one of them`,
      );
    case 'domain_unknown':
      return refusal(
        550,
        `5.7.1 ${domain} is not a sending domain of this API key's customer: the From address must be at one of its verified domains`,
      );
    case 'domain_unverified':
      return refusal(
        550,
        `5.7.1 ${domain} is not verified yet: publish its DNS records, then posthaste domains verify ${domain}`,
      );
    case 'unsubscribe_unavailable':
      return refusal(
        550,
        '5.6.0 X-Posthaste-Unsubscribe: this server offers no one-click unsubscribe (unsubscribe.public_url is not configured): nothing was queued',
      );
    case 'customer_paused':
      return refusal(550, `5.7.1 ${pausedText(r.reason)}`);
    case 'pool_not_allowed':
      return refusal(550, `5.7.1 X-Posthaste-Pool: ${poolText(r)}: nothing was queued`);
    case 'suppressed': {
      // Added to the list after its RCPT TO was taken: the client tries again, and RCPT TO then
      // refuses that recipient alone while the others go.
      const names = r.addresses.map((a) => `<${a.address}> (${a.reason})`).join(', ');
      return refusal(451, `4.7.1 ${names} joined the suppression list meanwhile: nothing was queued; try again`);
    }
    case 'rate_limited':
      // Temporary: the client's queue tries again, as it would after any 4xx.
      return refusal(451, `4.7.1 ${quotaMessage(r.quota)}`);
  }
}

/** The trace field every SMTP server adds (RFC 5321 4.4): from whom, by which host, how (ESMTPSA, RFC 3848), under which id, when. */
function receivedField(deps: SubmissionDeps, session: Session, messageId: string, now: number): string {
  const ip = session.remoteAddress.includes(':') ? `IPv6:${session.remoteAddress}` : session.remoteAddress;
  const helo = session.hostNameAppearsAs || `[${ip}]`;
  const id = messageId.slice(0, messageId.indexOf('@'));
  return `Received: from ${helo} ([${ip}])\r\n\tby ${deps.config.server.hostname} (posthaste) with ${session.transmissionType || 'ESMTPSA'} id ${id};\r\n\t${rfc5322Date(now)}\r\n`;
}

/** Message-ID (posthaste's own) and Date (acceptance), where the client wrote none, as a submission server adds them (RFC 6409 8.3). */
function missingFields(read: Submitted, messageId: string, now: number): string {
  return (
    (read.hasMessageId ? '' : `Message-ID: <${messageId}>\r\n`) + (read.hasDate ? '' : `Date: ${rfc5322Date(now)}\r\n`)
  );
}

/** `Tue, 24 Nov 2026 09:00:00 +0000` (RFC 5322 3.3). */
export function rfc5322Date(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000');
}

/** Which field a recipient is shown under: the header field that names it, else Bcc (it is in the envelope only). */
function fieldOf(read: Submitted, r: Rcpt): 'to' | 'cc' | 'bcc' {
  const k = addressKey(r.address);
  return read.to.has(k) ? 'to' : read.cc.has(k) ? 'cc' : 'bcc';
}
