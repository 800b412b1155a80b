import { existsSync, readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import type { KeySpec, Schema } from './keys.js';
import { type Config, schema as defaultSchema } from './schema.js';
import { configuredDefaultPool, destinationLimits, relayTarget, returnPathLabel, spfSources } from './settings.js';
import { coerce, formatDuration, parseListen } from './values.js';

export class ConfigError extends Error {
  constructor(
    public readonly key: string,
    message: string,
  ) {
    super(`config: ${key}: ${message}`);
  }
}

export { formatDuration, parseDuration, parseListen } from './values.js';

export const DEFAULT_CONFIG_PATH = '/etc/posthaste/posthaste.toml';

/** `{api: {tls: {cert}}}` → `{"api": {"tls.cert": …}}`: one level of sub-tables per section. */
function flattenSection(section: string, table: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(table)) {
    const name = prefix + key;
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
      Object.assign(out, flattenSection(section, value as Record<string, unknown>, name + '.'));
    } else out[name] = value;
  }
  return out;
}

export function envName(section: string, key: string): string {
  return `POSTHASTE_${section}_${key.replace(/\./g, '_')}`.toUpperCase();
}

/**
 * The file to read: the one named (--config, else POSTHASTE_CONFIG), else the default path if a
 * file is there. With neither, nothing is guessed: a command that went on with the built-in
 * defaults would open (and create) a store in /var/lib/posthaste that the daemon, started with
 * its own file, never reads.
 */
export function configPath(named: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const path = named ?? env.POSTHASTE_CONFIG;
  if (path !== undefined && path !== '') return path;
  if (existsSync(DEFAULT_CONFIG_PATH)) return DEFAULT_CONFIG_PATH;
  throw new ConfigError(
    DEFAULT_CONFIG_PATH,
    'no configuration file here, and none named: give one with --config FILE or POSTHASTE_CONFIG=FILE (posthaste config example > FILE writes one to edit)',
  );
}

export interface LoadOptions {
  /** Path of the TOML file; undefined: configPath's choice (the default path, which must exist). */
  path?: string;
  env?: NodeJS.ProcessEnv;
  schema?: Schema;
}

function readToml(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(path, `cannot read: ${(e as Error).message}`);
  }
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (e) {
    throw new ConfigError(path, `not valid TOML: ${(e as Error).message.split('\n')[0]}`);
  }
}

type Values = Record<string, Record<string, unknown>>;

/** Reads, merges (defaults < file < environment) and validates; throws ConfigError naming the key. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const sch: Schema = opts.schema ?? defaultSchema;
  const env = opts.env ?? process.env;
  const out: Values = {};
  for (const [section, keys] of Object.entries(sch)) {
    out[section] = {};
    for (const [key, spec] of Object.entries(keys)) out[section]![key] = coerce(spec, spec.default, false);
  }
  applyFile(sch, out, readToml(opts.path ?? configPath(undefined, env)));
  applyEnv(sch, out, env);
  if (sch === defaultSchema) checkAcrossKeys(out as Config);
  return out as Config;
}

/** The file's values over the defaults: an unknown section or key, or a bad value, names itself. */
function applyFile(sch: Schema, out: Values, fileValues: Record<string, unknown>): void {
  for (const [section, table] of Object.entries(fileValues)) {
    const keys = sch[section];
    if (!keys) throw new ConfigError(section, 'unknown section');
    if (table === null || typeof table !== 'object' || Array.isArray(table))
      throw new ConfigError(section, 'expected a table');
    for (const [key, value] of Object.entries(flattenSection(section, table as Record<string, unknown>))) {
      const spec = keys[key];
      if (!spec) throw new ConfigError(`${section}.${key}`, 'unknown key');
      try {
        out[section]![key] = coerce(spec, value, false);
      } catch (e) {
        throw new ConfigError(`${section}.${key}`, (e as Error).message);
      }
    }
  }
}

/** The environment's POSTHASTE_* overrides over the file's values. */
function applyEnv(sch: Schema, out: Values, env: NodeJS.ProcessEnv): void {
  const known = new Map<string, [string, string, KeySpec]>();
  for (const [section, keys] of Object.entries(sch))
    for (const [key, spec] of Object.entries(keys)) known.set(envName(section, key), [section, key, spec]);
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('POSTHASTE_') || value === undefined || name === 'POSTHASTE_CONFIG') continue;
    const hit = known.get(name);
    if (!hit) throw new ConfigError(name, 'unknown environment override');
    const [section, key, spec] = hit;
    try {
      out[section]![key] = coerce(spec, value, true);
    } catch (e) {
      throw new ConfigError(`${section}.${key} (from ${name})`, (e as Error).message);
    }
  }
}

/** The checks of the whole configuration that one key's type cannot make, each failure naming its key. */
function checkAcrossKeys(out: Config): void {
  try {
    relayTarget(out);
  } catch (e) {
    throw new ConfigError('outbound.relay', (e as Error).message.replace(/^outbound\.relay: /, ''));
  }
  try {
    destinationLimits(out);
  } catch (e) {
    throw new ConfigError('outbound.destination_limits', (e as Error).message);
  }
  for (const [key, check] of [
    ['smtp.return_path_label', returnPathLabel],
    ['outbound.source_addresses', spfSources],
    ['outbound.default_pool', configuredDefaultPool],
  ] as const)
    try {
      check(out);
    } catch (e) {
      throw new ConfigError(key, (e as Error).message.replace(`${key}: `, ''));
    }
  checkSubmission(out);
}

/**
 * Submission takes API keys as passwords, so it never takes them in the clear from another
 * machine: a listener without a certificate is refused at start, naming the key, unless it is on
 * loopback with allow_plaintext_auth_on_loopback (an application on the same machine).
 */
function checkSubmission(c: Config): void {
  const s = c.submission;
  if (Boolean(s['tls.cert']) !== Boolean(s['tls.key']))
    throw new ConfigError(
      s['tls.cert'] ? 'submission.tls.key' : 'submission.tls.cert',
      'tls.cert and tls.key go together: set both, or neither',
    );
  if (s['tls.cert']) return;
  if (s.listen_tls)
    throw new ConfigError('submission.listen_tls', 'implicit TLS needs submission.tls.cert and submission.tls.key');
  if (s.listen && !(s.allow_plaintext_auth_on_loopback && loopbackOnly(s.listen)))
    throw new ConfigError(
      'submission.tls.cert',
      `submission.listen = "${s.listen}" needs a certificate (tls.cert and tls.key): AUTH carries an API key and is taken only over TLS, except on a loopback address with allow_plaintext_auth_on_loopback = true`,
    );
}

/** A URL as it may be shown: its password, if it holds one, replaced. */
export function withoutPassword(url: string): string {
  return url.replace(/^(postgres(?:ql)?:\/\/[^:/@]*:)[^@]*@/, '$1***@');
}

/** The merged configuration as plain data for `config print`, secrets masked. */
export function describeConfig(config: Config, sch: Schema = defaultSchema): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  const values = config as unknown as Record<string, Record<string, unknown>>;
  for (const [section, keys] of Object.entries(sch)) {
    out[section] = {};
    for (const [key, spec] of Object.entries(keys)) {
      const v = values[section]?.[key];
      let shown = v;
      if (spec.kind.type === 'duration') shown = formatDuration(v as number);
      if (spec.kind.type === 'durations') shown = (v as number[]).map(formatDuration);
      if (spec.kind.type === 'percent') shown = `${v}%`;
      shown = spec.secret && v !== '' ? '********' : shown;
      if (spec.kind.type === 'store_url' && typeof v === 'string') shown = withoutPassword(v);
      // "tls.cert" is shown as the sub-table it is written as: [api.tls] cert = …
      const parts = key.split('.');
      let table = out[section]!;
      for (const p of parts.slice(0, -1)) table = (table[p] ??= {}) as Record<string, unknown>;
      table[parts[parts.length - 1]!] = shown;
    }
  }
  return out;
}

/**
 * Names no real server answers to: RFC 2606 and RFC 6761's reserved domains (`example.*`,
 * `*.test`, `*.invalid`, `*.localhost`), `localhost` and `*.localdomain`, and a bare name without
 * a dot (what the machine's own hostname often is).
 */
export function isPlaceholderName(name: string): boolean {
  const n = name.toLowerCase().replace(/\.$/, '');
  return !n.includes('.') || /(^|\.)(example\.(com|net|org)|example|test|invalid|localhost|localdomain)$/.test(n);
}

/** Whether every address `listen` ("host:port", empty: off) binds is on loopback. */
function loopbackOnly(listen: string): boolean {
  if (listen === '') return true;
  const { host } = parseListen(listen);
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * What the daemon warns about at start: a placeholder in server.hostname or smtp.return_path_domain
 * (the example file's `mx.example.net`, `localhost`…) while the SMTP listener is reachable from
 * other machines. On loopback only (development, tests) the names matter to nobody.
 */
export function configWarnings(config: Config): Array<{ key: string; value: string; message: string }> {
  if (loopbackOnly(config.smtp.listen)) return [];
  const out: Array<{ key: string; value: string; message: string }> = [];
  const hostname = config.server.hostname;
  if (isPlaceholderName(hostname))
    out.push({
      key: 'server.hostname',
      value: hostname,
      message: `server.hostname is "${hostname}", a placeholder: set it to this machine's public name, the one its A record and PTR give (receivers check the EHLO name against it; bounces come back to it)`,
    });
  const returnPath = config.smtp.return_path_domain;
  if (returnPath !== '' && isPlaceholderName(returnPath))
    out.push({
      key: 'smtp.return_path_domain',
      value: returnPath,
      message: `smtp.return_path_domain is "${returnPath}", a placeholder: set it to a domain whose MX is server.hostname, or leave it empty to use server.hostname`,
    });
  return out;
}
