import { existsSync, readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import type { KeySpec, Schema } from './keys.js';
import { type Config, schema as defaultSchema } from './schema.js';
import { configuredDefaultPool, destinationLimits, relayTarget, returnPathLabel, spfSources } from './settings.js';

export class ConfigError extends Error {
  constructor(
    public readonly key: string,
    message: string,
  ) {
    super(`config: ${key}: ${message}`);
  }
}

export const DEFAULT_CONFIG_PATH = '/etc/posthaste/posthaste.toml';

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const BYTE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1e6,
  mib: 1024 ** 2,
  gb: 1e9,
  gib: 1024 ** 3,
};

export function parseDuration(v: unknown): number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v * 1000; // bare numbers are seconds
  if (typeof v !== 'string') throw new Error('expected a duration such as "30s", "5m", "72h"');
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(v.trim());
  if (!m) throw new Error(`"${v}" is not a duration (use ms, s, m, h or d, e.g. "5m")`);
  return Math.round(Number(m[1]) * DURATION_UNITS[m[2]!]!);
}

function parsePercent(v: unknown): number {
  const n =
    typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*%\s*$/.test(v) ? parseFloat(v) : NaN;
  if (!Number.isFinite(n)) throw new Error('expected a percentage such as "4%" or "0.08%"');
  if (n < 0 || n > 100) throw new Error(`must be between 0% and 100%, got ${n}%`);
  return n;
}

function parseBytes(v: unknown): number {
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  if (typeof v !== 'string') throw new Error('expected a size such as 26214400 or "25MiB"');
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(v.trim());
  const unit = m ? BYTE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`"${v}" is not a size (e.g. "25MiB")`);
  return Math.round(Number(m[1]) * unit);
}

/** Checks one value against its spec and returns it in its internal form. */
function coerce(spec: KeySpec, v: unknown, fromEnv: boolean): unknown {
  const kind = spec.kind;
  if (fromEnv && typeof v === 'string') {
    // Environment values are strings; lists may be JSON arrays or comma-separated.
    if (kind.type === 'int') v = /^-?\d+$/.test(v) ? Number(v) : v;
    else if (kind.type === 'bool') v = v === 'true' ? true : v === 'false' ? false : v;
    else if (kind.type === 'tables') v = JSON.parse(v);
    else if (kind.type === 'strings' || kind.type === 'durations')
      v = v.trim().startsWith('[')
        ? JSON.parse(v)
        : v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
  }
  switch (kind.type) {
    case 'string':
      if (typeof v !== 'string') throw new Error('expected a string');
      return v;
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error('expected an integer');
      if (v < kind.min || v > kind.max) throw new Error(`must be between ${kind.min} and ${kind.max}`);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new Error('expected true or false');
      return v;
    case 'listen': {
      if (typeof v !== 'string') throw new Error('expected "host:port"');
      if (v === '' && kind.optional) return v;
      parseListen(v);
      return v;
    }
    case 'strings':
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error('expected an array of strings');
      return v;
    case 'duration':
      return parseDuration(v);
    case 'durations':
      if (!Array.isArray(v) || v.length === 0) throw new Error('expected a non-empty array of durations');
      return v.map(parseDuration);
    case 'bytes':
      return parseBytes(v);
    case 'percent':
      return parsePercent(v);
    case 'store_url':
      if (typeof v !== 'string') throw new Error('expected a string');
      if (v !== '' && !/^postgres(ql)?:\/\/[^\s]+$/.test(v))
        throw new Error(
          'expected "" (SQLite in server.data_dir) or a PostgreSQL URL, "postgresql://user@host:5432/dbname"',
        );
      return v;
    case 'tables':
      return kind.read(v);
    case 'enum':
      if (typeof v !== 'string' || !kind.values.includes(v))
        throw new Error(`expected one of ${kind.values.join(', ')}`);
      return v;
  }
}

export function parseListen(v: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`"${v}" is not "host:port"`);
  return { host: (m[1] ?? m[2])!, port };
}

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

/** Reads, merges (defaults < file < environment) and validates; throws ConfigError naming the key. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const sch: Schema = opts.schema ?? defaultSchema;
  const env = opts.env ?? process.env;
  const fileValues = readToml(opts.path ?? configPath(undefined, env));
  const out: Record<string, Record<string, unknown>> = {};
  for (const [section, keys] of Object.entries(sch)) {
    out[section] = {};
    for (const [key, spec] of Object.entries(keys)) out[section]![key] = coerce(spec, spec.default, false);
  }
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
  if (sch === defaultSchema) {
    try {
      relayTarget(out as Config);
    } catch (e) {
      throw new ConfigError('outbound.relay', (e as Error).message.replace(/^outbound\.relay: /, ''));
    }
    try {
      destinationLimits(out as Config);
    } catch (e) {
      throw new ConfigError('outbound.destination_limits', (e as Error).message);
    }
    for (const [key, check] of [
      ['smtp.return_path_label', returnPathLabel],
      ['outbound.source_addresses', spfSources],
      ['outbound.default_pool', configuredDefaultPool],
    ] as const)
      try {
        check(out as Config);
      } catch (e) {
        throw new ConfigError(key, (e as Error).message.replace(`${key}: `, ''));
      }
    checkSubmission(out as Config);
  }
  return out as Config;
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

/** 86400000 → "24h": the largest unit that divides exactly. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms !== 0 && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
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
