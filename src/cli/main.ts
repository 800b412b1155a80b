import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load.js';
import { VERSION } from '../lib/version.js';
import { dbCommand, statusCommand } from './commands/admin.js';
import { configCommand } from './commands/config.js';
import { customersCommand } from './commands/customers.js';
import { dmarcCommand } from './commands/dmarc.js';
import { dnsCommand } from './commands/dns.js';
import { doctorCommand } from './commands/doctor.js';
import { domainsCommand } from './commands/domains.js';
import { inboundCommand } from './commands/inbound.js';
import { keysCommand } from './commands/keys.js';
import { messagesCommand } from './commands/messages.js';
import { queueCommand } from './commands/queue.js';
import { reportsCommand } from './commands/reports.js';
import { serveCommand } from './commands/serve.js';
import { suppressionsCommand } from './commands/suppressions.js';
import { tlsrptCommand } from './commands/tlsrpt.js';
import { usersCommand } from './commands/users.js';
import { webhooksCommand } from './commands/webhooks.js';
import { CliError } from './context.js';

/** Whether this run asked for JSON: known before commander has parsed anything, for its own errors. */
const jsonWanted = (argv: string[]) => argv.slice(2).includes('--json');

/** An error as `--json` prints it on stderr: one object, a code a script can test and the message. */
function jsonError(code: string, message: string): string {
  return `${JSON.stringify({ error: { code, message } })}\n`;
}

/**
 * The program. Settings made here before the subcommands are added (help showing the global
 * options, where errors go) are inherited by every subcommand.
 */
export function buildProgram(argv: string[] = process.argv): Command {
  const json = jsonWanted(argv);
  const program = new Command('posthaste')
    .description('self-hosted transactional email server')
    .version(VERSION)
    .option('--config <file>', 'TOML configuration file (else $POSTHASTE_CONFIG, else /etc/posthaste/posthaste.toml)')
    .option(
      '--json',
      'machine-readable output: one JSON object, or an array for list; errors as {"error":{"code","message"}} on stderr',
    )
    .configureHelp({ showGlobalOptions: true })
    .exitOverride();
  if (json)
    program.configureOutput({
      outputError: (text, write) => write(jsonError('usage', text.replace(/^error: /, '').trim())),
    });
  else program.showHelpAfterError();
  serveCommand(program);
  customersCommand(program);
  keysCommand(program);
  domainsCommand(program);
  dnsCommand(program);
  dmarcCommand(program);
  doctorCommand(program);
  messagesCommand(program);
  queueCommand(program);
  webhooksCommand(program);
  suppressionsCommand(program);
  inboundCommand(program);
  reportsCommand(program);
  tlsrptCommand(program);
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
    const known = e instanceof ConfigError || e instanceof CliError;
    const msg = (known ? e.message : ((e as Error).message ?? String(e))).split('\n')[0]!;
    const code = e instanceof ConfigError ? 'config' : known ? 'failed' : 'internal';
    process.stderr.write(
      jsonWanted(process.argv) ? jsonError(code, msg) : `posthaste: ${known ? '' : 'error: '}${msg}\n`,
    );
    process.exit(e instanceof ConfigError ? 2 : 1);
  }
}

await main();
