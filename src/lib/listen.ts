import { createServer, type Server } from 'node:net';
import { parseListen } from '../config/load.js';

/** An address the daemon listens on, with the configuration key that chose it. */
export interface ListenSpec {
  key: string;
  address: string;
}

/** A listener that cannot be opened: the message names the key, the address and what to do. */
export class ListenError extends Error {}

const WHY: Record<string, string> = {
  EADDRINUSE: 'the address is already in use (another process, or another posthaste key, listens there): stop it or choose another address',
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
