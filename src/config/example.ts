import { stringify } from 'smol-toml';
import { DEFAULT_WARMUP_SCHEDULE } from '../domain/warmup.js';
import type { Schema } from './keys.js';
import { describeConfig, loadConfig } from './load.js';
import { schema } from './schema.js';

/** Placeholders for defaults that depend on the machine. */
const EXAMPLE_VALUES: Record<string, unknown> = { 'server.hostname': 'mx.example.net' };

/**
 * Keys the example leaves commented out, with what is said of their default: a value written
 * here would be the same on every machine made from the file (two nodes of one name are refused:
 * docs/cluster.md), and the default is right as it is.
 */
export const EXAMPLE_UNSET: Record<string, { note: string; sample: unknown }> = {
  'server.node_name': {
    note: "Default: this machine's host name (os.hostname()). Set it only to give this node another name; every node on one PostgreSQL needs its own, and a node does not start while a live node has its name.",
    sample: 'mail-1',
  },
  'outbound.warmup_schedule': {
    note: 'Default: the 28 days below, from 50 to 200000 messages a destination a day, then full volume (docs/delivery.md, "Warm-up"); only addresses with warmup_start follow it. Uncomment to change it:',
    sample: [...DEFAULT_WARMUP_SCHEDULE],
  },
  'outbound.pools': {
    note: 'Default: none (the kernel picks the source address, EHLO says server.hostname). One [[outbound.pools]] table a pool, e.g.:',
    sample: [
      {
        name: 'transactional',
        addresses: [
          { ip: '192.0.2.10', ehlo: 'mta1.example.net' },
          { ip: '2001:db8::10', ehlo: 'mta1.example.net' },
        ],
      },
    ],
  },
};

/** The documented example file: every key, its default and its description (`posthaste config example`). */
export function renderExample(sch: Schema = schema): string {
  const shown = describeConfig(loadConfig({ path: '/dev/null', env: {}, schema: sch }), sch);
  let out =
    '# posthaste configuration: every key, its default and what it does.\n' +
    '# Copy to /etc/posthaste/posthaste.toml and change what you need; unknown keys stop the start.\n' +
    '# Any key can be overridden from the environment: POSTHASTE_<SECTION>_<KEY>, e.g. POSTHASTE_OUTBOUND_PORT=2525.\n' +
    '# Durations take a unit (ms, s, m, h, d); sizes are bytes or take a unit (KiB, MiB, GiB).\n';
  for (const [section, keys] of Object.entries(sch)) {
    const subTables = new Map<string, string>();
    out += `\n[${section}]\n`;
    for (const [key, spec] of Object.entries(keys)) {
      const path = key.split('.');
      let value: unknown = shown[section];
      for (const p of path) value = (value as Record<string, unknown>)[p];
      const unset = EXAMPLE_UNSET[`${section}.${key}`];
      value = unset?.sample ?? EXAMPLE_VALUES[`${section}.${key}`] ?? value;
      const setting = stringify({ [path[path.length - 1]!]: value }).trim();
      const commented = spec.kind.type === 'tables' ? tablesSample(section, key, value) : `# ${setting}`;
      const line = unset
        ? `# ${spec.description}\n# ${unset.note}\n${commented}\n`
        : `# ${spec.description}\n${setting}\n`;
      if (path.length === 1) out += line;
      else subTables.set(path[0]!, (subTables.get(path[0]!) ?? '') + line);
    }
    for (const [table, lines] of subTables) out += `\n[${section}.${table}]\n${lines}`;
  }
  return out;
}

/** An array of tables' sample, commented out: `# [[section.key]]` and its keys, a list of tables written inline. */
function tablesSample(section: string, key: string, value: unknown): string {
  const inline = (o: object) =>
    `{ ${Object.entries(o)
      .map(([k, v]) => `${k} = ${JSON.stringify(v)}`)
      .join(', ')} }`;
  const line = ([k, v]: [string, unknown]) =>
    Array.isArray(v) && v.every((x) => typeof x === 'object')
      ? `${k} = [ ${(v as object[]).map(inline).join(', ')} ]`
      : stringify({ [k]: v }).trim();
  return (value as Record<string, unknown>[])
    .map((table) => [`[[${section}.${key}]]`, ...Object.entries(table).map(line)].map((l) => `# ${l}`).join('\n'))
    .join('\n');
}
