import type { Command } from 'commander';
import { withStore, output, CliError } from '../context.js';
import { existsSync } from 'node:fs';
import { status } from '../../store/status.js';
import { purgeOld } from '../../store/retention.js';
import { migrate, schemaVersions } from '../../store/db.js';

export function dbCommand(program: Command): void {
  const cmd = program.command('db').description('the SQLite store');
  cmd
    .command('migrate')
    .description('apply pending migrations (the daemon also does this at start)')
    .action(async (_o, c: Command) =>
      withStore(c, ({ db, config, now }) => {
        // withStore has already migrated; report what the schema is at now.
        migrate(db, now);
        const versions = schemaVersions(db);
        output(c, { path: db.path, versions }, `${db.path}: schema at version ${versions[versions.length - 1]} (data_dir ${config.server.data_dir})`);
      }),
    );
  cmd
    .command('purge')
    .description('run the retention job now (retention.days)')
    .action(async (_o, c: Command) =>
      withStore(c, ({ db, config, now }) => {
        const r = purgeOld(db, now, config.retention.days);
        output(c, r, `purged the bodies of ${r.messages} finished messages and ${r.attempts} webhook attempt logs older than ${config.retention.days} days`);
      }),
    );
  cmd
    .command('backup <file>')
    .description("copy the store to FILE with SQLite's online backup API (safe while the daemon runs)")
    .action(async (file: string, _o, c: Command) =>
      withStore(c, async ({ db }) => {
        if (existsSync(file)) throw new CliError(`${file} exists; choose a new file`);
        const started = Date.now();
        const r = await db.backup(file);
        output(c, { file, pages: r.totalPages, ms: Date.now() - started }, `backed up ${r.totalPages} pages to ${file}`);
      }),
    );
}

export function statusCommand(program: Command): void {
  program
    .command('status')
    .description('queue depth by state, oldest deferred, throttled destinations, webhook backlog, inbound counts')
    .action(async (_o, c: Command) =>
      withStore(c, ({ db, config, now }) => {
        const st = { ...status(db, now), outbound_held: config.outbound.hold };
        const kv = (o: Record<string, number>) =>
          Object.entries(o)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ') || '(empty)';
        output(
          c,
          st,
          [
            `queue:     ${kv(st.queue)}${st.outbound_held ? '  (HELD: outbound.hold = true, nothing is sent)' : ''}`,
            `deferred:  oldest accepted ${st.oldest_deferred ?? '-'}; next attempt ${st.next_attempt ?? '-'}`,
            ...(st.throttled.length === 0
              ? ['throttled: none']
              : st.throttled.map(
                  (d) =>
                    `throttled: ${d.destination}: ${Date.parse(d.paused_until) > now ? `paused until ${d.paused_until}, then ` : ''}${d.connections} connection${d.connections === 1 ? '' : 's'}; ` +
                    `${d.refusals} refusal${d.refusals === 1 ? '' : 's'} not yet worked off, since ${d.since}; last: ${d.reason.code}${d.reason.enhanced_code ? ' ' + d.reason.enhanced_code : ''} ${d.reason.message}`,
                )),
            `webhooks:  ${kv(st.webhooks)}`,
            `inbound:   ${st.inbound.last_24h} in the last 24 h, ${st.inbound.total} in all, ${st.inbound.reports_unmatched} unmatched reports`,
            `messages:  ${st.messages}`,
          ].join('\n'),
        );
      }),
    );
}
