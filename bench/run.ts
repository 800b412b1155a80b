// `npm run bench [name…]`: runs the benchmarks, prints their figures beside same-run anchors.
// With no names it runs all of them and rewrites the "Latest full run" block of bench/RESULTS.md.

import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchAccept } from './accept.js';
import { benchCluster } from './cluster.js';
import { benchClusterScale } from './cluster-scale.js';
import { benchDashboard } from './dashboard.js';
import { benchDeliver } from './deliver.js';
import { benchE2e } from './e2e.js';
import { benchHotRows } from './hot-rows.js';
import { benchInbound } from './inbound.js';
import { fmt, measureQuietDisk, ROOT } from './lib.js';
import { benchPath } from './path.js';
import { benchQueue } from './queue.js';
import { benchStore } from './store.js';
import { benchSubmission } from './submission.js';
import { benchWebhooks } from './webhooks.js';

const all: Record<string, () => Promise<{ lines: string[] }>> = {
  accept: benchAccept,
  deliver: benchDeliver,
  e2e: benchE2e,
  path: benchPath,
  webhooks: benchWebhooks,
  inbound: benchInbound,
  queue: benchQueue,
  dashboard: benchDashboard,
  store: benchStore,
  submission: benchSubmission,
  'hot-rows': benchHotRows,
  cluster: benchCluster,
  'cluster-scale': benchClusterScale,
};
const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(all);

// Before anything runs: what an fsync costs on a quiet disk, which the benchmarks with an fsyncing
// anchor (Postfix) wait to see again before timing each side (bench/lib.ts settleDisk).
const quiet = measureQuietDisk();
const header = `posthaste benchmarks ${new Date().toISOString()} on ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, fsync ${fmt(quiet, 2)} ms`;
console.log(header);
const out: string[] = [header];
for (const name of names) {
  const run = all[name];
  if (!run) throw new Error(`unknown benchmark ${name}; have ${Object.keys(all).join(', ')}`);
  const r = await run();
  console.log(r.lines.join('\n'));
  out.push(...r.lines);
}

if (process.argv.slice(2).length === 0) {
  const path = join(ROOT, 'bench', 'RESULTS.md');
  const text = readFileSync(path, 'utf8');
  const block = `<!-- latest:start -->\n## Latest full run — \`npm run bench\`\n\n\`\`\`\n${out.join('\n')}\n\`\`\`\n<!-- latest:end -->`;
  const next = /<!-- latest:start -->[\s\S]*<!-- latest:end -->/.test(text)
    ? text.replace(/<!-- latest:start -->[\s\S]*<!-- latest:end -->/, block)
    : text.replace(/\n## /, `\n${block}\n\n## `);
  writeFileSync(path, next);
  console.log(`bench/RESULTS.md updated`);
}
