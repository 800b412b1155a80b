import type { Command } from 'commander';
import { stringify } from 'smol-toml';
import { renderExample } from '../../config/example.js';
import { describeConfig, loadConfig } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { CliError, configOf, output } from '../context.js';

/** A configuration as `config print` shows it (secrets masked), one "section.key" to a value. */
function flat(config: Config): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const walk = (prefix: string, table: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(table))
      if (v !== null && typeof v === 'object' && !Array.isArray(v))
        walk(`${prefix}${k}.`, v as Record<string, unknown>);
      else out.set(`${prefix}${k}`, v);
  };
  walk('', describeConfig(config));
  return out;
}

/** "section.key" → value pairs back into the tables they are written as. */
function nest(entries: Iterable<[string, unknown]>): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [name, value] of entries) {
    const parts = name.split('.');
    let table: Record<string, unknown> = out;
    for (const p of parts.slice(0, -1)) table = (table[p] ??= {}) as Record<string, unknown>;
    table[parts[parts.length - 1]!] = value;
  }
  return out;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}

/** The known keys closest to a mistyped one: a few edits away, or sharing its last part, or beginning with it (a section, a key cut short). */
export function closeKeys(wanted: string, known: Iterable<string>): string[] {
  const w = wanted.toLowerCase();
  const last = w.split('.').pop()!;
  const scored = [...known]
    .map((k) => ({ k, d: editDistance(w, k) }))
    .filter(({ k, d }) => d <= Math.max(2, Math.floor(w.length / 4)) || k.split('.').pop() === last || k.startsWith(w));
  return scored
    .sort((a, b) => a.d - b.d)
    .slice(0, 6)
    .map(({ k }) => k);
}

/** A value on a line of its own, as `postconf -h` prints one: strings bare, the rest as TOML writes them. */
function shown(value: unknown): string {
  return typeof value === 'string' ? value : stringify({ v: value }).replace(/^v = /, '').trim();
}

export function configCommand(program: Command): void {
  const cmd = program.command('config').description('the configuration: the merged result, one key, the example file');
  cmd
    .command('print')
    .description('print the merged configuration (defaults < file < environment), secrets masked')
    .option('-n, --changed', 'only the keys whose value differs from the default (as postconf -n)')
    .action((o: { changed?: boolean }, c: Command) => {
      const config = configOf(c);
      let described: Record<string, unknown> = describeConfig(config);
      if (o.changed) {
        const defaults = flat(loadConfig({ path: '/dev/null', env: {} }));
        described = nest([...flat(config)].filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(defaults.get(k))));
      }
      output(c, described, stringify(described));
    });
  cmd
    .command('get <key>')
    .description(
      'print one key\'s effective value (defaults < file < environment), secrets masked; KEY as "section.key", e.g. server.hostname',
    )
    .action((key: string, _o, c: Command) => {
      const values = flat(configOf(c));
      if (!values.has(key)) {
        const near = closeKeys(key, values.keys());
        throw new CliError(
          `unknown key "${key}"${near.length > 0 ? `; close: ${near.join(', ')}` : ''} (posthaste config print lists them all)`,
        );
      }
      const value = values.get(key);
      output(c, { key, value }, shown(value));
    });
  cmd
    .command('example')
    .description('print a documented configuration file with every key and its default')
    .action(() => {
      process.stdout.write(renderExample());
    });
}
