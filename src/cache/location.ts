/**
 * Where the CLI keeps a repository's cache: `$REPOSNAP_CACHE_DIR`, else `$XDG_CACHE_HOME/reposnap`,
 * else `~/.cache/reposnap` (`%LOCALAPPDATA%\reposnap` on Windows, `~/Library/Caches/reposnap` on
 * macOS), one subfolder per repository root (its name plus a hash of its real path).
 * The extension uses the same folders, so its windows and the CLI share one store per
 * repository (window-store.ts).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The folder that holds every repository's cache (the global size cap applies to it). */
export function defaultCacheRoot(): string {
  if (process.env.REPOSNAP_CACHE_DIR) return process.env.REPOSNAP_CACHE_DIR;
  if (process.platform === 'win32' && process.env.LOCALAPPDATA) return path.join(process.env.LOCALAPPDATA, 'reposnap');
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Caches', 'reposnap');
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'reposnap');
}

/** The cache folder of one repository under `root`. */
export function workspaceCacheDir(root: string, repo: string): string {
  let real = repo;
  try {
    real = fs.realpathSync(repo);
  } catch {
    // a missing repository still gets a stable folder name
  }
  const name = path.basename(real).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'root';
  return path.join(root, `${name}-${createHash('sha256').update(real).digest('hex').slice(0, 12)}`);
}
