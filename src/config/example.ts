import { stringify } from 'smol-toml';
import type { Schema } from './keys.js';
import { describeConfig, loadConfig } from './load.js';
import { schema } from './schema.js';

/** Placeholders for defaults that depend on the machine. */
const EXAMPLE_VALUES: Record<string, unknown> = { 'server.hostname': 'mx.example.net', 'server.node_name': 'node1' };

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
      value = EXAMPLE_VALUES[`${section}.${key}`] ?? value;
      const line = `# ${spec.description}\n${stringify({ [path[path.length - 1]!]: value }).trim()}\n`;
      if (path.length === 1) out += line;
      else subTables.set(path[0]!, (subTables.get(path[0]!) ?? '') + line);
    }
    for (const [table, lines] of subTables) out += `\n[${section}.${table}]\n${lines}`;
  }
  return out;
}
