import type { KeySpec } from './keys.js';

/** A key's value read into its internal form (durations, sizes, percentages, listen addresses) and a duration written back. */

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

/** An environment value (a string) as the file would give it: lists may be JSON arrays or comma-separated. */
function fromEnvironment(kind: KeySpec['kind'], v: string): unknown {
  if (kind.type === 'int') return /^-?\d+$/.test(v) ? Number(v) : v;
  if (kind.type === 'bool') return v === 'true' ? true : v === 'false' ? false : v;
  if (kind.type === 'tables') return JSON.parse(v);
  if (kind.type !== 'strings' && kind.type !== 'durations' && kind.type !== 'ints') return v;
  const list: unknown = v.trim().startsWith('[')
    ? JSON.parse(v)
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
  if (kind.type !== 'ints' || !Array.isArray(list)) return list;
  return list.map((x) => (typeof x === 'string' && /^-?\d+$/.test(x) ? Number(x) : x));
}

/** Checks one value against its spec and returns it in its internal form. */
export function coerce(spec: KeySpec, v: unknown, fromEnv: boolean): unknown {
  const kind = spec.kind;
  if (fromEnv && typeof v === 'string') v = fromEnvironment(kind, v);
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
    case 'ints': {
      if (!Array.isArray(v)) throw new Error('expected an array of integers');
      const problem = kind.check(v);
      if (problem) throw new Error(problem);
      return v;
    }
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
