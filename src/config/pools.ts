import { isIP } from 'node:net';
import { POOL_NAME } from '../domain/send-request.js';

/**
 * outbound.pools: named pools of source addresses (docs/delivery.md, "Sending identities"), each
 * address with the name it says in EHLO. Written in the file as `[[outbound.pools]]` tables;
 * read and checked here, at load, so a mistake stops the start naming the pool and the address.
 */

export interface PoolAddress {
  /** An IPv4 or IPv6 address of this node's, bound as the source of each connection. */
  ip: string;
  /** The name said in EHLO from this address; its PTR should name it, and it resolve back. */
  ehlo: string;
  /** When the address's warm-up began ("YYYY-MM-DD"). */
  warmup_start?: string;
}

export interface Pool {
  name: string;
  addresses: PoolAddress[];
}

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

const isTable = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date);

function onlyKeys(table: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const key of Object.keys(table))
    if (!allowed.includes(key)) throw new Error(`${where}: unknown key "${key}" (expected ${allowed.join(', ')})`);
}

/** "YYYY-MM-DD", a real day. */
export function isDay(v: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) return false;
  const d = new Date(`${v}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v;
}

function readAddress(v: unknown, where: string): PoolAddress {
  if (!isTable(v)) throw new Error(`${where}: expected a table { ip = "…", ehlo = "…" }`);
  onlyKeys(v, ['ip', 'ehlo', 'warmup_start'], where);
  const { ip, ehlo, warmup_start } = v;
  if (typeof ip !== 'string' || isIP(ip.trim()) === 0)
    throw new Error(`${where}: ip ${JSON.stringify(ip ?? null)} is not an IPv4 or IPv6 address`);
  if (typeof ehlo !== 'string' || !HOSTNAME.test(ehlo.trim()))
    throw new Error(`${where}: ehlo ${JSON.stringify(ehlo ?? null)} is not a host name`);
  const out: PoolAddress = { ip: ip.trim().toLowerCase(), ehlo: ehlo.trim().toLowerCase().replace(/\.$/, '') };
  if (warmup_start !== undefined) {
    if (typeof warmup_start !== 'string' || !isDay(warmup_start))
      throw new Error(`${where}: warmup_start ${JSON.stringify(String(warmup_start))} is not a day "YYYY-MM-DD"`);
    out.warmup_start = warmup_start;
  }
  return out;
}

function readPool(v: unknown, index: number): Pool {
  const at = `pool ${index + 1}`;
  if (!isTable(v)) throw new Error(`${at}: expected a [[outbound.pools]] table`);
  onlyKeys(v, ['name', 'addresses'], at);
  const { name, addresses } = v;
  if (typeof name !== 'string' || !POOL_NAME.test(name))
    throw new Error(`${at}: name ${JSON.stringify(name ?? null)} must be 1-63 letters, digits, "_", "." or "-"`);
  const where = `pool "${name}"`;
  if (!Array.isArray(addresses) || addresses.length === 0)
    throw new Error(`${where} has no address: give addresses = [ { ip = "…", ehlo = "…" } ]`);
  const list = addresses.map((a, i) => readAddress(a, `${where}, address ${i + 1}`));
  const seen = new Set<string>();
  for (const a of list) {
    if (seen.has(a.ip)) throw new Error(`${where}: address ${a.ip} is listed twice`);
    seen.add(a.ip);
  }
  return { name, addresses: list };
}

/** The [[outbound.pools]] tables, checked: unknown keys, a pool without address, duplicate names, a malformed address. */
export function readPools(v: unknown): Pool[] {
  if (!Array.isArray(v)) throw new Error('expected [[outbound.pools]] tables');
  const pools = v.map(readPool);
  const names = new Set<string>();
  for (const p of pools) {
    if (names.has(p.name)) throw new Error(`pool "${p.name}" is defined twice`);
    names.add(p.name);
  }
  return pools;
}

/** The pool mail goes from when neither the message nor its customer names one: outbound.default_pool, else the first. Throws when the named one is not configured. */
export function defaultPool(pools: readonly Pool[], named: string): Pool | null {
  if (named === '') return pools[0] ?? null;
  const p = pools.find((x) => x.name === named);
  if (!p)
    throw new Error(
      pools.length
        ? `"${named}" is not a configured pool (${pools.map((x) => x.name).join(', ')})`
        : `"${named}" names a pool, but no [[outbound.pools]] is configured`,
    );
  return p;
}
