import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { type WarmupAddressStatus, warmupPhrase } from '../../domain/warmup.js';
import { warmupReport } from '../../outbound/warmup.js';
import { copyToPostgres } from '../../store/copy.js';
import { WAITING_STATES } from '../../store/model.js';
import { readPassword } from '../../store/open.js';
import { CliError, configOf, output, withStore } from '../context.js';
import { heldStatus } from './queue.js';

export function dbCommand(program: Command): void {
  const cmd = program.command('db').description('the store: migrations, retention, backups, the move to PostgreSQL');
  migrateCommand(cmd);
  purgeCommand(cmd);
  backupCommand(cmd);
  copyCommand(cmd);
}

/** `db migrate`: the schema brought up to date, its version said. */
function migrateCommand(db: Command): void {
  db.command('migrate')
    .description('apply pending migrations (the daemon also does this at start)')
    .action(async (_o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        // withStore has already migrated; report what the schema is at now.
        await store.admin.migrate(now);
        const versions = await store.admin.schemaVersions();
        output(
          c,
          { path: store.location, engine: store.engine, versions },
          `${store.location}: schema at version ${versions[versions.length - 1]} (${store.engine}${store.engine === 'sqlite' ? `, data_dir ${config.server.data_dir}` : ''})`,
        );
      }),
    );
}

/** `db purge`: the retention job, now. */
function purgeCommand(db: Command): void {
  db.command('purge')
    .description('run the retention job now (retention.days)')
    .action(async (_o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const r = await store.admin.purgeOld(now, config.retention.days);
        output(
          c,
          r,
          `purged the bodies of ${r.messages} finished messages and ${r.attempts} webhook attempt logs older than ${config.retention.days} days`,
        );
      }),
    );
}

/** `db backup`: an online copy of a SQLite store. */
function backupCommand(db: Command): void {
  db.command('backup <file>')
    .description(
      "copy the store to FILE with SQLite's online backup API (safe while the daemon runs); a PostgreSQL store is backed up with pg_dump",
    )
    .action(async (file: string, _o, c: Command) =>
      withStore(c, async ({ store }) => {
        if (existsSync(file)) throw new CliError(`${file} exists; choose a new file`);
        const started = Date.now();
        try {
          await store.admin.backup(file);
        } catch (e) {
          throw new CliError((e as Error).message);
        }
        output(c, { file, ms: Date.now() - started }, `backed up the store to ${file}`);
      }),
    );
}

/** `db copy`: the SQLite store copied into an empty PostgreSQL database. */
function copyCommand(db: Command): void {
  db.command('copy')
    .description(
      'copy the SQLite store into an empty PostgreSQL database, checking the rows table by table (stop the daemon first: docs/operations.md, "PostgreSQL")',
    )
    .requiredOption(
      '--to <url>',
      'the PostgreSQL database, "postgresql://user@host:5432/dbname" (its password from the URL, store.password_file, PGPASSWORD or ~/.pgpass)',
    )
    .action(async (o: { to: string }, c: Command) => {
      const config = configOf(c);
      const password = config.store.password_file ? readPassword(config.store.password_file) : undefined;
      let r: Awaited<ReturnType<typeof copyToPostgres>>;
      try {
        r = await copyToPostgres(config, o.to, password);
      } catch (e) {
        throw new CliError(`db copy: ${(e as Error).message}; nothing was kept in PostgreSQL`);
      }
      const rows = r.tables.reduce((n, x) => n + x.postgres, 0);
      output(
        c,
        r,
        [
          `copied ${rows} rows into ${r.to}, every table counted the same:`,
          ...r.tables.filter((x) => x.postgres > 0).map((x) => `  ${x.table.padEnd(22)} ${x.postgres}`),
          'now set store.url to it and start the daemon',
        ].join('\n'),
      );
    });
}

export function statusCommand(program: Command): void {
  program
    .command('status')
    .description(
      "the live nodes and the claims each holds, the queue (recipients still to be sent: queued, deferred, in flight), those done by final state, oldest deferred, throttled destinations, each source address's warm-up and today's use, webhook backlog, inbound counts",
    )
    .action(async (_o, c: Command) =>
      withStore(c, async ({ store, config, now }) => {
        const st = { ...(await store.admin.status(now)), outbound_held: config.outbound.hold };
        const held = heldStatus(await store.queue.heldDestinations());
        const addresses = await warmupReport(store, config.outbound.pools, config.outbound.warmup_schedule, now);
        const kv = (o: Record<string, number>) =>
          Object.entries(o)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ') || '(empty)';
        output(
          c,
          { ...st, ...held.json, addresses },
          [
            ...(st.nodes.length === 0
              ? ['nodes:     none running']
              : st.nodes.map(
                  (n) =>
                    `node:      ${n.name} (${n.id}, pid ${n.pid}) started ${n.started_at}, heartbeat ${n.heartbeat_at}; holds ${n.claims.recipients} recipient${n.claims.recipients === 1 ? '' : 's'}, ${n.claims.webhook_deliveries} webhook deliver${n.claims.webhook_deliveries === 1 ? 'y' : 'ies'}`,
                )),
            `queue:     ${kv({ ...st.queue })}${st.outbound_held ? '  (HELD: outbound.hold = true, nothing is sent)' : ''}`,
            `done:      ${kv(Object.fromEntries(Object.entries(st.recipients).filter(([state]) => !(WAITING_STATES as readonly string[]).includes(state))))}`,
            `deferred:  oldest accepted ${st.oldest_deferred ?? '-'}; next attempt ${st.next_attempt ?? '-'}`,
            ...(st.throttled.length === 0
              ? ['throttled: none']
              : st.throttled.map(
                  (d) =>
                    `throttled: ${d.destination}${d.node !== undefined ? ` (node ${d.node})` : ''}: ${Date.parse(d.paused_until) > now ? `paused until ${d.paused_until}, then ` : ''}${d.connections} connection${d.connections === 1 ? '' : 's'}; ` +
                    `${d.refusals} refusal${d.refusals === 1 ? '' : 's'} not yet worked off, since ${d.since}; last: ${d.reason.code}${d.reason.enhanced_code ? ' ' + d.reason.enhanced_code : ''} ${d.reason.message}`,
                )),
            ...held.lines,
            ...addresses.map(addressLine),
            `webhooks:  ${kv(st.webhooks)}`,
            `inbound:   ${st.inbound.last_24h} in the last 24 h, ${st.inbound.total} in all, ${st.inbound.reports_unmatched} unmatched reports`,
            `messages:  ${st.messages}`,
          ].join('\n'),
        );
      }),
    );
}

/** A source address in `status`: its pool and EHLO name, its warm-up day or full volume, and today's use. */
function addressLine(a: WarmupAddressStatus): string {
  const use =
    a.highest === null
      ? 'nothing sent today'
      : `today ${a.sent} sent to ${a.destinations} destination${a.destinations === 1 ? '' : 's'}, most ${a.highest.used}${a.cap === null ? '' : `/${a.cap}`} to ${a.highest.destination}`;
  return `address:   ${a.ip} (pool ${a.pool}, ehlo ${a.ehlo}): ${warmupPhrase(a)}; ${use}`;
}
