import { readFileSync } from 'node:fs';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerOptions } from 'smtp-server';
import { addressKey, parseAddrSpec } from '../domain/addresses.js';
import type { ListenSpec } from '../lib/listen.js';
import { reclaimAfter } from '../lib/reclaim.js';
import { isStoreUnavailable } from '../store/errors.js';
import { acceptSubmitted } from './accept.js';
import { AuthFailures, onAuth } from './auth.js';
import { receiveData } from './data.js';
import { type Session, type SubmissionDeps, smtpError } from './session.js';
import { answerAuthBeforeTls } from './starttls-first.js';

/**
 * SMTP submission for applications (docs/submission.md): `submission.listen` with STARTTLS (RFC
 * 3207) and `submission.listen_tls` with implicit TLS (RFC 8314), AUTH PLAIN or LOGIN with an API
 * key as the password, then each message sent as `POST /api/v1/emails` sends it. These are the
 * hooks; what happens to a message is accept.ts, what its header section says message.ts.
 */

export interface SubmissionListener {
  spec: ListenSpec;
  server: SMTPServer;
}

const AUTH_REQUIRED = '5.7.0 Authentication required: AUTH PLAIN or LOGIN with an API key as the password';
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;

/** The listeners the configuration asks for (none when both addresses are empty). */
export function createSubmission(deps: SubmissionDeps): SubmissionListener[] {
  const s = deps.config.submission;
  const tls =
    s['tls.cert'] && s['tls.key'] ? { key: readFileSync(s['tls.key']), cert: readFileSync(s['tls.cert']) } : null;
  const failures = new AuthFailures();
  const options = (secure: boolean, server: () => SMTPServer): SMTPServerOptions => ({
    name: deps.config.server.hostname,
    banner: 'posthaste ESMTP submission',
    secure,
    ...(tls ?? {}),
    size: deps.config.limits.max_message_bytes,
    rejectOversized: true,
    authMethods: ['PLAIN', 'LOGIN'],
    // Whether AUTH may be used before TLS is decided per connection (commandsOf: AUTH is not
    // offered, and answered 530 5.7.0 by starttls-first.ts, until TLS, except on loopback when
    // allowed); without this smtp-server would refuse it with 538 wherever STARTTLS is offered,
    // loopback included.
    allowInsecureAuth: true,
    authRequiredMessage: AUTH_REQUIRED,
    // Extensions the path behind does not keep: DSN requests, REQUIRETLS and SMTPUTF8 addresses
    // (recipients are checked as the API checks them: ASCII local parts).
    hideDSN: true,
    hideREQUIRETLS: true,
    hideSMTPUTF8: true,
    disableReverseLookup: true,
    socketTimeout: s.socket_timeout,
    closeTimeout: 5_000,
    maxClients: s.max_clients,
    logger: false,
    ...sessionHooks(deps, failures, server),
  });
  const listener = (key: string, address: string, secure: boolean): SubmissionListener => {
    const server: SMTPServer = new SMTPServer(options(secure, () => server));
    return { spec: { key, address }, server };
  };
  const out: SubmissionListener[] = [];
  if (s.listen) out.push(listener('submission.listen', s.listen, false));
  if (s.listen_tls) out.push(listener('submission.listen_tls', s.listen_tls, true));
  return out;
}

/** Which commands a connection is offered: AUTH only over TLS, or in the clear from loopback when allowed (RFC 8314, Postfix's smtpd_tls_auth_only). */
function commandsOf(deps: SubmissionDeps, session: Session): string[] {
  const starttls = deps.settings.current.starttls;
  if (session.secure) return ['STARTTLS'];
  const plainAuth = deps.config.submission.allow_plaintext_auth_on_loopback && LOOPBACK.test(session.remoteAddress);
  return [...(plainAuth ? [] : ['AUTH']), ...(starttls ? [] : ['STARTTLS'])];
}

type Hooks = Pick<
  SMTPServerOptions,
  'onConnect' | 'onSecure' | 'onAuth' | 'onMailFrom' | 'onRcptTo' | 'onData' | 'onClose'
>;

function sessionHooks(deps: SubmissionDeps, failures: AuthFailures, server: () => SMTPServer): Hooks {
  return {
    onConnect(session: Session, cb) {
      if (deps.isShuttingDown()) return cb(smtpError(421, '4.3.2 Service shutting down, try again later'));
      session.disabledCommands = commandsOf(deps, session);
      // AUTH before STARTTLS: 530 5.7.0, not smtp-server's 500 for a disabled command.
      if (!session.secure) answerAuthBeforeTls(server(), session);
      cb();
    },
    onSecure(_socket, session: Session, cb) {
      // RFC 3207 4.2: nothing learnt before TLS counts after it.
      session.key = undefined;
      session.disabledCommands = commandsOf(deps, session);
      cb();
    },
    onAuth: onAuth(deps, failures),
    onMailFrom(_address, session: Session, cb) {
      // Not judged: a smarthost sends its local sender here; the From field is what is checked.
      // AUTH disabled (no TLS yet) leaves smtp-server's own check off, so it is made here too.
      if (!session.key) return cb(smtpError(530, AUTH_REQUIRED));
      if (session.revoked)
        return cb(smtpError(530, '5.7.0 The API key was revoked: connect and authenticate again with a current key'));
      session.hold?.release();
      session.hold = undefined;
      session.rcpts = [];
      cb();
    },
    onRcptTo(address, session: Session, cb) {
      rcpt(deps, address, session).then(
        () => cb(),
        (e: unknown) => cb(e as Error),
      );
    },
    onData(stream, session: Session, cb) {
      data(deps, stream, session).then(
        (text) => cb(null, text),
        (e: Error) => cb(e),
      );
    },
    onClose(session: Session) {
      session.hold?.release();
    },
  };
}

/** RCPT TO: an address as the API takes one, within limits.max_recipients, not on the customer's suppression list. */
async function rcpt(deps: SubmissionDeps, address: SMTPServerAddress, session: Session): Promise<void> {
  const rcpts = (session.rcpts ??= []);
  const max = deps.send.current.maxRecipients;
  if (rcpts.length >= max)
    throw smtpError(
      452,
      `4.5.3 Too many recipients: at most ${max} in one message (limits.max_recipients); send the rest in another`,
    );
  const parsed = parseAddrSpec(address.address);
  if (!parsed.ok) throw smtpError(553, `5.1.3 <${address.address}>: ${parsed.error}`);
  const { address: addr, domain } = parsed.value;
  if (rcpts.some((r) => addressKey(r.address) === addressKey(addr))) return; // sent once
  let reason: string | undefined;
  try {
    reason = (await deps.store.suppressions.find(session.key!.customer_id, [addr])).get(addressKey(addr));
  } catch (e) {
    if (!isStoreUnavailable(e)) deps.log.error({ err: e }, 'submission: recipient check failed');
    throw smtpError(451, '4.3.0 Local error, try again later');
  }
  if (reason) {
    deps.onResult?.('suppressed');
    throw smtpError(550, `5.7.1 <${addr}>: on the suppression list (${reason}); nothing is sent to it`);
  }
  rcpts.push({ address: addr, domain });
}

/** DATA: read (smuggling, size, memory), then accepted through the store; the 250 text, or the refusal as an SMTP error. */
async function data(deps: SubmissionDeps, stream: SMTPServerDataStream, session: Session): Promise<string> {
  const got = await receiveData(stream, session, deps.budget, deps.config.limits.max_message_bytes);
  const release = () => {
    session.hold?.release();
    session.hold = undefined;
  };
  if (got.kind !== 'message') {
    release();
    deps.onResult?.(got.kind);
    if (got.kind === 'bare_newline')
      throw smtpError(550, '5.5.2 Bare <CR> or <LF> received: message refused (RFC 5321 2.3.8)');
    throw smtpError(552, '5.3.4 Message too big');
  }
  try {
    const text = await acceptSubmitted(deps, session, got.chunks, got.size);
    deps.onResult?.('accepted');
    deps.onAccepted?.();
    return text;
  } catch (e) {
    if (isRefusal(e)) {
      deps.onResult?.(e.code === 550 ? 'refused_sender' : e.code < 500 ? 'deferred' : 'refused_content');
      throw smtpError(e.code, e.text);
    }
    if (!isStoreUnavailable(e)) deps.log.error({ err: e }, 'submitted message failed');
    deps.onResult?.('deferred');
    throw smtpError(451, '4.3.0 Local error: the message was not queued, try again later');
  } finally {
    release();
    reclaimAfter(got.size);
  }
}

const isRefusal = (e: unknown): e is { code: number; text: string } =>
  typeof (e as { code?: unknown })?.code === 'number' && typeof (e as { text?: unknown }).text === 'string';
