import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/**
 * One daemon per data directory (docs/operations.md, "One daemon per store"). The lock is a POSIX
 * record lock that SQLite takes on `posthaste.lock` and keeps for as long as the connection is
 * open (`locking_mode = EXCLUSIVE` and one write): the kernel drops it when the process ends,
 * however it ends, so a daemon killed with SIGKILL leaves nothing that blocks the next start.
 * Node has no flock(2) of its own; SQLite's locking is the one already in the process. SQLite
 * also keeps two connections of one process from sharing the lock. The CLI does not take it: it
 * opens the store beside a running daemon, as it always could.
 *
 * `posthaste.pid` holds the holder's process id, written once the lock is held, for the message a
 * second daemon prints and for the administrator; it is not the lock.
 */
export const LOCK_FILE = 'posthaste.lock';
export const PID_FILE = 'posthaste.pid';

/** Another daemon holds the data directory. */
export class DataDirLockedError extends Error {}

export interface DataDirLock {
  release(): void;
}

/**
 * How long a daemon starting waits for the lock: long enough for a `dataDirHeld` probe (one read)
 * to end, short enough that a second daemon is refused at once.
 */
const LOCK_WAIT_MS = 500;

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = new BetterSqlite3(join(dataDir, LOCK_FILE), { timeout: LOCK_WAIT_MS });
  try {
    file.pragma('locking_mode = EXCLUSIVE');
    // A write takes the exclusive lock; in this mode it is kept after the write.
    file.pragma('user_version = 1');
  } catch (e) {
    file.close();
    if ((e as { code?: unknown }).code !== 'SQLITE_BUSY') throw e;
    const pid = holder(dataDir);
    throw new DataDirLockedError(
      `server.data_dir ${dataDir} is in use by another posthaste daemon (PID ${pid ?? 'unknown'}): one daemon per SQLite store; stop that one first (docs/operations.md, "One daemon per store")`,
    );
  }
  const pidFile = join(dataDir, PID_FILE);
  writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o644 });
  return {
    release() {
      if (!file.open) return;
      rmSync(pidFile, { force: true });
      file.close();
    },
  };
}

/**
 * Whether a daemon holds the data directory now, seen from another process (the CLI): one read
 * of the lock file, which the holder's exclusive lock refuses. No lock file: no daemon has run
 * here. A file this process cannot open or read for another reason: it cannot tell, and says
 * held (the nodes are then judged by their heartbeat alone).
 */
export function dataDirHeld(dataDir: string): boolean {
  const path = join(dataDir, LOCK_FILE);
  if (!existsSync(path)) return false;
  let probe: BetterSqlite3.Database;
  try {
    probe = new BetterSqlite3(path, { readonly: true, fileMustExist: true, timeout: 0 });
  } catch {
    return true;
  }
  try {
    probe.pragma('user_version', { simple: true });
    return false;
  } catch {
    return true;
  } finally {
    probe.close();
  }
}

/** The process id in posthaste.pid, if it holds one. */
function holder(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, PID_FILE), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
