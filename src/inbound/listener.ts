import { readFileSync } from 'node:fs';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { receiveMessage } from './message.js';
import { acceptRecipient } from './recipient.js';
import { type ListenerDeps, type Session, smtpError } from './session.js';

export type { ListenerDeps } from './session.js';

/**
 * The inbound SMTP listener: receiving domains, return-path bounces, the feedback address; nothing
 * else. These are the server and its hooks; what a recipient is checked for is recipient.ts, what
 * happens to a message message.ts, what a session carries session.ts.
 */
export function createListener(deps: ListenerDeps): SMTPServer {
  const { config } = deps;
  const s = config.smtp;
  const tls =
    s['tls.cert'] && s['tls.key'] ? { key: readFileSync(s['tls.key']), cert: readFileSync(s['tls.cert']) } : null;
  return new SMTPServer({
    name: config.server.hostname,
    banner: 'posthaste ESMTP',
    size: s.max_message_bytes,
    rejectOversized: true,
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ?? {}),
    // No PTR query per connection (it would leave the machine and stall without a resolver).
    disableReverseLookup: true,
    socketTimeout: s.socket_timeout,
    closeTimeout: 5_000,
    maxClients: s.max_clients,
    logger: false,
    ...sessionHooks(deps),
  });
}

type Hooks = Pick<SMTPServerOptions, 'onConnect' | 'onClose' | 'onMailFrom' | 'onRcptTo' | 'onData'>;

function sessionHooks(deps: ListenerDeps): Hooks {
  return {
    onConnect(session: Session, cb) {
      if (deps.isShuttingDown()) return cb(smtpError(421, '4.3.2 Service shutting down, try again later'));
      // STARTTLS while a certificate is configured, decided per connection: a reload (SIGHUP)
      // that adds or removes smtp.tls.cert applies to the next connection.
      session.disabledCommands = deps.settings.current.starttls ? ['AUTH'] : ['AUTH', 'STARTTLS'];
      cb();
    },
    onClose(session: Session) {
      session.hold?.release();
    },
    onMailFrom(_address, session: Session, cb) {
      session.hold?.release();
      session.hold = undefined;
      session.routes = [];
      cb();
    },
    onRcptTo(address, session: Session, cb) {
      acceptRecipient(deps, address, session).then(
        () => cb(),
        (e: Error) => cb(e),
      );
    },
    onData(stream, session: Session, cb) {
      receiveMessage(deps, stream, session).then(
        (text) => cb(null, text),
        (e: Error) => cb(e),
      );
    },
  };
}
