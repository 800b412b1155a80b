// `npm run bench [name…]`: runs the benchmarks, prints their figures beside same-run anchors.
import { cpus, totalmem } from 'node:os';
import { benchAccept } from './accept.js';
import { benchDeliver } from './deliver.js';
import { benchWebhooks } from './webhooks.js';
import { benchInbound } from './inbound.js';

const all: Record<string, () => Promise<{ lines: string[] }>> = { accept: benchAccept, deliver: benchDeliver, webhooks: benchWebhooks, inbound: benchInbound };
const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(all);

console.log(`posthaste benchmarks ${new Date().toISOString()} on ${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`);
for (const name of names) {
  const run = all[name];
  if (!run) throw new Error(`unknown benchmark ${name}; have ${Object.keys(all).join(', ')}`);
  const r = await run();
  console.log(r.lines.join('\n'));
}
