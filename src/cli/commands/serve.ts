import type { Command } from 'commander';
import { withoutPassword } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { createLogger } from '../../lib/logger.js';
import type { Daemon } from '../../main.js';
import { DataDirLockedError } from '../../store/open.js';
import { CliError, commandLine, configOf } from '../context.js';

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run the daemon (HTTP API; delivery, inbound SMTP and webhooks as they land)')
    .action(async (_o, c: Command) => {
      const config = configOf(c); // validated before anything binds a port
      const log = createLogger(config.log.level, undefined, config.server.node_name);
      // The daemon's modules load only for this command: the others start in a fraction of the time.
      const { startDaemon, SHUTDOWN_GRACE_MS, StoreUnreachable, NodeNameTaken } = await import('../../main.js');
      const daemon = await startDaemon(config, log).catch((e: unknown) => {
        const refused = e instanceof DataDirLockedError || e instanceof StoreUnreachable || e instanceof NodeNameTaken;
        throw refused ? new CliError(e.message) : e;
      });
      // The hints are a courtesy: a store that cannot answer now shows them rather than stop a running daemon.
      const steps = await daemon.firstSteps().catch(() => ({ needsKey: true, needsUser: true }));
      process.stderr.write(startMessage(config, daemon, commandLine(c), steps));
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        log.info({ signal }, 'stopping');
        const timer = setTimeout(() => {
          log.error('shutdown took too long; exiting');
          process.exit(1);
        }, SHUTDOWN_GRACE_MS);
        timer.unref();
        daemon.stop().then(
          () => process.exit(0),
          (e: unknown) => {
            log.error({ err: e }, 'error while stopping');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGHUP', () => {
        try {
          daemon.reload(configOf(c));
        } catch (e) {
          // A bad file is reported and the running configuration kept.
          log.error({ err: (e as Error).message }, 'reload refused: configuration invalid; keeping the running one');
        }
      });
      process.on('SIGINT', () => stop('SIGINT'));
    });
}

/**
 * What the daemon says on stderr once it is up: where each listener is, the store, and the first
 * steps' commands only while they are still to be done (no usable key; no dashboard user).
 */
function startMessage(
  config: Config,
  daemon: Daemon,
  cli: string,
  steps: { needsKey: boolean; needsUser: boolean },
): string {
  const userHint = steps.needsUser ? ` (create a user with: ${cli} users add EMAIL --admin)` : '';
  return (
    `posthaste: API on ${daemon.apiUrl}\n` +
    `posthaste: SMTP on ${daemon.smtp.host}:${daemon.smtp.port}\n` +
    Object.entries(daemon.submission)
      .map(
        ([key, a]) =>
          `posthaste: submission on ${a.host}:${a.port} (${submissionTls(config, key)}; AUTH with an API key as the password)\n`,
      )
      .join('') +
    (daemon.dashboardUrl ? `posthaste: dashboard on ${daemon.dashboardUrl}${userHint}\n` : '') +
    (config.metrics.enabled ? `posthaste: metrics on ${daemon.metricsUrl ?? `${daemon.apiUrl}/metrics`}\n` : '') +
    `posthaste: store ${config.store.url ? `PostgreSQL at ${withoutPassword(config.store.url)}` : `SQLite in ${config.server.data_dir}`}\n` +
    (steps.needsKey ? `posthaste: create a first key with: ${cli} keys create --sandbox --full\n` : '')
  );
}

/** How a submission listener takes TLS, as the start message says it. */
function submissionTls(config: Config, key: string): string {
  if (key === 'submission.listen_tls') return 'implicit TLS';
  return config.submission['tls.cert'] ? 'STARTTLS' : 'no TLS: AUTH from loopback only';
}
