import type { Command } from 'commander';
import { stringify } from 'smol-toml';
import { withStore, output, configOf } from '../context.js';
import { describeConfig } from '../../config/load.js';
import { renderExample } from '../../config/example.js';
import { migrate } from '../../store/db.js';

export function dbCommand(program: Command): void {
  const cmd = program.command('db').description('the SQLite store');
  cmd
    .command('migrate')
    .description('apply pending migrations (the daemon also does this at start)')
    .action(async (_o, c: Command) =>
      withStore(c, ({ db, config, now }) => {
        // withStore has already migrated; report what the schema is at now.
        migrate(db, now);
        const versions = db.sqlite.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all() as number[];
        output(c, { path: db.path, versions }, `${db.path}: schema at version ${versions[versions.length - 1]} (data_dir ${config.server.data_dir})`);
      }),
    );
}

export function configCommand(program: Command): void {
  const cmd = program.command('config').description('configuration');
  cmd
    .command('print')
    .description('print the merged configuration (defaults < file < environment), secrets masked')
    .action((_o, c: Command) => {
      const shown = describeConfig(configOf(c));
      output(c, shown, stringify(shown));
    });
  cmd
    .command('example')
    .description('print a documented configuration file with every key and its default')
    .action(() => {
      process.stdout.write(renderExample());
    });
}
