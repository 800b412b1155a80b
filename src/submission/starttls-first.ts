import type { SMTPServer } from 'smtp-server';
import type { Session } from './session.js';

/**
 * AUTH before STARTTLS, answered as RFC 3207 4 and RFC 4954 4 say: `530 5.7.0 Must issue a
 * STARTTLS command first` (docs/submission.md, TLS).
 *
 * Before TLS a session has AUTH disabled (listener.ts, commandsOf), so that EHLO does not offer
 * it and a client that looks (smtplib, swaks, nodemailer) never sends its key in the clear. But
 * smtp-server answers a command a session has disabled with `500 Error: command not recognized`,
 * and offers no option or hook for that reply: `allowInsecureAuth: false` gives a non-standard
 * `538` and needs AUTH offered before TLS, and onAuth runs only after the credentials were read
 * (AUTH LOGIN would prompt for the key in the clear). So this one reply is replaced, on the
 * connection's own `send` (public, the single place smtp-server writes a reply from): a 500 to
 * the command AUTH while AUTH waits for TLS becomes the 530. Every check smtp-server makes before
 * that reply (a command during the TLS handshake, before the greeting, while closing) is still
 * its own, and nothing else it sends is touched. test/integration/submission-starttls.test.ts
 * (a raw client, smtplib) fails if a new smtp-server answers otherwise.
 */
export const STARTTLS_FIRST =
  '5.7.0 Must issue a STARTTLS command first: AUTH is offered once the session is under TLS';

/** Whether this session refuses AUTH until STARTTLS: not under TLS, AUTH disabled, STARTTLS offered. */
function authWaitsForTls(session: Session): boolean {
  const disabled = session.disabledCommands ?? [];
  return !session.secure && disabled.includes('AUTH') && !disabled.includes('STARTTLS');
}

/** Makes the connection of `session` answer AUTH before STARTTLS with 530 5.7.0 (from onConnect; a no-op if it is not found). */
export function answerAuthBeforeTls(server: SMTPServer, session: Session): void {
  for (const connection of server.connections) {
    if (connection.session !== session) continue;
    const send = connection.send.bind(connection);
    connection.send = (code, data, context) =>
      code === 500 && context === 'AUTH' && authWaitsForTls(session)
        ? send(530, STARTTLS_FIRST, false) // the enhanced code is in the text, as in smtpError's
        : send(code, data, context);
    return;
  }
}
