import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { fixture } from './fixtures.js';

export interface Received {
  path: string;
  id: string;
  timestamp: number;
  signature: string;
  body: string;
  type: string;
  /** Verified with the standardwebhooks package against the endpoint's secret. */
  verified: boolean;
  headers: Record<string, string | string[] | undefined>;
  at: number;
}

/** What the receiver does with the next request to a path: a status, a redirect, or hang. */
export type Behaviour = number | 'hang' | { redirect: string } | { status: number; body: string; type: string };

/**
 * A real https webhook receiver on loopback (certificate from the test CA). Every request is
 * checked with the standardwebhooks package; answers are scripted per path.
 */
export class WebhookReceiver {
  received: Received[] = [];
  secrets = new Map<string, string>();
  script = new Map<string, Behaviour[]>();
  fallback: Behaviour = 200;
  /** Requests open at once per path, and the most ever. */
  open = new Map<string, number>();
  peakOpen = new Map<string, number>();
  private server = https.createServer(
    { key: fixture('tls/server-key.pem'), cert: fixture('tls/server.pem') },
    (req, res) => {
      const p = req.url ?? '/';
      this.open.set(p, (this.open.get(p) ?? 0) + 1);
      this.peakOpen.set(p, Math.max(this.peakOpen.get(p) ?? 0, this.open.get(p)!));
      res.on('close', () => this.open.set(p, (this.open.get(p) ?? 1) - 1));
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const body = Buffer.concat(chunks).toString('utf8');
        const secret = this.secrets.get(path);
        let verified = false;
        try {
          if (secret) {
            new Webhook(secret).verify(body, req.headers as Record<string, string>);
            verified = true;
          }
        } catch {
          verified = false;
        }
        let type = '';
        try {
          type = (JSON.parse(body) as { type: string }).type;
        } catch {
          /* not JSON */
        }
        this.received.push({
          path,
          id: String(req.headers['webhook-id']),
          timestamp: Number(req.headers['webhook-timestamp']),
          signature: String(req.headers['webhook-signature']),
          body,
          type,
          verified,
          headers: req.headers,
          at: Date.now(),
        });
        const queue = this.script.get(path);
        const b = (queue?.length ? queue.shift() : undefined) ?? this.fallback;
        if (b === 'hang') return; // never answers
        if (typeof b === 'object' && 'redirect' in b) return res.writeHead(302, { location: b.redirect }).end();
        if (typeof b === 'object') return res.writeHead(b.status, { 'content-type': b.type }).end(b.body);
        res
          .writeHead(b, { 'content-type': 'text/plain' })
          .end(b >= 200 && b < 300 ? 'ok' : `status ${b} ` + 'x'.repeat(2000));
      });
    },
  );
  port = 0;

  async start(host = '127.0.0.1'): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, host, () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
