import type { Command } from 'commander';
import { relative, join } from 'node:path';
import { configOf } from '../context.js';
import { createLogger } from '../../lib/logger.js';

/** `posthaste` when installed on PATH, else the path this checkout was started with (npm start). */
function invokedAs(): string {
  const script = process.argv[1] ?? '';
  const rel = relative(process.cwd(), script);
  return !rel.startsWith('..') && rel.endsWith(join('bin', 'posthaste.js')) ? `node ${rel}` : 'posthaste';
}

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run the daemon (HTTP API; delivery, inbound SMTP and webhooks as they land)')
    .action(async (_o, c: Command) => {
      const config = configOf(c); // validated before anything binds a port
      const log = createLogger(config.log.level);
      // The daemon's modules load only for this command: the others start in a fraction of the time.
      const { startDaemon, SHUTDOWN_GRACE_MS } = await import('../../main.js');
      const daemon = await startDaemon(config, log);
      process.stderr.write(
        `posthaste: API on ${daemon.apiUrl}\n` +
          `posthaste: SMTP on ${daemon.smtp.host}:${daemon.smtp.port}\n` +
          (daemon.dashboardUrl ? `posthaste: dashboard on ${daemon.dashboardUrl} (create a user with: ${invokedAs()} users add EMAIL --admin)\n` : '') +
          `posthaste: create a first key with: ${invokedAs()} keys create --sandbox${c.optsWithGlobals().config ? ` --config ${c.optsWithGlobals().config}` : ''}\n`,
      );
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
