import { VERSION } from '../lib/version.js';
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load.js';
import { CliError } from './context.js';
import { serveCommand } from './commands/serve.js';
import { customersCommand } from './commands/customers.js';
import { keysCommand } from './commands/keys.js';
import { domainsCommand } from './commands/domains.js';
import { dbCommand, configCommand, statusCommand } from './commands/admin.js';
import { messagesCommand } from './commands/messages.js';
import { webhooksCommand } from './commands/webhooks.js';
import { inboundCommand } from './commands/inbound.js';
import { suppressionsCommand } from './commands/suppressions.js';
import { reportsCommand } from './commands/reports.js';
import { usersCommand } from './commands/users.js';

export function buildProgram(): Command {
  const program = new Command('posthaste')
    .description('self-hosted transactional email server')
    .version(VERSION)
    .option('--config <file>', 'TOML configuration file (default /etc/posthaste/posthaste.toml, or $POSTHASTE_CONFIG)')
    .option('--json', 'machine-readable output: one JSON object, or an array for list')
    .showHelpAfterError()
    .exitOverride();
  serveCommand(program);
  customersCommand(program);
  keysCommand(program);
  domainsCommand(program);
  messagesCommand(program);
  webhooksCommand(program);
  suppressionsCommand(program);
  inboundCommand(program);
  reportsCommand(program);
  usersCommand(program);
  statusCommand(program);
  dbCommand(program);
  configCommand(program);
  // Every subcommand takes the global options too, before or after its own.
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed its own message (or help/version, exit 0).
      process.exit(e.exitCode);
    }
    const msg = e instanceof ConfigError || e instanceof CliError ? e.message : `error: ${(e as Error).message ?? String(e)}`;
    process.stderr.write(`posthaste: ${msg.split('\n')[0]}\n`);
    process.exit(e instanceof ConfigError ? 2 : 1);
  }
}

await main();
