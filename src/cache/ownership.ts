/**
 * Whether a cache folder is safe to read state files from and write them to (issue 29, item 4).
 *
 * A cache folder that another local user owns, or may write to, lets that user plant a link or
 * a crafted state file where RepoSnap writes and reads (its temporary files are created new and
 * never through a link, state-file.ts, but the folder itself must be the user's). The store
 * refuses such a folder with one warning and answers uncached (store.ts `CacheStore.open`).
 *
 * The rules, on POSIX (`process.getuid` exists; on Windows folders have ACLs, not modes, and
 * every check passes):
 * - an entry folder (`<root>/<repository>`, its `prefix/` and `thread/`) must be a real folder
 *   (not a link), owned by this user, and neither group- nor other-writable;
 * - the cache root (`--cache-dir`, `REPOSNAP_CACHE_DIR` or the platform's cache folder) may be a
 *   link the user made (to another disk), and may be writable by others when it has the sticky bit
 *   (`/tmp`-like: others cannot remove or rename what this user creates there, and every entry
 *   folder is checked as above); otherwise the same rules.
 */
import fs from 'node:fs';

/** The fields of `fs.Stats` the rules read. */
export interface FolderStat {
  /** The owner's user id. */
  uid: number;
  /** File type and permission bits (`st_mode`). */
  mode: number;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** `root`: the cache root (a link and a sticky, world-writable folder are allowed); `entry`: a folder RepoSnap made in it. */
export type FolderRole = 'root' | 'entry';

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/**
 * Why a folder with status `st` (`lstat` for an entry, `stat` for the root) is unsafe for a cache
 * that user `uid` owns, or undefined when it is safe. One line, e.g. `owned by another user (uid
 * 1001)` or `writable by other users (mode 0777)`.
 */
export function folderTrouble(st: FolderStat, role: FolderRole, uid: number): string | undefined {
  if (role === 'entry' && st.isSymbolicLink()) return 'a symbolic link, not a folder RepoSnap made';
  if (!st.isDirectory()) return 'not a folder';
  if (st.uid !== uid) return `owned by another user (uid ${st.uid})`;
  const writable = st.mode & GROUP_OR_OTHER_WRITE;
  if (writable !== 0 && !(role === 'root' && (st.mode & STICKY) !== 0)) {
    return `writable by ${writable & 0o002 ? 'other users' : 'its group'} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`;
  }
  return undefined;
}

/**
 * Checks the cache root and the entry folders below it (`entries`, created by the caller): the
 * first unsafe one as `<path> is <why>`, or undefined when all are safe or the platform has no
 * user ids (Windows). A folder that is missing is not checked (the caller creates it 0700).
 */
export function unsafeCacheFolder(root: string, entries: readonly string[]): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const check = (p: string, role: FolderRole): string | undefined => {
    let st: fs.Stats;
    try {
      st = role === 'root' ? fs.statSync(p) : fs.lstatSync(p);
    } catch {
      return undefined;
    }
    const why = folderTrouble(st, role, uid);
    return why === undefined ? undefined : `${p} is ${why}`;
  };
  return check(root, 'root') ?? entries.map((e) => check(e, 'entry')).find((w) => w !== undefined);
}
