/**
 * Cross-process locks for the cache store: a lock is a small file created exclusively
 * (`open(…, 'wx')`) that names its holder `{pid, host, nonce, at}`. Unlike a lock that only ages
 * (proper-lockfile: stale after 30 s without a heartbeat), a lock whose holder died is taken
 * over at once: on the same host `process.kill(pid, 0)` tells whether the holder still runs.
 * A holder on another host (a cache folder on a network file system) cannot be asked: its lock
 * is stale when the holder's heartbeat (the file's mtime, refreshed every `staleMs / 3`) is older
 * than `staleMs`.
 *
 * Taking over a stale lock renames it aside and checks that what was moved is the lock that was
 * judged stale (same holder nonce); a lock created in the meantime is put back. A lock file that
 * is a folder is one left by proper-lockfile (the previous lock library, same path): it is stale
 * when its mtime is older than `staleMs`, as proper-lockfile itself judged it.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { throwIfAborted } from '../engine/errors';

/** Who holds a lock (the lock file's JSON). */
export interface LockHolder {
  pid: number;
  host: string;
  /** Unique per acquisition: tells this lock from a later one at the same path. */
  nonce: string;
  /** When it was taken [ms since the epoch]. */
  at: number;
}

/** Options of {@link acquireLock}. */
export interface LockOptions {
  /** Give up after waiting this long for a live holder [ms]. */
  timeoutMs: number;
  /** A holder that cannot be asked (other host, unreadable file) is stale after this long without a heartbeat [ms]. Default 30 000. */
  staleMs?: number;
  /**
   * A live holder on this host is still taken to be stale after this long without a heartbeat
   * [ms] (its pid reused by an unrelated process). Default 10 minutes.
   */
  liveStaleMs?: number;
  signal?: AbortSignal;
  /** Called once, when the lock is found held by a live holder and this call starts waiting. */
  onWait?: (holder: LockHolder | undefined) => void;
}

/** The lock stayed held by a live holder for the whole timeout (code ELOCKED, as proper-lockfile's). */
export class LockTimeoutError extends Error {
  readonly code = 'ELOCKED';
  constructor(
    readonly file: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(`the lock ${file} is held${holder ? ` by process ${holder.pid} on ${holder.host}` : ''}`);
    this.name = 'LockTimeoutError';
  }
}

/** A held lock. */
export interface Lock {
  readonly file: string;
  /** Removes the lock if it is still this one's (idempotent). */
  release(): void;
}

/** Nonces of the locks this process holds now (a holder with this process's pid but another nonce is dead: pid reuse). */
const heldHere = new Set<string>();

/** Whether a process with this pid runs on this host (EPERM: it runs, as another user). */
export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface Seen {
  /** The file's bytes ('' for a folder), compared before a takeover. */
  raw: string;
  holder: LockHolder | undefined;
  dir: boolean;
  ino: number;
  mtimeMs: number;
}

function inspect(file: string): Seen | undefined {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return undefined; // released meanwhile
  }
  if (st.isDirectory()) return { raw: '', holder: undefined, dir: true, ino: st.ino, mtimeMs: st.mtimeMs };
  let raw = '';
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    // unreadable (another user's): judged by its age
  }
  return { raw, holder: parseHolder(raw), dir: false, ino: st.ino, mtimeMs: st.mtimeMs };
}

function parseHolder(raw: string): LockHolder | undefined {
  try {
    const x = JSON.parse(raw) as Partial<LockHolder> | null;
    if (x && typeof x === 'object' && Number.isInteger(x.pid) && typeof x.host === 'string' && typeof x.nonce === 'string' && typeof x.at === 'number') {
      return x as LockHolder;
    }
  } catch {
    // a lock being written (created, not yet filled) or damaged: judged by its age
  }
  return undefined;
}

/** Whether a held lock may be taken over now. */
function isStale(seen: Seen, staleMs: number, liveStaleMs: number): boolean {
  const age = Date.now() - seen.mtimeMs;
  const h = seen.holder;
  if (!h || seen.dir || h.host !== os.hostname()) return age > staleMs;
  if (h.pid === process.pid) return !heldHere.has(h.nonce) || age > liveStaleMs;
  return !pidAlive(h.pid) || age > liveStaleMs;
}

/**
 * Moves a stale lock aside and deletes it; puts back a lock that was taken in the meantime.
 * @throws the fs error when the lock cannot be moved (EACCES, …).
 */
function takeOver(file: string, seen: Seen): void {
  const aside = `${file}.stale-${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    fs.renameSync(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // another process took it over first, or it was released
    throw e;
  }
  const now = inspect(aside);
  if (now && now.dir === seen.dir && now.raw === seen.raw && now.ino === seen.ino) {
    fs.rmSync(aside, { recursive: seen.dir, force: true });
    return;
  }
  // a fresh lock was created between the look and the rename: give it back
  try {
    if (now?.dir) fs.renameSync(aside, file);
    else fs.linkSync(aside, file);
  } catch {
    // taken again meanwhile: the fresh lock's holder will find it gone and not remove another's
  }
  fs.rmSync(aside, { recursive: true, force: true });
}

function tryCreate(file: string, body: string): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, 'wx', 0o600); // its holder's pid and host: no one else's business (issue 29, item 6)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    fs.writeSync(fd, body);
  } finally {
    fs.closeSync(fd);
  }
  return true;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Takes the lock `file`, waiting (20 → 200 ms apart) while a live holder keeps it and taking
 * over a stale one at once.
 * @throws LockTimeoutError after `timeoutMs`; the project's AbortError (src/engine/errors.ts) when
 *   the signal aborts, before or while waiting;
 *   the fs error when the lock cannot be created at all (EACCES, ENOENT, ENOTDIR, …).
 */
export async function acquireLock(file: string, options: LockOptions): Promise<Lock> {
  const staleMs = options.staleMs ?? 30_000;
  const liveStaleMs = options.liveStaleMs ?? 10 * 60_000;
  const me: LockHolder = { pid: process.pid, host: os.hostname(), nonce: randomUUID(), at: Date.now() };
  const body = JSON.stringify(me);
  const deadline = Date.now() + options.timeoutMs;
  let waited = false;
  for (let attempt = 0; ; attempt++) {
    throwIfAborted(options.signal);
    if (tryCreate(file, body)) break;
    const seen = inspect(file);
    if (!seen) continue;
    if (isStale(seen, staleMs, liveStaleMs)) {
      takeOver(file, seen);
      continue;
    }
    if (Date.now() >= deadline) throw new LockTimeoutError(file, seen.holder);
    if (!waited) options.onWait?.(seen.holder);
    waited = true;
    await sleep(Math.min(200, 20 * 2 ** Math.min(attempt, 4)), options.signal);
  }
  heldHere.add(me.nonce);
  // the heartbeat that tells holders on other hosts this one is alive
  const beat = setInterval(() => {
    try {
      const now = new Date();
      fs.utimesSync(file, now, now);
    } catch {
      // removed (taken over after all): nothing to refresh
    }
  }, Math.max(1000, staleMs / 3));
  beat.unref();
  let released = false;
  return {
    file,
    release() {
      if (released) return;
      released = true;
      clearInterval(beat);
      heldHere.delete(me.nonce);
      try {
        if (fs.readFileSync(file, 'utf8') === body) fs.rmSync(file, { force: true });
      } catch {
        // already gone
      }
    },
  };
}
