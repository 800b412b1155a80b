import { createServer, type Server } from 'node:http';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from '../lib/metrics.js';

/**
 * The metrics listener (metrics.listen, docs/operations.md "Watching it"): GET /metrics in
 * Prometheus' text format and nothing else. It asks no key, so it listens apart from the API
 * that applications reach, where only the scraper does (loopback by default).
 */
export function buildMetricsListener(metrics: Metrics, log: Logger): Server {
  return createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) =>
        res
          .writeHead(200, { 'content-type': metrics.registry.contentType })
          .end(req.method === 'HEAD' ? undefined : text),
      (e: unknown) => {
        log.error({ err: e }, 'metrics: a scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be read; see the log\n');
      },
    );
  });
}
