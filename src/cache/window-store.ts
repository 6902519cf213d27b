/**
 * One cache store per folder, shared by every VS Code window and by the CLI (issue 14, section 6).
 *
 * Up to this version the extension kept a folder's store under its window's
 * `ExtensionContext.storageUri` (`<storageUri>/cache/<name>-<hash>`): VS Code gives each
 * workspace its own storage, so a second window on the same folder (opened through a symlink, a
 * `.code-workspace` file, another code-server URL) started with a cold cache and filled a second
 * copy. The store now lives where the CLI keeps it, {@link workspaceCacheDir} under
 * {@link defaultCacheRoot} (`~/.cache/reposnap/<name>-<hash of the real path>`): the key is the
 * folder's real path, so symlinked paths share one store, and the store's own locks (lock.ts)
 * already let several processes use it at once.
 *
 * A window's old store is adopted once, entry by entry, under the locks of both folders
 * ({@link adoptWindowStore}): entries are moved (a rename; across file systems, thread entries
 * are copied and prefix entries dropped, since the next question rebuilds a prefix but a thread's
 * transcript holds the turns its follow-ups replay), an entry already in the shared store wins,
 * and the old folder is removed. The chat's own thread list stays in the window's
 * `workspaceState` (src/chat/threads.ts); only the KV cache store moves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { acquireLock, type Lock } from './lock';
import { defaultCacheRoot, workspaceCacheDir } from './location';
import { ENTRY_ID } from './schema';
import { safeReaddir } from './store';
import { makeFolder } from '../engine/state-file';

/** How long adoption waits for a live holder of either folder's lock [ms] (as long as a store operation). */
const ADOPT_LOCK_TIMEOUT_MS = 10_000;

/**
 * The folder where versions before the shared store kept `folder`'s store for the window whose
 * `ExtensionContext.storageUri` is `storageDir` (a path on disk).
 */
export function windowStoreDir(storageDir: string, folder: string): string {
  return workspaceCacheDir(path.join(storageDir, 'cache'), folder);
}

/** What {@link adoptWindowStore} did with an old window store. */
export interface AdoptResult {
  /** Entries moved (or copied) into the shared store: prefix and thread entries. */
  moved: number;
  /** Entries left behind: one of the same id was in the shared store, or a prefix that could only be copied. */
  dropped: number;
  /** Whether the old store's counters (stats.json) became the shared store's (only when it had none). */
  countersMoved: boolean;
}

/** Options of {@link adoptWindowStore} and {@link folderStoreDir}. */
export interface AdoptOptions {
  /** Receives a warning when the old store could not be adopted (the shared store is used anyway). */
  onWarning?: (message: string) => void;
  /** Replaces `fs.renameSync` (tests: a move across file systems fails with EXDEV). */
  rename?: (from: string, to: string) => void;
}

const code = (e: unknown) => (e as NodeJS.ErrnoException).code ?? String(e);

/**
 * Moves the entries of the old window store `from` into the shared store `to`, under both
 * folders' locks (`<folder>.lock`, the lock every store writer holds), then removes `from` (and
 * its parent `cache` folder when that is left empty). A missing `from` is nothing to do.
 *
 * Per entry (`<kind>/<id>.json` with its `<id>.rsnp`, `id` checked against the store's id
 * pattern): when `to` already has that id, the shared entry wins and the old one is dropped
 * (prefix ids are hashes of their content; thread ids are random UUIDs of one window); else the
 * state file is moved before its index, so a reader never finds an index without its state.
 * Across file systems (EXDEV) thread entries and stats.json are copied; prefix entries, which
 * can be gigabytes and are rebuilt by the next question, are dropped. `stats.json` moves only
 * when `to` has none. Temporary and lock files are not moved.
 * @throws the file system's error or LockTimeoutError when a lock cannot be taken or a file
 *   cannot be moved; what was moved stays moved, and the rest is adopted by the next call.
 */
export async function adoptWindowStore(from: string, to: string, options: AdoptOptions = {}): Promise<AdoptResult> {
  const result: AdoptResult = { moved: 0, dropped: 0, countersMoved: false };
  if (path.resolve(from) === path.resolve(to) || !fs.existsSync(from)) return result;
  const rename = options.rename ?? fs.renameSync;
  const locks: Lock[] = [];
  try {
    makeFolder(path.dirname(to)); // the cache root, on a first run
    locks.push(await acquireLock(`${from}.lock`, { timeoutMs: ADOPT_LOCK_TIMEOUT_MS }));
    locks.push(await acquireLock(`${to}.lock`, { timeoutMs: ADOPT_LOCK_TIMEOUT_MS }));
    /** Moves `a` to `b`; across file systems copies it when `copy`, else reports false. */
    const move = (a: string, b: string, copy: boolean): boolean => {
      try {
        rename(a, b);
        return true;
      } catch (e) {
        if (code(e) !== 'EXDEV') throw e;
        if (!copy) return false;
        fs.copyFileSync(a, b);
        fs.unlinkSync(a);
        return true;
      }
    };
    for (const kind of ['prefix', 'thread'] as const) {
      const src = path.join(from, kind);
      const dst = path.join(to, kind);
      for (const name of safeReaddir(src)) {
        const stem = name.slice(0, -'.json'.length);
        if (!name.endsWith('.json') || !ENTRY_ID[kind].test(stem)) continue;
        makeFolder(dst);
        if (fs.existsSync(path.join(dst, name))) {
          result.dropped++;
          continue;
        }
        const state = path.join(src, `${stem}.rsnp`);
        const copy = kind === 'thread';
        if (fs.existsSync(state) && !move(state, path.join(dst, `${stem}.rsnp`), copy)) {
          result.dropped++;
          continue;
        }
        if (move(path.join(src, name), path.join(dst, name), copy)) result.moved++;
        else result.dropped++;
      }
    }
    const stats = path.join(from, 'stats.json');
    if (fs.existsSync(stats) && !fs.existsSync(path.join(to, 'stats.json'))) {
      makeFolder(to);
      result.countersMoved = move(stats, path.join(to, 'stats.json'), true);
    }
    fs.rmSync(from, { recursive: true, force: true });
  } finally {
    for (const lock of locks.reverse()) lock.release();
  }
  try {
    fs.rmdirSync(path.dirname(from)); // the window's `cache` folder, when no other folder's store is left in it
  } catch {
    // not empty (another folder of a multi-root workspace), or gone
  }
  return result;
}

/**
 * The cache store folder of `folder` (an absolute path) for a VS Code window: the folder's one
 * store under `root` (default {@link defaultCacheRoot}, the CLI's), keyed by the folder's real
 * path, so every window and the CLI share it. With `windowStorageDir` (the window's
 * `ExtensionContext.storageUri` on disk), the window's old store for the folder is adopted first
 * ({@link adoptWindowStore}); when that fails, `onWarning` says why and the shared store is
 * used all the same (the old one is tried again next time).
 */
export async function folderStoreDir(folder: string, options: AdoptOptions & { windowStorageDir?: string; root?: string } = {}): Promise<string> {
  const dir = workspaceCacheDir(options.root ?? defaultCacheRoot(), folder);
  if (options.windowStorageDir) {
    const old = windowStoreDir(options.windowStorageDir, folder);
    try {
      await adoptWindowStore(old, dir, options);
    } catch (e) {
      options.onWarning?.(`the window's old cache store ${old} could not be moved to ${dir} (${code(e)}): it is left in place and tried again next time`);
    }
  }
  return dir;
}
