import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { configPath, DEFAULT_CONFIG_PATH, loadConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Customer } from '../store/model.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';

export interface GlobalOptions {
  config?: string;
  json?: boolean;
}

/** An error the CLI reports as one line on stderr, exit code 1. */
export class CliError extends Error {}

export function globals(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

/** The configuration file this command reads (--config, POSTHASTE_CONFIG or the default path, which must exist). */
export function configFileOf(cmd: Command): string {
  return configPath(globals(cmd).config);
}

/**
 * The command line that reaches the same store as this command, for the hints printed to be
 * pasted: `posthaste` when installed on PATH, else the path this checkout was started with (npm
 * start); with `--config` unless the file is the default one, so each hint runs as printed from
 * another shell.
 */
export function commandLine(cmd: Command): string {
  const configFile = configFileOf(cmd);
  const script = process.argv[1] ?? '';
  const rel = relative(process.cwd(), script);
  const command = !rel.startsWith('..') && rel.endsWith(join('bin', 'posthaste.js')) ? `node ${rel}` : 'posthaste';
  return configFile === DEFAULT_CONFIG_PATH ? command : `${command} --config ${shellWord(configFile)}`;
}

/** A path as one shell word. */
function shellWord(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/**
 * The configuration. `orDefaults`, for a command that opens no store (reports parse): with no file
 * named and none at the default path, the built-in defaults, said on stderr.
 */
export function configOf(cmd: Command, opts: { orDefaults?: boolean } = {}): Config {
  if (
    opts.orDefaults &&
    globals(cmd).config === undefined &&
    !process.env.POSTHASTE_CONFIG &&
    !existsSync(DEFAULT_CONFIG_PATH)
  ) {
    process.stderr.write(
      `posthaste: no configuration file (none named, none at ${DEFAULT_CONFIG_PATH}): the built-in defaults\n`,
    );
    return loadConfig({ path: '/dev/null' });
  }
  return loadConfig({ path: configFileOf(cmd) });
}

/** Opens the store (applying pending migrations, as the daemon does at start), runs fn, closes. */
export async function withStore<T>(
  cmd: Command,
  fn: (ctx: { store: Store; config: Config; now: number }) => T | Promise<T>,
): Promise<T> {
  const config = configOf(cmd);
  const store = openStore(config, { applicationName: 'posthaste cli' });
  try {
    const now = Date.now();
    await store.admin.migrate(now);
    await store.customers.ensureDefault(now);
    return await fn({ store, config, now });
  } finally {
    await store.admin.close();
  }
}

export async function customerNamed(store: Store, name: string): Promise<Customer> {
  const c = await store.customers.find(name);
  if (!c) throw new CliError(`no customer named "${name}" (see "posthaste customers list")`);
  return c;
}

/** Prints JSON with --json, else the human form. */
export function output(cmd: Command, json: unknown, human: string): void {
  if (globals(cmd).json) process.stdout.write(JSON.stringify(json, null, 2) + '\n');
  else process.stdout.write(human.endsWith('\n') ? human : human + '\n');
}

export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '-' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
