import type { Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { SMTPServer } from 'smtp-server';
import { parseListen } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Logger } from './logger.js';

/** An address the daemon listens on, with the configuration key that chose it. */
export interface ListenSpec {
  key: string;
  address: string;
}

/** A listener that cannot be opened: the message names the key, the address and what to do. */
export class ListenError extends Error {}

const WHY: Record<string, string> = {
  EADDRINUSE:
    'the address is already in use (another process, or another posthaste key, listens there): stop it or choose another address',
  EACCES: 'permission denied: a port below 1024 needs root or CAP_NET_BIND_SERVICE (the systemd unit grants it)',
  EADDRNOTAVAIL: 'no network interface of this machine has that address',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved',
};

/** A failed listen in words: `api.listen = "127.0.0.1:8025": cannot listen: the address is already in use … (EADDRINUSE)`. */
export function listenError(spec: ListenSpec, e: Error & { code?: string }): ListenError {
  const code = e.code ?? 'error';
  return new ListenError(`${spec.key} = "${spec.address}": cannot listen: ${WHY[code] ?? e.message} (${code})`);
}

function bind(spec: ListenSpec): Promise<Server> {
  const { host, port } = parseListen(spec.address);
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (e) => reject(listenError(spec, e)));
    server.listen({ host, port, exclusive: true }, () => resolve(server));
  });
}

/**
 * Binds every address at once and lets them go, before the daemon opens anything: a port in use
 * (or two keys on one address, or a port below 1024 without the capability) stops the start with
 * the key named, before any listener could answer. Port 0 (any free port) needs no check.
 */
export async function checkListen(specs: ListenSpec[]): Promise<void> {
  const held: Server[] = [];
  try {
    for (const spec of specs) if (parseListen(spec.address).port !== 0) held.push(await bind(spec));
  } finally {
    await Promise.all(held.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

/** Binds a node server (net or http) where `spec` says; resolves with the port it got (0 asks for any). */
export function listenOn(server: Server, spec: ListenSpec): Promise<number> {
  const { host, port } = parseListen(spec.address);
  return new Promise((resolve, reject) => {
    const fail = (e: Error) => reject(listenError(spec, e));
    server.once('error', fail);
    server.listen({ host, port }, () => {
      server.off('error', fail);
      const a = server.address();
      resolve(typeof a === 'object' && a ? a.port : port);
    });
  });
}

/** The addresses the configuration asks the daemon to listen on, each with its key. */
export function listenSpecs(config: Config): ListenSpec[] {
  return [
    { key: 'api.listen', address: config.api.listen },
    { key: 'smtp.listen', address: config.smtp.listen },
    ...(config.dashboard.listen ? [{ key: 'dashboard.listen', address: config.dashboard.listen }] : []),
    ...(config.metrics.enabled && config.metrics.listen
      ? [{ key: 'metrics.listen', address: config.metrics.listen }]
      : []),
    ...(config.submission.listen ? [{ key: 'submission.listen', address: config.submission.listen }] : []),
    ...(config.submission.listen_tls ? [{ key: 'submission.listen_tls', address: config.submission.listen_tls }] : []),
    ...(config.unsubscribe.listen ? [{ key: 'unsubscribe.listen', address: config.unsubscribe.listen }] : []),
  ];
}

/** The daemon's listeners, built, bound in bindListeners. */
export interface Listeners {
  smtp: SMTPServer;
  api: FastifyInstance;
  dashboard: FastifyInstance | undefined;
  /** /metrics on its own address (metrics.listen). */
  metrics: HttpServer | undefined;
  /** Submission for applications (submission.listen, submission.listen_tls), each with its key. */
  submission: Array<{ spec: ListenSpec; server: SMTPServer }>;
  /** One-click unsubscribe on its own address (unsubscribe.listen). */
  unsubscribe?: HttpServer | undefined;
}

/** An SMTP listener (inbound, or submission), bound where `spec` says; resolves with the address it listens on. */
async function listenSmtp(
  spec: ListenSpec,
  log: Logger,
  listener: SMTPServer,
): Promise<{ host: string; port: number }> {
  const addr = parseListen(spec.address);
  await new Promise<void>((resolve, reject) => {
    // smtp-server re-emits the socket's errors on itself: a failed bind must reject, not crash.
    const fail = (e: Error) => reject(listenError(spec, e));
    listener.once('error', fail);
    listener.listen(addr.port, addr.host, () => {
      listener.off('error', fail);
      resolve();
    });
  });
  listener.on('error', (e) => log.error({ err: e, listener: spec.key }, 'smtp listener error'));
  const bound = listener.server.address();
  return { host: addr.host, port: typeof bound === 'object' && bound ? bound.port : addr.port };
}

/** A fastify app listening where `spec` says; its URL (the port it got when 0 was asked for). */
async function listenHttp(app: FastifyInstance, spec: ListenSpec, scheme: 'http' | 'https'): Promise<string> {
  const { host, port } = parseListen(spec.address);
  try {
    await app.listen({ host, port });
  } catch (e) {
    throw listenError(spec, e as Error);
  }
  const a = app.server.address();
  return `${scheme}://${hostPort(host, typeof a === 'object' && a ? a.port : port)}`;
}

/** "host:port", an IPv6 host in brackets. */
const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/**
 * Binds every listener. The addresses were checked when the start began (checkListen), so
 * this fails only when another process took one since; then those already bound are closed and
 * the error names the key.
 */
export async function bindListeners(
  config: Config,
  log: Logger,
  l: Listeners,
): Promise<{
  smtp: { host: string; port: number };
  apiUrl: string;
  dashboardUrl: string | null;
  metricsUrl: string | null;
  submission: Record<string, { host: string; port: number }>;
  unsubscribeUrl: string | null;
}> {
  try {
    const smtp = await listenSmtp({ key: 'smtp.listen', address: config.smtp.listen }, log, l.smtp);
    const apiUrl = await listenHttp(
      l.api,
      { key: 'api.listen', address: config.api.listen },
      config.api['tls.cert'] ? 'https' : 'http',
    );
    // The dashboard on its own listener (dashboard.listen), so it is exposed only where the admin puts it.
    const dashboardBound = l.dashboard
      ? await listenHttp(l.dashboard, { key: 'dashboard.listen', address: config.dashboard.listen }, 'http')
      : null;
    const metricsSpec = { key: 'metrics.listen', address: config.metrics.listen };
    const metricsUrl = l.metrics
      ? `http://${hostPort(parseListen(metricsSpec.address).host, await listenOn(l.metrics, metricsSpec))}/metrics`
      : null;
    const submission: Record<string, { host: string; port: number }> = {};
    for (const { spec, server } of l.submission) submission[spec.key] = await listenSmtp(spec, log, server);
    const unsubscribeSpec = { key: 'unsubscribe.listen', address: config.unsubscribe.listen };
    const unsubscribeUrl = l.unsubscribe
      ? `http://${hostPort(parseListen(unsubscribeSpec.address).host, await listenOn(l.unsubscribe, unsubscribeSpec))}`
      : null;
    return {
      unsubscribeUrl,
      smtp,
      apiUrl,
      dashboardUrl: dashboardBound && (config.dashboard.public_url || dashboardBound),
      metricsUrl,
      submission,
    };
  } catch (e) {
    await closeListeners(l);
    throw e;
  }
}

/** Closes every listener (bound or not); an http server's kept-alive connections (scrapers) are ended, so a shutdown does not wait for them. */
export function closeListeners(l: Listeners): Promise<unknown> {
  const closeHttp = (server: HttpServer) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  const closeSmtp = (server: SMTPServer) => new Promise<void>((resolve) => server.close(() => resolve()));
  return Promise.all([
    l.api.close(),
    l.dashboard?.close(),
    l.metrics && closeHttp(l.metrics),
    l.unsubscribe && closeHttp(l.unsubscribe),
    closeSmtp(l.smtp),
    ...l.submission.map((s) => closeSmtp(s.server)),
  ]);
}
